import Jansson

/// One value of an incremental collection's pointer (`incremental.pointer`):
/// a number, an ISO 8601 timestamp, or other text, comparable with values
/// of its own kind.
///
/// Numbers compare as numbers (integers exactly). Strings that are ISO 8601
/// timestamps (`2024-05-01`, `2024-05-01T10:00:00Z`, `...T12:00:00.5+02:00`,
/// `...T10:00:00.500000Z`; `T`, `t` or a space between date and time; an
/// offset `Z`, `±HH:MM`, `±HHMM` or `±HH`, none meaning UTC) compare as the
/// instants they name, to any number of fractional digits. Other strings
/// compare byte by byte (UTF-8). Values of different kinds do not compare.
public struct IncrementalValue: Sendable, Equatable, CustomStringConvertible {
    /// What a value is, for comparing.
    public enum Kind: String, Sendable {
        case number, timestamp, text
    }

    enum Key: Sendable, Equatable {
        case integer(Int64)
        case real(Double)
        /// Seconds since 1970-01-01T00:00:00Z and the fraction's digits, without trailing zeros.
        case timestamp(seconds: Int64, fraction: [UInt8])
        case text(String)
    }

    let key: Key
    /// The value as found in the item (compact JSON).
    public let json: RawJSON

    /// A string or a number; `nil` for any other kind of JSON value.
    public init?(_ value: JSON) {
        switch value.kind {
        case .integer:
            guard let integer = value.integer else { return nil }
            key = .integer(integer)
        case .real:
            guard let real = value.number else { return nil }
            key = .real(real)
        case .string:
            guard let text = value.string else { return nil }
            key = Self.timestamp(text) ?? .text(text)
        default:
            return nil
        }
        json = RawJSON(value)
    }

    public var kind: Kind {
        switch key {
        case .integer, .real: return .number
        case .timestamp: return .timestamp
        case .text: return .text
        }
    }

    /// The value as a query parameter carries it: a string's own text (as
    /// the source wrote it, not normalised), a number's JSON text.
    public var text: String {
        (try? json.parsed())?.string ?? json.description
    }

    public var description: String { json.description }

    public static func == (lhs: IncrementalValue, rhs: IncrementalValue) -> Bool {
        lhs.compare(rhs) == 0
    }

    /// -1, 0 or 1 as `self` is before, the same as, or after `other`; `nil`
    /// when they are of different kinds.
    public func compare(_ other: IncrementalValue) -> Int? {
        switch (key, other.key) {
        case (.integer(let a), .integer(let b)): return a < b ? -1 : a > b ? 1 : 0
        case (.integer(let a), .real(let b)): return Self.order(Double(a), b)
        case (.real(let a), .integer(let b)): return Self.order(a, Double(b))
        case (.real(let a), .real(let b)): return Self.order(a, b)
        case (.timestamp(let a, let x), .timestamp(let b, let y)):
            if a != b { return a < b ? -1 : 1 }
            for index in 0..<max(x.count, y.count) {
                let p = index < x.count ? x[index] : UInt8(ascii: "0")
                let q = index < y.count ? y[index] : UInt8(ascii: "0")
                if p != q { return p < q ? -1 : 1 }
            }
            return 0
        case (.text(let a), .text(let b)):
            return a.utf8.lexicographicallyPrecedes(b.utf8) ? -1 : a.utf8.elementsEqual(b.utf8) ? 0 : 1
        default:
            return nil
        }
    }

    private static func order(_ a: Double, _ b: Double) -> Int { a < b ? -1 : a > b ? 1 : 0 }

    // MARK: ISO 8601

    /// The instant an ISO 8601 date or date-time names, or `nil` when `text` is not one.
    static func timestamp(_ text: String) -> Key? {
        let s = Array(text.utf8)
        var i = 0
        func digits(_ count: Int) -> Int64? {
            guard i + count <= s.count else { return nil }
            var value: Int64 = 0
            for byte in s[i..<(i + count)] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            i += count
            return value
        }
        func take(_ byte: Character) -> Bool {
            guard i < s.count, s[i] == byte.asciiValue! else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), take("-"), let month = digits(2), take("-"), let day = digits(2),
              (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year) else { return nil }
        var seconds = daysFromCivil(year: year, month: month, day: day) * 86_400
        var fraction: [UInt8] = []
        if i < s.count {
            guard s[i] == UInt8(ascii: "T") || s[i] == UInt8(ascii: "t") || s[i] == UInt8(ascii: " ") else { return nil }
            i += 1
            guard let hour = digits(2), take(":"), let minute = digits(2), hour < 24, minute < 60 else { return nil }
            var second: Int64 = 0
            if take(":") {
                guard let value = digits(2), value <= 60 else { return nil }
                second = value
                if i < s.count, s[i] == UInt8(ascii: ".") || s[i] == UInt8(ascii: ",") {
                    i += 1
                    let start = i
                    while i < s.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(s[i]) { i += 1 }
                    guard i > start else { return nil }
                    fraction = Array(s[start..<i])
                    while fraction.last == UInt8(ascii: "0") { fraction.removeLast() }
                }
            }
            seconds += hour * 3600 + minute * 60 + second
            if i < s.count {
                if s[i] == UInt8(ascii: "Z") || s[i] == UInt8(ascii: "z") {
                    i += 1
                } else if s[i] == UInt8(ascii: "+") || s[i] == UInt8(ascii: "-") {
                    let sign: Int64 = s[i] == UInt8(ascii: "+") ? 1 : -1
                    i += 1
                    guard let hours = digits(2), hours < 24 else { return nil }
                    var minutes: Int64 = 0
                    if i < s.count {
                        _ = take(":")
                        guard let value = digits(2), value < 60 else { return nil }
                        minutes = value
                    }
                    // Local time = UTC + offset.
                    seconds -= sign * (hours * 3600 + minutes * 60)
                } else {
                    return nil
                }
            }
        }
        guard i == s.count else { return nil }
        return .timestamp(seconds: seconds, fraction: fraction)
    }

    private static func isLeap(_ year: Int64) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days from 1970-01-01 to the given date of the proleptic Gregorian calendar.
    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
