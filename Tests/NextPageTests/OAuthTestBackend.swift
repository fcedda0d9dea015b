import NIOConcurrencyHelpers
import NextPage

/// An OAuth 2.0 token endpoint (`/token`) and an API (`/items`) behind one
/// `HTTPTestServer`, for the `auth` tests.
///
/// The endpoint issues a new access token per grant (counted), valid for
/// `lifetime` seconds by the test's clock; with `rotatesRefreshTokens` each
/// answer carries a new refresh token and only the latest one is accepted.
/// The API answers 401 to a missing, unknown or expired token, and to a
/// token used `maxUses` times already (a server that revokes it), else the
/// page for its cursor (`pages`, cursor strategy: `/items`, then
/// `/items?cursor=cN`).
final class OAuthTestBackend: Sendable {
    struct Grant: Sendable {
        var token: String
        var issuedAt: Double
        var uses = 0
    }

    struct State: Sendable {
        var grants: [Grant] = []
        var tokenRequests: [HTTPReceivedRequest] = []
        var apiRequests: [HTTPReceivedRequest] = []
        var refusals = 0
        var refreshToken: String?
        /// When set, the token endpoint answers this instead of a token.
        var tokenFault: HTTPScriptedAnswer?
        /// When set, the API refuses every token (401).
        var refusesAll = false
    }

    let clock: TestClock
    let lifetime: Double
    let maxUses: Int?
    let clientId: String
    let clientSecret: String
    let rotatesRefreshTokens: Bool
    let pages: [String?: String]
    let state: NIOLockedValueBox<State>

    init(
        clock: TestClock, lifetime: Double = 3600, maxUses: Int? = nil, clientId: String = "client-7",
        clientSecret: String = "cs-Wq8kLz0pRt5v", refreshToken: String? = nil, rotatesRefreshTokens: Bool = false,
        pages: [String?: String] = OAuthTestBackend.threePages
    ) {
        self.clock = clock
        self.lifetime = lifetime
        self.maxUses = maxUses
        self.clientId = clientId
        self.clientSecret = clientSecret
        self.rotatesRefreshTokens = rotatesRefreshTokens
        self.pages = pages
        self.state = NIOLockedValueBox(State(refreshToken: refreshToken))
    }

    /// Items 1...6 on three pages.
    static let threePages: [String?: String] = [
        nil: #"{"items": [{"id": 1}, {"id": 2}], "next_cursor": "c2"}"#,
        "c2": #"{"items": [{"id": 3}, {"id": 4}], "next_cursor": "c3"}"#,
        "c3": #"{"items": [{"id": 5}, {"id": 6}], "next_cursor": null}"#,
    ]

    var grants: Int { state.withLockedValue { $0.grants.count } }
    var issuedTokens: [String] { state.withLockedValue { $0.grants.map(\.token) } }
    var tokenRequests: [HTTPReceivedRequest] { state.withLockedValue { $0.tokenRequests } }
    var apiRequests: [HTTPReceivedRequest] { state.withLockedValue { $0.apiRequests } }
    var refusals: Int { state.withLockedValue { $0.refusals } }
    var refreshTokensIssued: [String] { issuedTokens.map { "rt-" + $0 } }

    func setTokenFault(_ answer: HTTPScriptedAnswer?) {
        state.withLockedValue { $0.tokenFault = answer }
    }

    func setRefusesAll(_ refuses: Bool) {
        state.withLockedValue { $0.refusesAll = refuses }
    }

    /// `client_id:client_secret` as HTTP Basic sends it.
    var basicAuthorization: String { "Basic " + base64(Array("\(clientId):\(clientSecret)".utf8)) }

    func answer(_ request: HTTPReceivedRequest) -> HTTPScriptedAnswer {
        if request.path == "/token" { return token(request) }
        return api(request)
    }

    private func token(_ request: HTTPReceivedRequest) -> HTTPScriptedAnswer {
        let now = clock.now()
        return state.withLockedValue { state in
            state.tokenRequests.append(request)
            if let fault = state.tokenFault { return fault }
            let form = Self.form(request.bodyText)
            let fromBody = form["client_id"] == clientId && form["client_secret"] == clientSecret
            guard request.header("Authorization") == basicAuthorization || fromBody else {
                return .json(#"{"error": "invalid_client", "error_description": "Client authentication failed"}"#, status: 401)
            }
            switch form["grant_type"] {
            case "client_credentials":
                break
            case "refresh_token":
                guard let sent = form["refresh_token"], sent == state.refreshToken else {
                    return .json(#"{"error": "invalid_grant", "error_description": "refresh token revoked"}"#, status: 400)
                }
            default:
                return .json(#"{"error": "unsupported_grant_type"}"#, status: 400)
            }
            let token = "at-\(state.grants.count + 1)-Zx81QmVb"
            state.grants.append(Grant(token: token, issuedAt: now))
            var body = #"{"access_token": "\#(token)", "token_type": "Bearer", "expires_in": \#(Int(lifetime))"#
            if rotatesRefreshTokens {
                state.refreshToken = "rt-" + token
                body += #", "refresh_token": "rt-\#(token)""#
            }
            return .json(body + "}")
        }
    }

    private func api(_ request: HTTPReceivedRequest) -> HTTPScriptedAnswer {
        let now = clock.now()
        return state.withLockedValue { state in
            state.apiRequests.append(request)
            let sent = request.header("Authorization").flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
            guard !state.refusesAll, let sent, let index = state.grants.firstIndex(where: { $0.token == sent }),
                  now < state.grants[index].issuedAt + lifetime, maxUses.map({ state.grants[index].uses < $0 }) ?? true else {
                state.refusals += 1
                return .json(#"{"message": "Bad credentials"}"#, status: 401)
            }
            state.grants[index].uses += 1
            guard let page = pages[request.queryValue("cursor")] else { return .status(404) }
            return .json(page)
        }
    }

    /// A form body as name → value (percent-decoded).
    static func form(_ body: String) -> [String: String] {
        var values: [String: String] = [:]
        for item in body.split(separator: "&") {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map { percentDecode(String($0)) }
            values[parts[0]] = parts.count > 1 ? parts[1] : ""
        }
        return values
    }

    static func percentDecode(_ text: String) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%"), let high = iterator.next(), let low = iterator.next(),
               let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) {
                bytes.append(value)
            } else if byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Base64 with padding, written out here so the tests do not check the
/// code under test against itself.
func base64(_ bytes: [UInt8]) -> String {
    let table = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
    var out = ""
    var index = 0
    while index < bytes.count {
        let chunk = Array(bytes[index..<min(index + 3, bytes.count)])
        let value = chunk.enumerated().reduce(0) { $0 | Int($1.element) << (16 - 8 * $1.offset) }
        for position in 0..<4 {
            out.append(position <= chunk.count ? table[(value >> (18 - 6 * position)) & 63] : "=")
        }
        index += 3
    }
    return out
}
