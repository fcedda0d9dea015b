/// What one answer says about the source's rate limit (docs/config.md).
///
/// Read from, in this order of preference:
/// - `X-RateLimit-Remaining` / `X-RateLimit-Reset` (GitHub and many others:
///   the reset in Unix seconds; a value below 10^9, which no server means as
///   a date, is taken as seconds from now, as some APIs send it, and one of
///   10^12 or more as Unix milliseconds);
/// - `RateLimit-Remaining` / `RateLimit-Reset` (the IETF draft: the reset in
///   seconds from now; a value of 10^9 or more is taken as Unix seconds);
/// - `RateLimit: "default";r=0;t=30` (the draft's combined field, `r`
///   remaining and `t` seconds to the reset) or its older form
///   `RateLimit: limit=100, remaining=0, reset=30`; with several policies,
///   the one with the fewest requests left;
/// - `Retry-After` (seconds or an HTTP date).
///
/// A reset that is not a number is ignored (it is noted in `unreadable`), so
/// the answer falls back to `Retry-After` or the normal backoff.
public struct RateLimitReport: Sendable, Equatable {
    /// Requests left in the current window, when the answer says.
    public var remaining: Int?
    /// When the window resets, in Unix seconds, when the answer says so readably.
    public var resetAt: Double?
    /// The seconds `Retry-After` asks for, when readable.
    public var retryAfter: Double?
    /// Whether the answer refuses the request for a rate limit: a 403 or 429
    /// with `Retry-After`, or with no requests remaining, or a 403 whose body
    /// says it is a rate limit (GitHub's secondary limits).
    public var isRefusal: Bool
    /// Whether the body says it is a rate limit without saying how long to
    /// wait (GitHub: "wait at least one minute").
    var saysRateLimit: Bool
    /// Names of rate-limit headers whose value could not be read.
    public var unreadable: [String]

    public init(remaining: Int? = nil, resetAt: Double? = nil, retryAfter: Double? = nil, isRefusal: Bool = false, unreadable: [String] = []) {
        self.remaining = remaining
        self.resetAt = resetAt
        self.retryAfter = retryAfter
        self.isRefusal = isRefusal
        self.saysRateLimit = false
        self.unreadable = unreadable
    }

    /// Seconds GitHub asks to wait after a secondary rate limit that names no time.
    public static let unnamedRateLimitWait: Double = 60

    /// Unix seconds below this are taken as a number of seconds from now.
    static let earliestDate: Double = 1e9

    /// Whether the answer says anything about a rate limit at all.
    public var isEmpty: Bool { remaining == nil && resetAt == nil && !isRefusal }

    /// When the request may be sent again after this answer refused it
    /// (Unix seconds): after `Retry-After`, else at the reset when no
    /// requests remain, else a minute from now when the body only says it is
    /// a rate limit; `nil` when the answer is no refusal or names no time
    /// (the normal backoff then applies).
    public func retryAt(now: Double) -> Double? {
        guard isRefusal else { return nil }
        if let retryAfter { return now + retryAfter }
        if remaining == 0, let resetAt { return resetAt }
        if saysRateLimit { return now + Self.unnamedRateLimitWait }
        return nil
    }

    /// What `response` says; `now` turns relative times into Unix seconds.
    public static func read(_ response: HTTPExchangeResponse, now: Double) -> RateLimitReport {
        read(status: response.status, headers: response.headers, body: response.body, now: now)
    }

    /// What an answer with this status, headers and body says.
    public static func read(status: Int, headers: [(name: String, value: String)], body: [UInt8] = [], now: Double) -> RateLimitReport {
        func values(_ name: String) -> [String] {
            headers.filter { $0.name.lowercased() == name }.map(\.value)
        }
        var report = RateLimitReport()
        // Each family on its own: the remaining count and its reset go together.
        let families: [(remaining: String, reset: String)] = [
            ("x-ratelimit-remaining", "x-ratelimit-reset"),
            ("ratelimit-remaining", "ratelimit-reset"),
        ]
        for family in families where report.remaining == nil {
            guard let text = values(family.remaining).first else { continue }
            guard let remaining = smallestInteger(text) else {
                report.unreadable.append(family.remaining)
                continue
            }
            report.remaining = remaining
            if let reset = values(family.reset).first {
                if let seconds = number(reset) {
                    report.resetAt = time(seconds, now: now)
                } else {
                    report.unreadable.append(family.reset)
                }
            }
        }
        if report.remaining == nil, let field = values("ratelimit").first {
            let combined = combinedField(field)
            report.remaining = combined.remaining
            if let reset = combined.reset { report.resetAt = time(reset, now: now) }
            if combined.unreadable { report.unreadable.append("ratelimit") }
        }
        if let value = values("retry-after").first {
            report.retryAfter = HTTPRetryPolicy.retryAfterSeconds(value, now: now)
            if report.retryAfter == nil { report.unreadable.append("retry-after") }
        }
        if status == 403 || status == 429 {
            if report.retryAfter != nil || report.remaining == 0 {
                report.isRefusal = true
            } else if status == 403, mentionsRateLimit(body) {
                report.isRefusal = true
                report.saysRateLimit = true
            }
        }
        return report
    }

    /// A reset as a time: Unix seconds from 10^9 on (milliseconds from
    /// 10^12, a date no server means), else seconds from now (whichever
    /// family it came in: servers mix them up).
    private static func time(_ seconds: Double, now: Double) -> Double {
        if seconds >= earliestDate * 1000 { return seconds / 1000 }
        return seconds >= earliestDate ? seconds : now + seconds
    }

    /// A decimal number of seconds (`1700000000`, `30`, `1.5`), not negative.
    static func number(_ text: String) -> Double? {
        let trimmed = text.trimmingASCIISpaces()
        guard !trimmed.isEmpty, trimmed.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: ".") }),
              trimmed.utf8.first != UInt8(ascii: "."), let value = Double(trimmed), value.isFinite else { return nil }
        return value
    }

    /// The smallest of the integers in a list (`"0"`, `"10, 5"`): some
    /// servers send one per policy.
    static func smallestInteger(_ text: String) -> Int? {
        let parts = text.split(separator: ",").map { String($0).trimmingASCIISpaces() }
        let numbers = parts.map { part -> Int? in
            guard !part.isEmpty, part.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return Int(part.prefix(18))
        }
        guard !numbers.isEmpty, numbers.allSatisfy({ $0 != nil }) else { return nil }
        return numbers.compactMap { $0 }.min()
    }

    /// `RateLimit: "default";r=0;t=30, "burst";r=5;t=1` or
    /// `RateLimit: limit=100, remaining=0, reset=30`: the fewest requests
    /// left and the reset that goes with them.
    static func combinedField(_ text: String) -> (remaining: Int?, reset: Double?, unreadable: Bool) {
        var policies: [(remaining: Int?, reset: Double?)] = []
        var unreadable = false
        for member in text.split(separator: ",") {
            var remaining: Int?
            var reset: Double?
            for parameter in member.split(separator: ";") {
                let pair = parameter.split(separator: "=", maxSplits: 1).map { String($0).trimmingASCIISpaces().lowercased() }
                guard pair.count == 2 else { continue }
                switch pair[0] {
                case "r", "remaining":
                    remaining = smallestInteger(pair[1])
                    if remaining == nil { unreadable = true }
                case "t", "reset":
                    reset = number(pair[1])
                    if reset == nil { unreadable = true }
                default:
                    break
                }
            }
            if remaining != nil || reset != nil { policies.append((remaining, reset)) }
        }
        // One policy per member (the draft's form): the one with the fewest left.
        if let tightest = policies.filter({ $0.remaining != nil }).min(by: { $0.remaining! < $1.remaining! }), tightest.reset != nil {
            return (tightest.remaining, tightest.reset, unreadable)
        }
        // The older form spreads one policy over members.
        let remaining = policies.compactMap(\.remaining).min()
        let reset = policies.compactMap(\.reset).max()
        return (remaining, reset, unreadable)
    }

    /// Whether a short body says "rate limit" (GitHub: "You have exceeded a
    /// secondary rate limit", "API rate limit exceeded").
    static func mentionsRateLimit(_ body: [UInt8]) -> Bool {
        let text = String(decoding: body.prefix(4096), as: UTF8.self).lowercased()
        return text.contains("rate limit") || text.contains("rate-limit") || text.contains("ratelimit")
    }
}
