/// One HTTP request of an `http` source, fully built: where the cursor goes
/// has already been decided.
public struct HTTPExchangeRequest: Sendable {
    /// `GET` or `POST`.
    public var method: String
    /// The absolute URL, sendable as it is.
    public var url: String
    /// Request headers, in order.
    public var headers: [(name: String, value: String)]
    /// The body (a JSON document), if any.
    public var body: [UInt8]?
    /// The header that carries the cursor (`paging.header`), if any: it is
    /// not a credential, and a redirect keeps it (`HTTPRedirect`).
    public var cursorHeader: String?
    /// The headers (lowercased names) that carry the source's `auth`
    /// credential, added as the request is sent (`AuthorizingTransport`):
    /// secret whatever their name, dropped on a redirect to another origin.
    public var credentialHeaders: Set<String>
    /// Whether this is a request for a token (to an OAuth 2.0 token
    /// endpoint): its form body and its answer's tokens are recorded
    /// redacted by name (`RecordingTransport`), and replay matches the
    /// redacted body.
    public var isCredentialExchange: Bool

    public init(
        method: String, url: String, headers: [(name: String, value: String)] = [], body: [UInt8]? = nil, cursorHeader: String? = nil,
        credentialHeaders: Set<String> = [], isCredentialExchange: Bool = false
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.cursorHeader = cursorHeader
        self.credentialHeaders = credentialHeaders
        self.isCredentialExchange = isCredentialExchange
    }

    /// The request with `credential` added, replacing any header of its name.
    public func adding(_ credential: Credential) -> HTTPExchangeRequest {
        var request = self
        let lower = credential.name.lowercased()
        request.headers.removeAll { $0.name.lowercased() == lower }
        request.headers.append((credential.name, credential.value))
        request.credentialHeaders.insert(lower)
        return request
    }

    /// The value of the first header with this name (case-insensitively).
    public func headerValue(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name.lowercased() == lower }?.value
    }
}

/// The answer to one `HTTPExchangeRequest`, whatever its status.
public struct HTTPExchangeResponse: Sendable {
    public var status: Int
    /// Response headers, in order, names as sent.
    public var headers: [(name: String, value: String)]
    /// The whole body, decompressed.
    public var body: [UInt8]
    /// The URL that answered (after redirects).
    public var url: String

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8], url: String) {
        self.status = status
        self.headers = headers
        self.body = body
        self.url = url
    }

    /// The values of every header with this name (case-insensitively), in order.
    public func headerValues(_ name: String) -> [String] {
        let lower = name.lowercased()
        return headers.filter { $0.name.lowercased() == lower }.map(\.value)
    }
}

/// Why an exchange produced no answer.
public enum HTTPTransportError: Error, Sendable, Equatable {
    /// Could not connect, or the connection failed (retryable).
    case connection(String)
    /// The attempt took longer than the source's `timeout` (retryable).
    case timeout
    /// The body is larger than `maxBodyBytes`; it was not read.
    case bodyTooLarge(limit: Int)
    /// The request cannot be sent as built (bad URL, bad header, too many redirects).
    case invalidRequest(String)
    /// Replay only: nothing recorded answers this request.
    case unmatched(String)
    /// The surrounding task was cancelled.
    case cancelled
    /// The source's `auth` gave no credential (a credential helper or a
    /// token endpoint failed); the request was not sent.
    case credentials(message: String, retryable: Bool)
    /// The source's rate limit is used up until `retryAt` (Unix seconds),
    /// further away than `maxRateLimitWait`; the request was not sent.
    case rateLimited(retryAt: Double)

    /// Whether another attempt may succeed.
    public var isRetryable: Bool {
        switch self {
        case .connection, .timeout: return true
        case .credentials(_, let retryable): return retryable
        case .rateLimited: return true
        case .bodyTooLarge, .invalidRequest, .unmatched, .cancelled: return false
        }
    }
}

/// Performs HTTP exchanges for `HTTPPageClient`: the network, a recording
/// around it, or a replay of recordings. Retries, backoff and the meaning of
/// statuses belong to the client; a transport makes one attempt.
public protocol HTTPTransport: Sendable {
    /// Sends `request` once and returns the answer, whatever its status.
    ///
    /// Gives up with `HTTPTransportError.timeout` when the attempt takes
    /// longer than `timeout` seconds. Reads at most `maxBodyBytes` of body, else throws
    /// `HTTPTransportError.bodyTooLarge`; throws `HTTPTransportError` for
    /// anything else that leaves no answer, `.cancelled` when the surrounding
    /// task is cancelled.
    func perform(_ request: HTTPExchangeRequest, timeout: Double, maxBodyBytes: Int) async throws(HTTPTransportError) -> HTTPExchangeResponse
}
