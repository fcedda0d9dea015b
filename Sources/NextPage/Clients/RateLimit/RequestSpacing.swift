import NIOConcurrencyHelpers

/// Spaces the requests to one origin as a token bucket would: `burst`
/// requests at once, then one every `1 / requestsPerSecond` seconds
/// (computed as the generic cell rate algorithm: one time kept, no timer).
///
/// Every collection that reaches the origin with a `rateLimit` shares one
/// (`HTTPSourceEnvironment`); when they ask for different paces, the
/// slowest rate and the smallest burst are kept.
public final class RequestSpacing: Sendable {
    private struct State {
        var rate: RequestRate
        /// When the bucket would be full again (the theoretical arrival time).
        var full: Double = -.infinity
    }

    private let state: NIOLockedValueBox<State>

    public init(_ rate: RequestRate) {
        state = NIOLockedValueBox(State(rate: rate))
    }

    /// The pace kept now.
    public var rate: RequestRate { state.withLockedValue { $0.rate } }

    /// Keeps to `rate` too, where it is stricter.
    func tighten(to rate: RequestRate) {
        state.withLockedValue { state in
            state.rate = RequestRate(
                requestsPerSecond: min(state.rate.requestsPerSecond, rate.requestsPerSecond), burst: min(state.rate.burst, rate.burst))
        }
    }

    /// Takes the next slot: the seconds to wait from `now` before sending
    /// (0: at once). Each call takes its own slot, so concurrent callers are
    /// spaced one after another.
    public func reserve(now: Double) -> Double {
        state.withLockedValue { state in
            let interval = 1 / state.rate.requestsPerSecond
            let tolerance = Double(state.rate.burst - 1) * interval
            let start = max(state.full, now)
            let allowedAt = max(now, start - tolerance)
            state.full = start + interval
            return allowedAt - now
        }
    }
}
