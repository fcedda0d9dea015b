#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How long the `http` source waits before trying a failed request again:
/// exponential backoff with jitter, or what the server's `Retry-After` asks
/// for when that is longer.
public struct HTTPRetryPolicy: Sendable, Equatable {
    /// Seconds before the first retry, before jitter (default 0.2).
    public var baseDelay: Double
    /// Longest backoff, in seconds (default 10).
    public var maxDelay: Double
    /// Longest `Retry-After` honoured, in seconds (default 60); a server that
    /// asks for more gets no retry and the load fails at once (retryable).
    public var maxRetryAfter: Double
    /// Whether `Retry-After` is honoured (default true).
    public var honoursRetryAfter: Bool
    /// Times a page is asked for again after refusals for a rate limit
    /// (default 3), apart from the source's `retries`.
    public var rateLimitRetries: Int

    public init(
        baseDelay: Double = 0.2, maxDelay: Double = 10, maxRetryAfter: Double = 60, honoursRetryAfter: Bool = true, rateLimitRetries: Int = 3
    ) {
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
        self.honoursRetryAfter = honoursRetryAfter
        self.rateLimitRetries = rateLimitRetries
    }

    /// The policy of live sources.
    public static let standard = HTTPRetryPolicy()
    /// No waiting at all (replayed sources: the recording already happened).
    public static let immediate = HTTPRetryPolicy(baseDelay: 0, maxDelay: 0, maxRetryAfter: .infinity, honoursRetryAfter: false)

    /// Seconds to wait before retry number `retry` (1 for the first retry):
    /// `min(maxDelay, baseDelay · 2^(retry-1))`, of which the second half is
    /// random (equal jitter); at least `retryAfter` when that is given.
    public func delay(beforeRetry retry: Int, retryAfter: Double?) -> Double {
        let exponential = min(maxDelay, baseDelay * Double(1 << min(max(retry - 1, 0), 30)))
        let half = exponential / 2
        let backoff = half + (half > 0 ? Double.random(in: 0...half) : 0)
        guard honoursRetryAfter, let retryAfter else { return backoff }
        return max(backoff, retryAfter)
    }

    /// Whether a `Retry-After` of this many seconds is too long to wait for.
    public func refuses(retryAfter: Double) -> Bool {
        honoursRetryAfter && retryAfter > maxRetryAfter
    }

    // MARK: Retry-After

    /// The seconds a `Retry-After` value asks for, from now (Unix seconds):
    /// delta-seconds, or an HTTP-date (IMF-fixdate, RFC 850 or asctime form).
    /// A date in the past is 0; an unreadable value is `nil`.
    public static func retryAfterSeconds(_ value: String, now: Double) -> Double? {
        let trimmed = value.trimmingASCIISpaces()
        if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            return Double(trimmed)
        }
        guard let date = httpDate(trimmed) else { return nil }
        return max(0, date - now)
    }

    /// The current time in Unix seconds.
    public static func now() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// Parses an HTTP-date (RFC 9110 §5.6.7) into Unix seconds.
    static func httpDate(_ text: String) -> Double? {
        // Split on spaces, commas and dashes; the three forms then differ by field order.
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "-" }).map(String.init)
        var day: Int?, month: Int?, year: Int?, clock: String?
        func monthIndex(_ name: String) -> Int? { months.firstIndex(of: name.lowercased()).map { $0 + 1 } }
        if fields.count == 6, fields[5] == "GMT" {
            // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT; RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
            day = Int(fields[1]); month = monthIndex(fields[2]); year = Int(fields[3]); clock = fields[4]
            if let short = year, fields[3].count == 2 { year = short < 50 ? 2000 + short : 1900 + short }
        } else if fields.count == 5 {
            // asctime: Sun Nov  6 08:49:37 1994
            month = monthIndex(fields[1]); day = Int(fields[2]); clock = fields[3]; year = Int(fields[4])
        }
        guard let day, let month, let year, let clock, (1...31).contains(day) else { return nil }
        let parts = clock.split(separator: ":").compactMap { Int($0) }
        guard parts.count == 3, (0...23).contains(parts[0]), (0...59).contains(parts[1]), (0...60).contains(parts[2]) else { return nil }
        var time = tm()
        time.tm_year = Int32(year - 1900)
        time.tm_mon = Int32(month - 1)
        time.tm_mday = Int32(day)
        time.tm_hour = Int32(parts[0])
        time.tm_min = Int32(parts[1])
        time.tm_sec = Int32(parts[2])
        return Double(timegm(&time))
    }
}

extension String {
    /// The string without leading and trailing spaces and tabs.
    func trimmingASCIISpaces() -> String {
        var view = Substring(self)
        while let first = view.first, first == " " || first == "\t" { view = view.dropFirst() }
        while let last = view.last, last == " " || last == "\t" { view = view.dropLast() }
        return String(view)
    }
}
