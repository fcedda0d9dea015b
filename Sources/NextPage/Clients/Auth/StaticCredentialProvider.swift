/// The credential of `bearer`, `basic` and `header` auth: fixed when the
/// config is read.
public struct StaticCredentialProvider: CredentialProvider {
    public let fixed: Credential

    public init(_ credential: Credential) {
        self.fixed = credential
    }

    /// The credential of a fixed `auth`; `nil` for kinds obtained at run time.
    public init?(_ auth: HTTPAuth) {
        switch auth {
        case .bearer(let token):
            fixed = Credential(name: "Authorization", value: "Bearer \(token)")
        case .basic(let username, let password):
            fixed = Credential(name: "Authorization", value: "Basic " + Base64.encode(Array("\(username):\(password)".utf8)))
        case .header(let name, let value):
            fixed = Credential(name: name, value: value)
        case .command, .oauth2:
            return nil
        }
    }

    public func credential(_ context: CredentialContext) async throws(CredentialError) -> Credential {
        fixed
    }
}
