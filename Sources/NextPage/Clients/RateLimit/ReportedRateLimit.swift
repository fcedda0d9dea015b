import NIOConcurrencyHelpers

/// What the server said about its rate limit for one origin and one set of
/// credentials, shared by every collection that uses both
/// (`HTTPSourceEnvironment`): when one collection's answer says the limit is
/// used up, the others wait too.
///
/// The next request waits until `blockedUntil`: the reset, after an answer
/// (even a successful one) that says no requests remain; the time a
/// refusal (403 or 429 for a rate limit) names. An answer with requests
/// remaining lifts the wait.
public final class ReportedRateLimit: Sendable {
    private struct State {
        var status: RateLimitStatus?
        var blockedUntil: Double?
    }

    private let state = NIOLockedValueBox(State())

    public init() {}

    /// The last figures the server gave, if it ever gave any.
    public var status: RateLimitStatus? { state.withLockedValue { $0.status } }

    /// Takes in what one answer says.
    public func observe(_ report: RateLimitReport, now: Double) {
        guard !report.isEmpty else { return }
        state.withLockedValue { state in
            if let remaining = report.remaining {
                state.status = RateLimitStatus(remaining: remaining, resetAt: report.resetAt)
            }
            if report.isRefusal {
                let until = report.retryAt(now: now)
                if report.remaining == nil { state.status = RateLimitStatus(remaining: 0, resetAt: until ?? report.resetAt) }
                state.blockedUntil = until
            } else if report.remaining == 0, let resetAt = report.resetAt {
                state.blockedUntil = resetAt
            } else if let remaining = report.remaining, remaining > 0 {
                state.blockedUntil = nil
            }
        }
    }

    /// Until when requests must wait (Unix seconds), or `nil` when they may
    /// go now.
    public func blockedUntil(now: Double) -> Double? {
        state.withLockedValue { state in
            guard let until = state.blockedUntil else { return nil }
            if until <= now {
                state.blockedUntil = nil
                return nil
            }
            return until
        }
    }
}
