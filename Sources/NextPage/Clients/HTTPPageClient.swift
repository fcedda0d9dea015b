import Logging
import NIOConcurrencyHelpers
import NIOHTTP1

/// The `http` source (SPEC §5): fetches each page with one HTTP request,
/// built from the source and the paging settings (see `exchangeRequest(for:)`),
/// over an `HTTPTransport` (the network by default; a recording or a replay).
///
/// Connection errors, timeouts, 5xx, 408 and 429 answers are tried again up to
/// `source.retries` more times, after an exponential backoff with jitter or
/// the server's `Retry-After`, whichever is longer. Other statuses outside
/// 2xx fail at once. Failures are `LoadError.upstream` with the status, the
/// attempts made and whether trying later may help; a cancelled task ends
/// with `LoadError.cancelled` at once, also while waiting to retry. Secrets
/// (see `HTTPRedactor`) never appear in logs or error messages.
public struct HTTPPageClient: Client {
    /// What to request: URL, method, body, query, headers, limits.
    public let source: HTTPSource
    /// Performs each attempt.
    public let transport: any HTTPTransport
    /// How long to wait between attempts.
    public let retryPolicy: HTTPRetryPolicy
    /// The collection served, for logs.
    public let collection: String
    let logger: Logger?
    /// The URL that answered the last successful request: relative next-page
    /// URLs are resolved against it (the configured URL before any).
    let lastURL = NIOLockedValueBox<String?>(nil)

    /// A client for `source`. By default it goes to the network through the
    /// process's shared AsyncHTTPClient with the standard retry policy, and logs nothing.
    public init(
        source: HTTPSource, collection: String = "", transport: any HTTPTransport = HTTPNetworkTransport.shared,
        retryPolicy: HTTPRetryPolicy = .standard, logger: Logger? = nil
    ) {
        self.source = source
        self.collection = collection
        self.transport = transport
        self.retryPolicy = retryPolicy
        self.logger = logger
    }

    /// A `GET` only reads (RFC 9110 §9.2.1: safe methods have no effects),
    /// so its pages may be fetched ahead of one still being checked, and
    /// several at once (`concurrency`); a `POST` may change something, and is
    /// sent only for a page asked for (or with `prefetch`).
    public var fetchesHaveNoEffects: Bool { source.method == .get }

    public func fetch<R: Request>(_ request: R) async throws -> UpstreamResponse {
        if Task.isCancelled { throw LoadError.cancelled }
        let redactor = HTTPRedactor(
            source: source, exemptQueryNames: HTTPRedactor.pagingNames(request.paging, pageSizeParam: request.pageSizeParam),
            exemptHeaderNames: HTTPRedactor.pagingHeaderNames(request.paging))
        let exchange = try exchangeRequest(for: request)
        let shown = "\(exchange.method) \(redactor.url(exchange.url))"
        var attempt = 0
        while true {
            attempt += 1
            let status: Int?
            let retryable: Bool
            var message: String
            var retryAfter: Double?
            do {
                let response = try await transport.perform(exchange, timeout: source.timeout, maxBodyBytes: source.maxBodyBytes)
                if (200..<300).contains(response.status) {
                    lastURL.withLockedValue { $0 = response.url }
                    logger?.debug("fetched page", metadata: [
                        "collection": "\(collection)", "request": "\(shown)", "status": "\(response.status)",
                        "bytes": "\(response.body.count)", "attempt": "\(attempt)",
                    ])
                    return UpstreamResponse(status: response.status, headers: response.headers, body: response.body)
                }
                status = response.status
                retryable = Self.isRetryable(status: response.status)
                message = "\(shown) answered \(Self.statusText(response.status))\(Self.snippet(response.body))"
                if let value = response.headerValues("Retry-After").first {
                    retryAfter = HTTPRetryPolicy.retryAfterSeconds(value, now: HTTPRetryPolicy.now())
                }
            } catch {
                if error == .cancelled || Task.isCancelled { throw LoadError.cancelled }
                status = nil
                retryable = error.isRetryable
                message = "\(shown): \(Self.describe(error, timeout: source.timeout))"
            }
            if Task.isCancelled { throw LoadError.cancelled }

            var giveUp = !retryable || attempt > source.retries
            if !giveUp, let retryAfter, retryPolicy.refuses(retryAfter: retryAfter) {
                message += "; the server asks to wait \(Self.seconds(retryAfter)) s before trying again"
                giveUp = true
            }
            if giveUp {
                if attempt > 1 { message += " (after \(attempt) attempts)" }
                let failure = UpstreamFailure(status: status, attempts: attempt, retryable: retryable, message: redactor.scrub(message))
                logger?.warning("upstream failed", metadata: ["collection": "\(collection)", "error": "\(failure.message)"])
                throw LoadError.upstream(failure)
            }
            let delay = retryPolicy.delay(beforeRetry: attempt, retryAfter: retryAfter)
            logger?.info("retrying", metadata: [
                "collection": "\(collection)", "error": "\(redactor.scrub(message))",
                "attempt": "\(attempt)", "delay": "\(Self.seconds(delay))",
            ])
            if delay > 0 {
                do {
                    try await Task.sleep(nanoseconds: UInt64(delay * 1e9))
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
