/// How an `http` source proves who it is (`source.auth`, docs/config.md),
/// validated and with `${env:NAME}` already expanded.
///
/// The credential is added to each request to the source's own origin (its
/// `url`'s scheme, host and port) as the request is sent, by an
/// `AuthorizingTransport`; requests to other origins (a next-page URL, a
/// redirect) never carry it.
public enum HTTPAuth: Sendable, Hashable {
    /// `Authorization: Bearer TOKEN`.
    case bearer(token: String)
    /// `Authorization: Basic base64(USERNAME:PASSWORD)` (RFC 7617).
    case basic(username: String, password: String)
    /// One header of the source's choosing, `NAME: VALUE`.
    case header(name: String, value: String)
    /// A credential helper run without a shell; its stdout is the token.
    case command(CredentialCommand)
    /// OAuth 2.0 (RFC 6749): client credentials, or a refresh token.
    case oauth2(OAuth2Settings)

    /// The names of the types, as `source.auth.type` spells them.
    public static let typeNames = ["bearer", "basic", "header", "command", "oauth2"]

    /// `source.auth.type`.
    public var typeName: String {
        switch self {
        case .bearer: return "bearer"
        case .basic: return "basic"
        case .header: return "header"
        case .command: return "command"
        case .oauth2: return "oauth2"
        }
    }

    /// The secret values the configuration holds (tokens, passwords, client
    /// secrets, refresh tokens, and the encoded forms requests carry them
    /// in), for `HTTPRedactor`.
    public var secrets: [String] {
        switch self {
        case .bearer(let token):
            return [token]
        case .basic(let username, let password):
            return [password, Base64.encode(Array("\(username):\(password)".utf8))]
        case .header(_, let value):
            return [value]
        case .command:
            return []
        case .oauth2(let settings):
            var values = [settings.clientSecret, HTTPURL.encodeComponent(settings.clientSecret)]
            values.append(Base64.encode(Array(settings.basicCredentials.utf8)))
            if let refresh = settings.refreshToken { values += [refresh, HTTPURL.encodeComponent(refresh)] }
            return values
        }
    }

    /// Whether credentials of this kind are obtained at run time and can be
    /// renewed (after a 401, or before they expire).
    public var renews: Bool {
        switch self {
        case .command, .oauth2: return true
        case .bearer, .basic, .header: return false
        }
    }
}

/// `{"type": "command", "argv": [...], "scheme": "Bearer", "timeout": S}`:
/// a credential helper, as git's credential helpers and kubectl's exec
/// plugins are.
public struct CredentialCommand: Sendable, Hashable {
    /// The program (looked up on `PATH` without a `/`) and its arguments.
    public var argv: [String]
    /// What precedes the token in `Authorization` (default `Bearer`); empty:
    /// the token alone.
    public var scheme: String
    /// Seconds one run may take before it is killed (default 10).
    public var timeout: Double

    public static let defaultScheme = "Bearer"
    public static let defaultTimeout: Double = 10

    public init(argv: [String], scheme: String = CredentialCommand.defaultScheme, timeout: Double = CredentialCommand.defaultTimeout) {
        self.argv = argv
        self.scheme = scheme
        self.timeout = timeout
    }
}

/// `{"type": "oauth2", "tokenUrl", "clientId", "clientSecret", "scopes"?,
/// "refreshToken"?, "clientAuth"?}`.
public struct OAuth2Settings: Sendable, Hashable {
    /// How the client authenticates to the token endpoint (RFC 6749 §2.3.1).
    public enum ClientAuthentication: String, Sendable, Hashable, CaseIterable {
        /// HTTP Basic with the form-encoded client id and secret: what every
        /// server must accept (the default).
        case basic
        /// `client_id` and `client_secret` in the form body, for servers
        /// that only take them there.
        case body
    }

    /// The token endpoint (http or https).
    public var tokenURL: String
    public var clientId: String
    public var clientSecret: String
    /// Sent as `scope`, joined with spaces, when not empty.
    public var scopes: [String]
    /// The refresh-token grant's first refresh token; `nil`: the
    /// client-credentials grant.
    public var refreshToken: String?
    public var clientAuthentication: ClientAuthentication

    public init(
        tokenURL: String, clientId: String, clientSecret: String, scopes: [String] = [], refreshToken: String? = nil,
        clientAuthentication: ClientAuthentication = .basic
    ) {
        self.tokenURL = tokenURL
        self.clientId = clientId
        self.clientSecret = clientSecret
        self.scopes = scopes
        self.refreshToken = refreshToken
        self.clientAuthentication = clientAuthentication
    }

    /// `id:secret`, each form-encoded (RFC 6749 §2.3.1), before Base64.
    var basicCredentials: String {
        HTTPURL.encodeComponent(clientId) + ":" + HTTPURL.encodeComponent(clientSecret)
    }
}
