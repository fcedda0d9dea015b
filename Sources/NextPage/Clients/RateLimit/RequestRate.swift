/// `source.rateLimit`: `{"requestsPerSecond": R, "burst": B}`, the pace a
/// source keeps on its own (docs/config.md).
public struct RequestRate: Sendable, Hashable {
    /// Requests per second, on average (above 0).
    public var requestsPerSecond: Double
    /// Requests that may go at once after a pause (default 1).
    public var burst: Int

    public init(requestsPerSecond: Double, burst: Int = 1) {
        self.requestsPerSecond = requestsPerSecond
        self.burst = max(1, burst)
    }
}
