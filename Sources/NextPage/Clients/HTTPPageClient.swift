import Logging
import NIOConcurrencyHelpers
import NIOHTTP1

/// The `http` source (docs/config.md): fetches each page with one HTTP
/// request, built from the source and the paging settings (see
/// `exchangeRequest(for:)`), over a chain of transports: a
/// `RateLimitingTransport` (the server's limits, the source's `rateLimit`),
/// an `AuthorizingTransport` when the source has `auth`, then `transport`
/// (the network by default; a recording or a replay).
///
/// Connection errors, timeouts, 5xx, 408 and 429 answers are tried again up to
/// `source.retries` more times, after an exponential backoff with jitter or
/// the server's `Retry-After`, whichever is longer. A refusal for a rate
/// limit (`RateLimitReport.isRefusal`: a 403 or 429 with `Retry-After` or no
/// requests remaining, or a 403 that says so) is waited out until the time
/// it names, when that is at most `source.maxRateLimitWait` seconds away,
/// and sent again (at most `retryPolicy.rateLimitRetries` times per page,
/// apart from `retries`; a reset already past is retried at once the first
/// time, after the backoff later); a longer wait fails the call at once,
/// retryable, with `retryAt`. Other statuses outside 2xx fail at once.
/// Failures are `LoadError.upstream` with the status, the attempts made and
/// whether trying later may help; a cancelled task ends with
/// `LoadError.cancelled` at once, also while waiting. Waits go through the
/// environment's clock. Secrets (see `HTTPRedactor`), renewed tokens
/// included, never appear in logs or error messages.
public struct HTTPPageClient: Client {
    /// What to request: URL, method, body, query, headers, limits.
    public let source: HTTPSource
    /// Performs each attempt (under the rate-limiting and authorizing transports).
    public let transport: any HTTPTransport
    /// How long to wait between attempts.
    public let retryPolicy: HTTPRetryPolicy
    /// The collection served, for logs.
    public let collection: String
    /// What the source shares with others: clock, credentials, rate limits.
    public let environment: HTTPSourceEnvironment
    /// What the source waits by (the environment's clock, unless given).
    public let clock: any UpstreamClock
    /// The provider of the source's `auth` credential, if it has one.
    public let credentials: (any CredentialProvider)?
    /// Tells the source's credentials apart for the rate limits servers
    /// report (a digest of them, not them).
    let credentialKey: String
    /// `transport` with the rate limiting and authorizing transports around it.
    let pipeline: any HTTPTransport
    let logger: Logger?
    /// The URL that answered the last successful request: relative next-page
    /// URLs are resolved against it (the configured URL before any).
    let lastURL = NIOLockedValueBox<String?>(nil)

    /// A client for `source`. By default it goes to the network through the
    /// process's shared AsyncHTTPClient with the standard retry policy,
    /// shares credentials and rate limits through the process's environment
    /// (`HTTPSourceEnvironment.shared`) and waits by its clock, and logs
    /// nothing. `credentials` defaults to the environment's provider for
    /// `source.auth`. A `Retry-After` longer than `source.maxRateLimitWait`
    /// is not waited for.
    public init(
        source: HTTPSource, collection: String = "", transport: any HTTPTransport = HTTPNetworkTransport.shared,
        retryPolicy: HTTPRetryPolicy = .standard, logger: Logger? = nil, environment: HTTPSourceEnvironment = .shared,
        clock: (any UpstreamClock)? = nil, credentials: (any CredentialProvider)? = nil
    ) {
        self.source = source
        self.collection = collection
        self.transport = transport
        var policy = retryPolicy
        if policy.honoursRetryAfter { policy.maxRetryAfter = min(policy.maxRetryAfter, source.maxRateLimitWait) }
        self.retryPolicy = policy
        self.logger = logger
        self.environment = environment
        let clock = clock ?? environment.clock
        self.clock = clock
        let provider = credentials ?? source.auth.map { environment.credentialProvider(for: $0, clock: clock, logger: logger) }
        self.credentials = provider
        self.credentialKey = Self.credentialKey(source)
        var chain = transport
        if let provider { chain = AuthorizingTransport(wrapping: chain, provider: provider, origin: HTTPURL.origin(source.url)) }
        let origin = HTTPURL.origin(source.url) ?? source.url
        chain = RateLimitingTransport(
            wrapping: chain, environment: environment, clock: clock, credentialKey: credentialKey,
            spacing: source.rateLimit.map { (origin, environment.spacing(origin: origin, rate: $0)) },
            maxWait: source.maxRateLimitWait, collection: collection, logger: logger)
        self.pipeline = chain
    }

    /// A digest of what identifies the source's credentials (its `auth`,
    /// its secret headers and query items): sources with the same share what
    /// a server says of its limit.
    static func credentialKey(_ source: HTTPSource) -> String {
        var parts: [String] = source.auth.map { ["\($0)"] } ?? []
        for header in source.headers where HTTPRedactor.isSecretHeader(header.name) {
            parts.append(header.name.lowercased() + ":" + header.value)
        }
        for item in source.query where HTTPRedactor.isSecretQueryName(item.name) { parts.append(item.name + "=" + item.value) }
        return parts.isEmpty ? "-" : HTTPRedactor.digest(parts.joined(separator: "\n"))
    }

    /// What the server last said of the source's rate limit.
    public func rateLimitStatus() -> RateLimitStatus? {
        environment.reportedLimit(origin: HTTPURL.origin(source.url) ?? source.url, credentials: credentialKey).status
    }

    /// A `GET` only reads (RFC 9110 §9.2.1: safe methods have no effects),
    /// so its pages may be fetched ahead of one still being checked, and
    /// several at once (`concurrency`); a `POST` may change something, and is
    /// sent only for a page asked for (or with `prefetch`).
    public var fetchesHaveNoEffects: Bool { source.method == .get }

    public func fetch<R: Request>(_ request: R) async throws -> UpstreamResponse {
        if Task.isCancelled { throw LoadError.cancelled }
        let redactor = HTTPRedactor(
            source: source, exemptQueryNames: HTTPRedactor.pagingNames(request.paging, pageSizeParam: request.pageSizeParam)
                .union(request.incrementalQuery.map { [HTTPURL.encodeComponent($0.name)] } ?? []),
            exemptHeaderNames: HTTPRedactor.pagingHeaderNames(request.paging), learned: environment.secrets)
        let exchange = try exchangeRequest(for: request)
        let shown = "\(exchange.method) \(redactor.url(exchange.url))"
        var attempt = 0
        var retries = 0
        var rateLimitRetries = 0
        func failure(_ status: Int?, _ retryable: Bool, _ message: String, retryAt: Double? = nil) -> LoadError {
            var message = message
            if attempt > 1 { message += " (after \(attempt) attempts)" }
            let failure = UpstreamFailure(
                status: status, attempts: attempt, retryable: retryable, message: redactor.scrub(message), retryAt: retryAt)
            logger?.warning("upstream failed", metadata: ["collection": "\(collection)", "error": "\(failure.message)"])
            return LoadError.upstream(failure)
        }
        while true {
            attempt += 1
            let status: Int?
            let retryable: Bool
            var message: String
            var retryAfter: Double?
            /// For a refusal for a rate limit: when to try again (`nil`: not said).
            var rateLimited: (retryAt: Double?, byRetryAfter: Bool)?
            do {
                let response = try await pipeline.perform(exchange, timeout: source.timeout, maxBodyBytes: source.maxBodyBytes)
                if (200..<300).contains(response.status) {
                    lastURL.withLockedValue { $0 = response.url }
                    logger?.debug("fetched page", metadata: [
                        "collection": "\(collection)", "request": "\(shown)", "status": "\(response.status)",
                        "bytes": "\(response.body.count)", "attempt": "\(attempt)",
                    ])
                    return UpstreamResponse(status: response.status, headers: response.headers, body: response.body)
                }
                status = response.status
                message = "\(shown) answered \(Self.statusText(response.status))\(Self.snippet(response.body))"
                let report = RateLimitReport.read(response, now: clock.now())
                if report.isRefusal {
                    retryable = true
                    rateLimited = (report.retryAt(now: clock.now()), report.retryAfter != nil)
                } else {
                    retryable = Self.isRetryable(status: response.status)
                    if let value = response.headerValues("Retry-After").first {
                        retryAfter = HTTPRetryPolicy.retryAfterSeconds(value, now: clock.now())
                    }
                }
                if !report.unreadable.isEmpty {
                    logger?.info("unreadable rate-limit headers ignored", metadata: [
                        "collection": "\(collection)", "headers": "\(report.unreadable.joined(separator: ", "))",
                    ])
                }
            } catch {
                if error == .cancelled || Task.isCancelled { throw LoadError.cancelled }
                if case .rateLimited(let retryAt) = error {
                    // Not sent: the limit is used up for longer than the source waits.
                    attempt -= 1
                    throw failure(nil, true, "\(shown): the rate limit is used up; it resets in \(Self.seconds((retryAt - clock.now()).rounded(.up))) s, more than maxRateLimitWait (\(Self.seconds(source.maxRateLimitWait)) s)", retryAt: retryAt)
                }
                status = nil
                retryable = error.isRetryable
                message = "\(shown): \(Self.describe(error, timeout: source.timeout))"
            }
            if Task.isCancelled { throw LoadError.cancelled }

            let now = clock.now()
            var delay: Double
            if let rateLimited {
                if let retryAt = rateLimited.retryAt, retryAt - now > source.maxRateLimitWait {
                    let wait = Self.seconds((retryAt - now).rounded(.up))
                    message += rateLimited.byRetryAfter
                        ? "; the server asks to wait \(wait) s before trying again"
                        : "; the rate limit resets in \(wait) s"
                    message += ", more than maxRateLimitWait (\(Self.seconds(source.maxRateLimitWait)) s)"
                    throw failure(status, true, message, retryAt: retryAt)
                }
                guard rateLimitRetries < retryPolicy.rateLimitRetries else {
                    throw failure(status, true, message, retryAt: rateLimited.retryAt)
                }
                rateLimitRetries += 1
                let until = max(0, (rateLimited.retryAt ?? now) - now)
                // A reset already past is tried again at once, the first time only.
                delay = rateLimited.retryAt != nil && rateLimitRetries == 1
                    ? until : retryPolicy.delay(beforeRetry: rateLimitRetries, retryAfter: until)
                logger?.info("rate limited, waiting", metadata: [
                    "collection": "\(collection)", "error": "\(redactor.scrub(message))", "delay": "\(Self.seconds(delay))",
                ])
            } else {
                guard retryable, retries < source.retries else { throw failure(status, retryable, message) }
                if let retryAfter, retryPolicy.refuses(retryAfter: retryAfter) {
                    message += "; the server asks to wait \(Self.seconds(retryAfter)) s before trying again"
                    throw failure(status, retryable, message, retryAt: now + retryAfter)
                }
                retries += 1
                delay = retryPolicy.delay(beforeRetry: retries, retryAfter: retryAfter)
                logger?.info("retrying", metadata: [
                    "collection": "\(collection)", "error": "\(redactor.scrub(message))",
                    "attempt": "\(attempt)", "delay": "\(Self.seconds(delay))",
                ])
            }
            if delay > 0 {
                do {
                    try await clock.sleep(seconds: delay)
                } catch {
                    throw LoadError.cancelled
                }
            }
            if Task.isCancelled { throw LoadError.cancelled }
        }
    }

    /// Whether an answer with this status may succeed later: 408, 429 and 5xx.
    public static func isRetryable(status: Int) -> Bool {
        status == 408 || status == 429 || (500...599).contains(status)
    }

    // MARK: Messages

    static func statusText(_ status: Int) -> String {
        let reason = HTTPResponseStatus(statusCode: status).reasonPhrase
        return reason.isEmpty ? "status \(status)" : "\(status) \(reason)"
    }

    /// The start of a body, on one line, for error messages.
    static func snippet(_ body: [UInt8]) -> String {
        guard !body.isEmpty else { return "" }
        let limit = 200
        var text = String(decoding: body.prefix(limit), as: UTF8.self)
        text = String(text.map { $0.isNewline || $0 == "\t" ? " " : $0 }).trimmingASCIISpaces()
        if body.count > limit { text += "…" }
        return text.isEmpty ? "" : ": \(text)"
    }

    static func describe(_ error: HTTPTransportError, timeout: Double) -> String {
        switch error {
        case .credentials(let message, _): return message
        case .rateLimited: return "the rate limit is used up"
        case .connection(let reason): return "connection failed: \(reason)"
        case .timeout: return "no complete answer within \(seconds(timeout)) s"
        case .bodyTooLarge(let limit): return "the response body is larger than maxBodyBytes (\(limit) bytes)"
        case .invalidRequest(let reason): return "cannot send the request: \(reason)"
        case .unmatched(let reason): return reason
        case .cancelled: return "cancelled"
        }
    }

    static func seconds(_ value: Double) -> String {
        value == value.rounded() && value < 1e15 ? String(Int64(value)) : String((value * 1000).rounded() / 1000)
    }
}
