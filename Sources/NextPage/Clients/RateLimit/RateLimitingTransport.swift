import Logging

/// Keeps an `http` source within its rate limits (docs/config.md), around the
/// transport that sends its requests:
///
/// - before a request, waits while the server's limit is used up
///   (`ReportedRateLimit`: no requests remaining until the reset, or a
///   refusal's `Retry-After`), when the wait is at most `maxWait` seconds;
///   a longer one throws `HTTPTransportError.rateLimited` with the time to
///   retry at, without sending;
/// - then takes a slot of the origin's `RequestSpacing`, when the source has
///   a `rateLimit`;
/// - after an answer, notes what it says of the limit, for the next request
///   of every collection that shares it, and for `status`.
///
/// Waits go through the clock (`UpstreamClock`), and end at once with
/// `HTTPTransportError.cancelled` when the task is cancelled. Whether a
/// refused request is sent again is `HTTPPageClient`'s decision.
public struct RateLimitingTransport: HTTPTransport {
    public let inner: any HTTPTransport
    let environment: HTTPSourceEnvironment
    let clock: any UpstreamClock
    /// Who the requests are from, as far as a server's limit goes (see `HTTPSourceEnvironment.reportedLimit`).
    let credentialKey: String
    /// The source's origin and its pace, when it has a `rateLimit`.
    let spacing: (origin: String, spacing: RequestSpacing)?
    /// The longest wait for a reset, in seconds (`maxRateLimitWait`).
    public let maxWait: Double
    let collection: String
    let logger: Logger?

    /// Waits in a row before a request is sent anyway (the server then says again).
    static let maxWaitsBeforeSending = 3

    public init(
        wrapping inner: any HTTPTransport, environment: HTTPSourceEnvironment, clock: any UpstreamClock, credentialKey: String,
        spacing: (origin: String, spacing: RequestSpacing)?, maxWait: Double, collection: String = "", logger: Logger? = nil
    ) {
        self.inner = inner
        self.environment = environment
        self.clock = clock
        self.credentialKey = credentialKey
        self.spacing = spacing
        self.maxWait = maxWait
        self.collection = collection
        self.logger = logger
    }

    public func perform(_ request: HTTPExchangeRequest, timeout: Double, maxBodyBytes: Int) async throws(HTTPTransportError) -> HTTPExchangeResponse {
        let origin = HTTPURL.origin(request.url) ?? request.url
        let limit = environment.reportedLimit(origin: origin, credentials: credentialKey)
        var waits = 0
        while waits < Self.maxWaitsBeforeSending, let until = limit.blockedUntil(now: clock.now()) {
            let wait = until - clock.now()
            guard wait <= maxWait else { throw .rateLimited(retryAt: until) }
            logger?.info("waiting for the rate limit to reset", metadata: [
                "collection": "\(collection)", "seconds": "\(HTTPPageClient.seconds((wait * 1000).rounded(.up) / 1000))",
            ])
            try await sleep(wait)
            waits += 1
        }
        if let spacing, spacing.origin == origin {
            let wait = spacing.spacing.reserve(now: clock.now())
            if wait > 0 { try await sleep(wait) }
        }
        let response = try await inner.perform(request, timeout: timeout, maxBodyBytes: maxBodyBytes)
        let now = clock.now()
        limit.observe(RateLimitReport.read(response, now: now), now: now)
        return response
    }

    private func sleep(_ seconds: Double) async throws(HTTPTransportError) {
        do {
            try await clock.sleep(seconds: seconds)
        } catch {
            throw .cancelled
        }
        if Task.isCancelled { throw .cancelled }
    }
}
