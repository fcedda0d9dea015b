/// The time as http sources see it: when tokens expire and rate limits
/// reset (both in Unix seconds, as servers state them), and how they wait
/// (before a retry, until a reset, for a request slot).
///
/// Tests inject a clock of their own, whose `sleep` moves its time on at
/// once and notes the wait: nothing in a test really waits or reads the time.
public protocol UpstreamClock: Sendable {
    /// The current time in Unix seconds.
    func now() -> Double

    /// Suspends for `seconds` (at once when 0 or less).
    ///
    /// Throws `CancellationError` as soon as the surrounding task is cancelled
    /// (`reset`, `load`, `$/cancelRequest`), also while waiting.
    func sleep(seconds: Double) async throws
}

/// The system's clock: `CLOCK_REALTIME` for the time, `Task.sleep` for waits.
public struct SystemUpstreamClock: UpstreamClock {
    public init() {}

    public func now() -> Double { HTTPRetryPolicy.now() }

    public func sleep(seconds: Double) async throws {
        if Task.isCancelled { throw CancellationError() }
        guard seconds > 0 else { return }
        try await Task.sleep(nanoseconds: UInt64(min(seconds, 86_400 * 366) * 1e9))
    }
}

/// The system's time, and waits that end at once: replayed sources
/// (`--replay-upstream`), whose waiting happened when they were recorded.
/// Every decision (wait or fail, `retryAt`) is the one a live source makes.
public struct NonWaitingUpstreamClock: UpstreamClock {
    public init() {}

    public func now() -> Double { HTTPRetryPolicy.now() }

    public func sleep(seconds: Double) async throws {
        if Task.isCancelled { throw CancellationError() }
    }
}
