/// Obtains tokens for a `RenewingCredentialProvider`: a credential helper
/// (`CommandTokenIssuer`), an OAuth 2.0 token endpoint (`OAuth2TokenIssuer`).
public protocol TokenIssuer: Sendable {
    /// Obtains a new token. Throws `CredentialError.failed` with a message
    /// that names the source's `auth` (never a secret), `.cancelled` when
    /// the surrounding task is cancelled.
    func issue(_ context: CredentialContext) async throws(CredentialError) -> IssuedToken

    /// The credential that carries `token`.
    ///
    /// The default implementation returns `Authorization: Bearer TOKEN`.
    func credential(carrying token: String) -> Credential
}

extension TokenIssuer {
    public func credential(carrying token: String) -> Credential {
        Credential(name: "Authorization", value: "Bearer \(token)")
    }
}
