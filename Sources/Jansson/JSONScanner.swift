#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Finds an array in a JSON text by scanning its bytes, and compacts it,
/// without building a tree.
///
/// The scanner does not validate: it only finds where things are, the way a
/// JSON parser would if the text is valid. Callers validate with jansson
/// what the scanner found (see `UpstreamPage`); whenever the scanner cannot
/// vouch for its result (an escape it cannot read, a value it does not
/// expect, whitespace that would glue two tokens together once removed) it
/// returns `nil` and the caller parses the whole text with jansson instead.
///
/// Objects follow jansson's rule for duplicate keys: the last one wins.
public enum JSONScanner {
    /// Whether `byte` is JSON whitespace (RFC 8259: space, tab, line feed,
    /// carriage return).
    @inlinable
    public static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// An array found in a text, without whitespace outside strings.
    public struct CompactArray: Sendable {
        /// The array: `[a,b,c]`.
        public var bytes: [UInt8]
        /// Where each element starts in `bytes`.
        public var starts: [UInt32]
        /// How many object members (`"key":value`) are written before each
        /// element, then in the whole array (`starts.count + 1` entries).
        /// A parser that keeps one member per key, as jansson does, holds
        /// fewer exactly when an object repeats a key.
        public var membersBefore: [UInt32]
        /// The bytes the array occupied in the scanned text.
        public var range: Range<Int>
        /// Nesting depth of the array within the text (1 for the root), plus
        /// the deepest nesting inside it: what a parser of the whole text reaches.
        public var depth: Int
    }

    /// Finds the array at the JSON Pointer `tokens` in `text` and compacts it.
    ///
    /// Returns `nil` when nothing is found there, when the value there is
    /// not an array, or when the scanner cannot vouch for what it found.
    public static func compactArray(at tokens: [String], in text: UnsafeBufferPointer<UInt8>) -> CompactArray? {
        guard let base = text.baseAddress, !text.isEmpty else { return nil }
        var scanner = Scanner(base: base, end: text.count)
        let keys = tokens.map { Array($0.utf8) }
        guard let outcome = scanner.descend(keys[...], from: 0, depth: 0), let found = outcome.found else { return nil }
        return found
    }

    /// The bytes of the value at the JSON Pointer `tokens` in `text`, as
    /// they are written there (whitespace inside the value kept).
    ///
    /// Returns `nil` when nothing is found there or when the scanner cannot
    /// vouch for the text; a later duplicate key wins, as in jansson.
    public static func valueRange(at tokens: [String], in text: UnsafeBufferPointer<UInt8>) -> Range<Int>? {
        guard let base = text.baseAddress, !text.isEmpty else { return nil }
        var scanner = Scanner(base: base, end: text.count, locating: true)
        let keys = tokens.map { Array($0.utf8) }
        return scanner.descend(keys[...], from: 0, depth: 0)?.located
    }

    /// What is at a JSON Pointer in a text, as `lookup(at:in:)` finds it.
    public enum Lookup: Sendable, Equatable {
        /// The bytes of the value, as they are written in the text.
        case value(Range<Int>)
        /// Nothing is there: no such member or element, or a scalar on the way.
        case absent
        /// The scanner cannot vouch for the text: ask jansson.
        case unknown
    }

    /// Where the value at the JSON Pointer `tokens` is in `text`, telling a
    /// value that is absent from a text the scanner cannot vouch for (which
    /// `valueRange(at:in:)` does not). A later duplicate key wins, as in jansson.
    public static func lookup(at tokens: [String], in text: UnsafeBufferPointer<UInt8>) -> Lookup {
        guard let base = text.baseAddress, !text.isEmpty else { return .unknown }
        var scanner = Scanner(base: base, end: text.count, locating: true)
        let keys = tokens.map { Array($0.utf8) }
        guard let outcome = scanner.descend(keys[...], from: 0, depth: 0) else { return .unknown }
        return outcome.located.map(Lookup.value) ?? .absent
    }

    /// Compacts one JSON value (removes whitespace outside strings).
    ///
    /// Returns `nil` when the bytes are not one value the scanner can
    /// vouch for; validate the result with jansson.
    public static func compact(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard let base = text.baseAddress, !text.isEmpty else { return nil }
        let scanner = Scanner(base: base, end: text.count)
        let start = scanner.skipWhitespace(0)
        guard start < text.count else { return nil }
        var out = [UInt8]()
        guard let end = scanner.compactValue(from: start, into: &out, elements: nil, depth: nil) else { return nil }
        guard scanner.skipWhitespace(end) == text.count else { return nil }
        return out
    }
}

private struct Scanner {
    let base: UnsafePointer<UInt8>
    let end: Int
    /// Whether the target's bytes are located (`Outcome.located`) rather
    /// than compacted as an array (`Outcome.found`).
    var locating = false

    struct Outcome {
        var found: JSONScanner.CompactArray?
        /// Where the target is in the text, when locating.
        var located: Range<Int>?
        /// Index just past the value that was descended into.
        var end: Int
    }

    // MARK: Navigation

    /// Finds the target below the value starting at (or after whitespace from) `start`.
    mutating func descend(_ tokens: ArraySlice<[UInt8]>, from start: Int, depth: Int) -> Outcome? {
        let i = skipWhitespace(start)
        guard i < end else { return nil }
        guard let token = tokens.first else {
            guard !locating, base[i] == Byte.openBracket else {
                guard let valueEnd = skipValue(from: i) else { return nil }
                return Outcome(found: nil, located: locating ? i..<valueEnd : nil, end: valueEnd)
            }
            var bytes = [UInt8]()
            var elements = Elements()
            var maxDepth = 0
            guard let arrayEnd = compactValue(from: i, into: &bytes, elements: &elements, depth: &maxDepth) else { return nil }
            let found = JSONScanner.CompactArray(
                bytes: bytes, starts: elements.starts, membersBefore: elements.membersBefore, range: i..<arrayEnd, depth: depth + maxDepth)
            return Outcome(found: found, end: arrayEnd)
        }
        let rest = tokens.dropFirst()
        switch base[i] {
        case Byte.openBrace:
            var j = skipWhitespace(i + 1)
            guard j < end else { return nil }
            var found: JSONScanner.CompactArray?
            var located: Range<Int>?
            if base[j] == Byte.closeBrace { return Outcome(found: nil, end: j + 1) }
            while true {
                guard j < end, base[j] == Byte.quote, let key = scanString(from: j) else { return nil }
                guard let matches = keyEquals(from: j + 1, to: key.end - 1, escaped: key.escaped, token) else { return nil }
                j = skipWhitespace(key.end)
                guard j < end, base[j] == Byte.colon else { return nil }
                j = skipWhitespace(j + 1)
                guard j < end else { return nil }
                if matches {
                    // A later duplicate key replaces this value, as in jansson.
                    guard let outcome = descend(rest, from: j, depth: depth + 1) else { return nil }
                    found = outcome.found
                    located = outcome.located
                    j = outcome.end
                } else {
                    guard let valueEnd = skipValue(from: j) else { return nil }
                    j = valueEnd
                }
                guard let next = afterMember(j, closing: Byte.closeBrace) else { return nil }
                if next.closed { return Outcome(found: found, located: located, end: next.index) }
                j = next.index
            }
        case Byte.openBracket:
            guard let index = JSONPointer.arrayIndex(token) else {
                guard let valueEnd = skipValue(from: i) else { return nil }
                return Outcome(found: nil, end: valueEnd)
            }
            var j = skipWhitespace(i + 1)
            guard j < end else { return nil }
            if base[j] == Byte.closeBracket { return Outcome(found: nil, end: j + 1) }
            var found: JSONScanner.CompactArray?
            var located: Range<Int>?
            var position = 0
            while true {
                if position == index {
                    guard let outcome = descend(rest, from: j, depth: depth + 1) else { return nil }
                    found = outcome.found
                    located = outcome.located
                    j = outcome.end
                } else {
                    guard let valueEnd = skipValue(from: j) else { return nil }
                    j = valueEnd
                }
                position += 1
                guard let next = afterMember(j, closing: Byte.closeBracket) else { return nil }
                if next.closed { return Outcome(found: found, located: located, end: next.index) }
                j = next.index
            }
        default:
            guard let valueEnd = skipValue(from: i) else { return nil }
            return Outcome(found: nil, end: valueEnd)
        }
    }

    // MARK: Lexing

    /// After a member of an object or array ending at `start`: the start
    /// of the next member past a comma, or the index past `closing`
    /// (`closed`); nil when neither follows.
    func afterMember(_ start: Int, closing: UInt8) -> (index: Int, closed: Bool)? {
        let j = skipWhitespace(start)
        guard j < end else { return nil }
        if base[j] == Byte.comma { return (skipWhitespace(j + 1), false) }
        guard base[j] == closing else { return nil }
        return (j + 1, true)
    }

    @inline(__always)
    func skipWhitespace(_ start: Int) -> Int {
        var i = start
        while i < end, Byte.isWhitespace(base[i]) { i &+= 1 }
        return i
    }

    /// The string starting at the quote at `start`: the index after its
    /// closing quote, and whether it holds a backslash.
    ///
    /// With `out`, the string, quotes included, is also copied there:
    /// `text[start + k]` goes to `out[k]`. Blocks of 16 (or 8) bytes are
    /// copied whole, even past the closing quote (what follows the string is
    /// written over them), so `out` must have room for `end - start` bytes:
    /// what is left of the text.
    @inline(__always)
    func scanString(from start: Int, copyingTo out: UnsafeMutablePointer<UInt8>? = nil) -> (end: Int, escaped: Bool)? {
        let to = out.map { UnsafeMutableRawPointer($0 - start) }
        to?.storeBytes(of: Byte.quote, toByteOffset: start, as: UInt8.self)
        var i = start &+ 1
        var escaped = false
        let raw = UnsafeRawPointer(base)
        while true {
            if i &+ 16 <= end {
                // Sixteen bytes at a time, straight to the first quote or backslash.
                let block = raw.loadUnaligned(fromByteOffset: i, as: SIMD16<UInt8>.self)
                to?.storeBytes(of: block, toByteOffset: i, as: SIMD16<UInt8>.self)
                // 0xFF at each quote or backslash; read as two little-endian
                // words, the first byte of the block is the lowest.
                let quotes = SIMD16<UInt8>(repeating: 0x22)
                let backslashes = SIMD16<UInt8>(repeating: 0x5C)
                let marked = SIMD16<UInt8>(repeating: 0).replacing(with: 0xFF, where: (block .== quotes) .| (block .== backslashes))
                let words = unsafeBitCast(marked, to: SIMD2<UInt64>.self)
                let low = UInt64(littleEndian: words[0])
                let high = UInt64(littleEndian: words[1])
                if low != 0 {
                    i &+= low.trailingZeroBitCount &>> 3
                } else if high != 0 {
                    i &+= 8 &+ (high.trailingZeroBitCount &>> 3)
                } else {
                    i &+= 16
                    continue
                }
            } else if i &+ 8 <= end {
                // Near the end of the text, eight bytes at a time.
                let word = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                to?.storeBytes(of: word, toByteOffset: i, as: UInt64.self)
                let found = Self.quotesAndBackslashes(UInt64(littleEndian: word))
                if found == 0 {
                    i &+= 8
                    continue
                }
                i &+= found.trailingZeroBitCount &>> 3
            } else {
                guard i < end else { return nil }
                let byte = base[i]
                to?.storeBytes(of: byte, toByteOffset: i, as: UInt8.self)
                if byte != Byte.quote && byte != Byte.backslash {
                    i &+= 1
                    continue
                }
            }
            // `base[i]`, a quote or a backslash, has been copied.
            if base[i] == Byte.quote { return (i &+ 1, escaped) }
            guard i &+ 1 < end else { return nil }
            to?.storeBytes(of: base[i &+ 1], toByteOffset: i &+ 1, as: UInt8.self)
            escaped = true
            i &+= 2
        }
    }

    /// The high bit set in each byte of `word` (eight bytes of text read as
    /// a little-endian number: the first byte is the lowest) that is `"` or
    /// `\`. The lowest mark is exact; marks above it may be wrong (a borrow
    /// from a matching byte runs upwards), so only the lowest is used.
    @inline(__always)
    static func quotesAndBackslashes(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let quotes = word ^ 0x2222_2222_2222_2222
        let backslashes = word ^ 0x5C5C_5C5C_5C5C_5C5C
        return (((quotes &- ones) & ~quotes) | ((backslashes &- ones) & ~backslashes)) & highs
    }

    /// The index just past the value starting at `start`.
    func skipValue(from start: Int) -> Int? {
        guard start < end else { return nil }
        switch base[start] {
        case Byte.quote:
            return scanString(from: start)?.end
        case Byte.openBrace, Byte.openBracket:
            var depth = 0
            var i = start
            while i < end {
                let byte = base[i]
                switch byte {
                case Byte.quote:
                    guard let string = scanString(from: i) else { return nil }
                    i = string.end
                    continue
                case Byte.openBrace, Byte.openBracket:
                    depth += 1
                case Byte.closeBrace, Byte.closeBracket:
                    depth -= 1
                    if depth == 0 { return i + 1 }
                default:
                    break
                }
                i += 1
            }
            return nil
        default:
            var i = start
            while i < end, Byte.isScalar(base[i]) { i += 1 }
            return i > start ? i : nil
        }
    }

    /// Where the elements of a compacted array start, and how many object
    /// members come before each (see `JSONScanner.CompactArray`).
    struct Elements {
        var starts: [UInt32] = []
        var membersBefore: [UInt32] = []
        var members: UInt32 = 0

        mutating func reserve(_ count: Int) {
            starts.reserveCapacity(count)
            membersBefore.reserveCapacity(count + 1)
        }

        mutating func begin(at offset: Int) {
            starts.append(UInt32(offset))
            membersBefore.append(members)
        }
    }

    /// Copies the value at `start` into `out` without whitespace outside
    /// strings; returns the index just past it. When `elements` is given the
    /// value must be an array, and where each of its elements starts in
    /// `out` is recorded, with the object members before it. `depth`
    /// receives the deepest nesting reached.
    func compactValue(from start: Int, into out: inout [UInt8], elements: UnsafeMutablePointer<Elements>?, depth: UnsafeMutablePointer<Int>?) -> Int? {
        var result: Int?
        let capacity = end - start
        var maxDepth = 0
        var found = Elements()
        let wantsStarts = elements != nil
        if wantsStarts {
            guard base[start] == Byte.openBracket else { return nil }
            // A rough guess; the arrays grow if there are more.
            found.reserve(min(capacity / 16 + 1, 1 << 20))
        }
        guard capacity < Int(UInt32.max) else { return nil }
        out = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
            let o = buffer.baseAddress!
            var i = start
            var n = 0
            var level = 0
            var last: UInt8 = 0
            scan: while i < end {
                let byte = base[i]
                switch byte {
                case Byte.quote:
                    // Compacting never writes ahead of reading (`n <= i - start`).
                    guard let stringEnd = scanString(from: i, copyingTo: o + n)?.end else { break scan }
                    n &+= stringEnd &- i
                    i = stringEnd
                    last = Byte.quote
                    if level == 0 { result = i; break scan }
                    continue
                case Byte.space, Byte.tab, Byte.newline, Byte.carriageReturn:
                    var k = i + 1
                    while k < end, Byte.isWhitespace(base[k]) { k += 1 }
                    // Removing it would glue two tokens (`1 2` -> `12`): not ours to judge.
                    if k < end, Byte.isScalar(last), Byte.isScalar(base[k]) { break scan }
                    if level == 0 { result = i; break scan }
                    i = k
                    continue
                case Byte.openBracket, Byte.openBrace:
                    o[n] = byte
                    n += 1
                    level += 1
                    if level > maxDepth { maxDepth = level }
                    if wantsStarts && level == 1 {
                        // The first element starts after the bracket, unless the array is empty.
                        let k = skipWhitespace(i + 1)
                        if k < end, base[k] != Byte.closeBracket { found.begin(at: n) }
                    }
                case Byte.closeBracket, Byte.closeBrace:
                    o[n] = byte
                    n += 1
                    level -= 1
                    if level <= 0 {
                        // The value must close as it opened: `[` with `]`, `{` with `}`.
                        // (Inside, a checker parses the value and sees any mismatch.)
                        if level == 0 && byte == (base[start] == Byte.openBracket ? Byte.closeBracket : Byte.closeBrace) {
                            result = i + 1
                        }
                        break scan
                    }
                case Byte.comma:
                    o[n] = byte
                    n &+= 1
                    if level == 0 { break scan }
                    if wantsStarts && level == 1 { found.begin(at: n) }
                    // Whitespace after a comma or colon glues nothing: skipped here.
                    i = skipWhitespace(i &+ 1)
                    last = byte
                    continue
                case Byte.colon:
                    guard level > 0 else { break scan }
                    found.members &+= 1
                    o[n] = byte
                    n &+= 1
                    i = skipWhitespace(i &+ 1)
                    last = byte
                    continue
                default:
                    // Outside strings only numbers and literals are left. Any
                    // other byte is not ours to vouch for: jansson skips a NUL
                    // right after a number, so `[3\0]` would pass its check and
                    // the NUL would be forwarded.
                    guard Byte.isScalar(byte) else { break scan }
                    // The whole number or literal at once.
                    var k = i + 1
                    while k < end && Byte.isScalar(base[k]) { k += 1 }
                    (o + n).update(from: base + i, count: k - i)
                    n += k - i
                    last = base[k - 1]
                    i = k
                    if level == 0 { result = k; break scan }
                    continue
                }
                last = byte
                i += 1
            }
            count = n
        }
        guard let result else { return nil }
        found.membersBefore.append(found.members)
        elements?.pointee = found
        depth?.pointee = maxDepth
        return result
    }

    // MARK: Keys

    /// Whether the object key in `base[from..<to]` (between its quotes)
    /// equals `token`; `nil` when it holds an escape that cannot be read.
    func keyEquals(from: Int, to: Int, escaped: Bool, _ token: [UInt8]) -> Bool? {
        if !escaped {
            guard to - from == token.count else { return false }
            return token.withUnsafeBufferPointer { t in
                guard let tokenBase = t.baseAddress else { return true }
                return memcmp(base + from, tokenBase, token.count) == 0
            }
        }
        guard let key = Self.unescape(UnsafeBufferPointer(start: base + from, count: to - from)) else { return nil }
        return key == token
    }

    /// The bytes a JSON string's contents stand for; `nil` for a bad escape.
    static func unescape(_ raw: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var i = 0
        func hex4(_ at: Int) -> UInt32? {
            guard at + 4 <= raw.count else { return nil }
            var value: UInt32 = 0
            for k in at..<(at + 4) {
                let byte = raw[k]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                value = value << 4 | UInt32(digit)
            }
            return value
        }
        while i < raw.count {
            let byte = raw[i]
            guard byte == Byte.backslash else {
                out.append(byte)
                i += 1
                continue
            }
            guard i + 1 < raw.count else { return nil }
            let escape = raw[i + 1]
            i += 2
            switch escape {
            case UInt8(ascii: "\""): out.append(Byte.quote)
            case UInt8(ascii: "\\"): out.append(Byte.backslash)
            case UInt8(ascii: "/"): out.append(UInt8(ascii: "/"))
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                guard var scalar = hex4(i) else { return nil }
                i += 4
                if (0xD800..<0xDC00).contains(scalar) {
                    guard i + 6 <= raw.count, raw[i] == Byte.backslash, raw[i + 1] == UInt8(ascii: "u"),
                          let low = hex4(i + 2), (0xDC00..<0xE000).contains(low) else { return nil }
                    i += 6
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00..<0xE000).contains(scalar) {
                    return nil
                }
                guard scalar != 0, let unicode = Unicode.Scalar(scalar) else { return nil }
                out.append(contentsOf: Array(String(Character(unicode)).utf8))
            default:
                return nil
            }
        }
        return out
    }
}

/// The bytes the scanner cares about.
enum Byte {
    static let quote = UInt8(ascii: "\"")
    static let backslash = UInt8(ascii: "\\")
    static let openBrace = UInt8(ascii: "{")
    static let closeBrace = UInt8(ascii: "}")
    static let openBracket = UInt8(ascii: "[")
    static let closeBracket = UInt8(ascii: "]")
    static let comma = UInt8(ascii: ",")
    static let colon = UInt8(ascii: ":")
    static let space = UInt8(ascii: " ")
    static let tab = UInt8(ascii: "\t")
    static let newline = UInt8(ascii: "\n")
    static let carriageReturn = UInt8(ascii: "\r")

    @inline(__always)
    static func isWhitespace(_ byte: UInt8) -> Bool { JSONScanner.isWhitespace(byte) }

    /// A byte that can be part of a number or a literal (`true`, `false`,
    /// `null`): `0-9 a-z A-Z . + -`.
    @inline(__always)
    static func isScalar(_ byte: UInt8) -> Bool {
        // One bit per byte value below 128, in two words (a table lookup
        // without branches or bounds checks).
        let low: UInt64 = 1 << 0x2B | 1 << 0x2D | 1 << 0x2E | 0x3FF << 0x30
        let high: UInt64 = 0x3FF_FFFF << 0x01 | 0x3FF_FFFF << 0x21
        let word = byte < 64 ? low : (byte < 128 ? high : 0)
        return (word >> UInt64(byte & 63)) & 1 != 0
    }
}
