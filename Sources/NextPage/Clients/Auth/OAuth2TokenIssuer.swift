import Jansson
import NIOConcurrencyHelpers

/// Obtains access tokens from an OAuth 2.0 token endpoint (RFC 6749, `auth`
/// of type `oauth2`): the client-credentials grant (§4.4), or the
/// refresh-token grant (§6) when the settings have a `refreshToken`.
///
/// Each request is a form-encoded `POST` (`grant_type`, `scope` when there
/// are scopes, `refresh_token`); the client authenticates with HTTP Basic
/// (§2.3.1: the client id and secret form-encoded, then Base64), which
/// every server must accept, or in the body (`client_id`,
/// `client_secret`) with `clientAuth: "body"`. The answer's `expires_in`
/// (seconds, a number or a numeric string) sets the expiry; a
/// `refresh_token` in it replaces the one in use (rotation), in memory, and
/// joins the known secrets at once. The token is sent as
/// `Authorization: Bearer`.
///
/// Failures name the token endpoint: an error answer shows the OAuth
/// `error` and `error_description` (§5.2); an answer that is not JSON, or
/// has no `access_token`, says so without showing it. Statuses 408, 429 and
/// 5xx, timeouts and connection failures are retryable.
public final class OAuth2TokenIssuer: TokenIssuer {
    public let settings: OAuth2Settings
    let clock: any UpstreamClock
    let secrets: LearnedSecrets
    /// The refresh token in use (rotated by the server's answers).
    private let refreshToken: NIOLockedValueBox<String?>

    /// The largest token answer read.
    public static let maxAnswerBytes = 1 << 20

    public init(settings: OAuth2Settings, clock: any UpstreamClock, secrets: LearnedSecrets = .process) {
        self.settings = settings
        self.clock = clock
        self.secrets = secrets
        self.refreshToken = NIOLockedValueBox(settings.refreshToken)
    }

    /// The refresh token the next refresh will send.
    public var currentRefreshToken: String? { refreshToken.withLockedValue { $0 } }

    /// `source.auth: the token endpoint POST https://...`.
    var name: String { "source.auth: the token endpoint POST \(HTTPRedactor().url(settings.tokenURL))" }

    /// The token request, as sent.
    public func tokenRequest() -> HTTPExchangeRequest {
        var form: [(String, String)] = []
        let refresh = currentRefreshToken
        if let refresh {
            form += [("grant_type", "refresh_token"), ("refresh_token", refresh)]
        } else {
            form.append(("grant_type", "client_credentials"))
        }
        if !settings.scopes.isEmpty { form.append(("scope", settings.scopes.joined(separator: " "))) }
        var headers: [(name: String, value: String)] = [
            ("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json"), ("User-Agent", "nextpage"),
        ]
        var credentialHeaders: Set<String> = []
        switch settings.clientAuthentication {
        case .basic:
            headers.append(("Authorization", "Basic " + Base64.encode(Array(settings.basicCredentials.utf8))))
            credentialHeaders.insert("authorization")
        case .body:
            form += [("client_id", settings.clientId), ("client_secret", settings.clientSecret)]
        }
        let body = form.map { HTTPURL.encodeComponent($0.0) + "=" + HTTPURL.encodeComponent($0.1) }.joined(separator: "&")
        return HTTPExchangeRequest(
            method: "POST", url: HTTPURL.encodeIllegal(settings.tokenURL), headers: headers, body: Array(body.utf8),
            credentialHeaders: credentialHeaders, isCredentialExchange: true)
    }

    public func issue(_ context: CredentialContext) async throws(CredentialError) -> IssuedToken {
        let response: HTTPExchangeResponse
        do {
            response = try await context.transport.perform(tokenRequest(), timeout: context.timeout, maxBodyBytes: Self.maxAnswerBytes)
        } catch {
            switch error {
            case .cancelled: throw .cancelled
            case .timeout:
                throw .failed(message: "\(name): no complete answer within \(HTTPPageClient.seconds(context.timeout)) s", retryable: true)
            default:
                throw .failed(message: "\(name): \(HTTPPageClient.describe(error, timeout: context.timeout))", retryable: error.isRetryable)
            }
        }
        return try read(response, now: clock.now())
    }

    /// The token an answer holds, or why there is none.
    func read(_ response: HTTPExchangeResponse, now: Double) throws(CredentialError) -> IssuedToken {
        let status = HTTPPageClient.statusText(response.status)
        let json = try? JSON.parse(response.body)
        guard (200..<300).contains(response.status) else {
            let retryable = HTTPPageClient.isRetryable(status: response.status)
            var detail = ""
            if let json, json.kind == .object, let error = json["error"]?.string {
                detail = ": " + error
                if let description = json["error_description"]?.string, !description.isEmpty { detail += " (\(description))" }
            } else if Self.looksLikeHTML(response) {
                detail = " (an HTML page)"
            } else {
                detail = HTTPPageClient.snippet(response.body)
            }
            throw .failed(message: "\(name) answered \(status)\(detail)", retryable: retryable)
        }
        guard let json, json.kind == .object else {
            let what = Self.looksLikeHTML(response) ? "an HTML page" : "something that is not JSON"
            throw .failed(message: "\(name) answered \(status) with \(what), not a token (expected JSON with \"access_token\")", retryable: false)
        }
        guard let token = json["access_token"]?.string, !token.isEmpty else {
            throw .failed(message: "\(name) answered \(status) without an \"access_token\" string", retryable: false)
        }
        guard !token.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw .failed(message: "\(name) answered with an access token that cannot be sent in a header (a control character)", retryable: false)
        }
        // Known as a secret before it is used, logged or recorded.
        secrets.add(token)
        if let rotated = json["refresh_token"]?.string, !rotated.isEmpty {
            secrets.add(rotated)
            refreshToken.withLockedValue { $0 = rotated }
        }
        var expiresAt: Double?
        if let value = json["expires_in"] {
            let seconds = value.number ?? value.string.flatMap { RateLimitReport.number($0) }
            if let seconds, seconds > 0 { expiresAt = now + seconds }
        }
        return IssuedToken(token: token, issuedAt: now, expiresAt: expiresAt)
    }

    static func looksLikeHTML(_ response: HTTPExchangeResponse) -> Bool {
        if response.headerValues("Content-Type").contains(where: { $0.lowercased().contains("html") }) { return true }
        let start = String(decoding: response.body.prefix(64), as: UTF8.self).trimmingASCIISpaces().lowercased()
        return start.hasPrefix("<!doctype html") || start.hasPrefix("<html")
    }
}
