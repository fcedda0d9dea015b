/// The pages known to follow a page's next one, when the page says where
/// the walk ends (a `total`, or a `Link` rel="last"): their cursors can be
/// written down before those pages are fetched, so a collection with
/// `concurrency` above 1 fetches several at once (docs/config.md, fan-out).
///
/// They are a forecast, not a promise: each page still lands only when the
/// page before it has landed and led to it, with the items before it that
/// the forecast assumed (`itemsPerPage` on each page ahead).
public struct PagesAhead: Sendable, Equatable {
    /// How the cursors are written.
    enum Cursors: Sendable, Equatable {
        /// Numbers: the next cursor plus `k` steps (`page`: 1, `offset`: the page's items).
        case numbers(next: Int64, step: Int64)
        /// A URL whose one query value is a page number: `prefix`, the number, `suffix`.
        case numberedURL(prefix: String, next: Int64, suffix: String)
    }

    let cursors: Cursors
    /// How many pages follow the next one (`cursor(1)` ... `cursor(count)`).
    public let count: Int
    /// Items each of those pages is expected to hold (a full page).
    public let itemsPerPage: Int

    /// The cursor of the page `k` pages after the next one, for `k` from 1
    /// to `count`; `nil` otherwise.
    public func cursor(_ k: Int) -> Cursor? {
        guard k >= 1, k <= count else { return nil }
        switch cursors {
        case .numbers(let next, let step):
            let (offset, overflow) = Int64(k).multipliedReportingOverflow(by: step)
            let (value, overflowAgain) = next.addingReportingOverflow(offset)
            return overflow || overflowAgain ? nil : .integer(value)
        case .numberedURL(let prefix, let next, let suffix):
            let (value, overflow) = next.addingReportingOverflow(Int64(k))
            return overflow ? nil : .string(prefix + String(value) + suffix)
        }
    }

    /// Integers `next + step`, `next + 2 step`, ... up to `last` (inclusive;
    /// none when `last` is `next`).
    public static func numbers(after next: Int64, step: Int64, through last: Int64, itemsPerPage: Int) -> PagesAhead? {
        guard step > 0, itemsPerPage > 0, last >= next else { return nil }
        let (span, overflow) = last.subtractingReportingOverflow(next)
        guard !overflow else { return nil }
        return PagesAhead(cursors: .numbers(next: next, step: step), count: Int(clamping: span / step), itemsPerPage: itemsPerPage)
    }

    /// The URLs between a `next` and a `last` link that differ only in one
    /// query value, a page number (GitHub's
    /// `...?per_page=100&page=2` and `...?per_page=100&page=34`): the same
    /// URL with that number counted up (none when `last` is `next`). `nil`
    /// when the two differ otherwise.
    public static func numberedURLs(next: String, last: String, itemsPerPage: Int) -> PagesAhead? {
        guard itemsPerPage > 0 else { return nil }
        let a = Array(next.utf8), b = Array(last.utf8)
        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        var prefix = 0
        while prefix < a.count, prefix < b.count, a[prefix] == b[prefix] { prefix += 1 }
        var suffix = 0
        while suffix < a.count - prefix, suffix < b.count - prefix, a[a.count - 1 - suffix] == b[b.count - 1 - suffix] { suffix += 1 }
        // The differing part must be a whole number in each: widen it to the digits around it.
        while prefix > 0, isDigit(a[prefix - 1]) { prefix -= 1 }
        while suffix > 0, isDigit(a[a.count - suffix]) { suffix -= 1 }
        let nextDigits = a[prefix..<(a.count - suffix)], lastDigits = b[prefix..<(b.count - suffix)]
        guard prefix > 0, a[prefix - 1] == UInt8(ascii: "="),
              let question = a.firstIndex(of: UInt8(ascii: "?")), question < prefix,
              !a[..<prefix].contains(UInt8(ascii: "#")),
              let from = number(nextDigits), let to = number(lastDigits), to >= from
        else { return nil }
        return PagesAhead(
            cursors: .numberedURL(
                prefix: String(decoding: a[..<prefix], as: UTF8.self), next: from,
                suffix: String(decoding: a[(a.count - suffix)...], as: UTF8.self)),
            count: Int(clamping: to - from), itemsPerPage: itemsPerPage)
    }

    /// A decimal number written as a page number is (no sign, no leading zero).
    private static func number(_ digits: ArraySlice<UInt8>) -> Int64? {
        guard let first = digits.first, digits.count <= 18, first != UInt8(ascii: "0") || digits.count == 1,
              digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return Int64(String(decoding: digits, as: UTF8.self))
    }
}
