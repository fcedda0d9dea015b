/// What a collection's `status` shows of its source's rate limit:
/// `rateLimit: {"remaining", "resetAt"}`.
public struct RateLimitStatus: Sendable, Equatable {
    /// Requests left in the window, as the server last said.
    public var remaining: Int?
    /// When the window resets, in Unix seconds, as the server last said.
    public var resetAt: Double?

    public init(remaining: Int?, resetAt: Double?) {
        self.remaining = remaining
        self.resetAt = resetAt
    }
}
