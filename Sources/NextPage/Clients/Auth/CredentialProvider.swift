/// One header that proves who a request comes from (`Authorization: Bearer ...`).
public struct Credential: Sendable, Equatable {
    /// The header's name.
    public var name: String
    /// The header's value (a secret).
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// Why no credential could be had.
public enum CredentialError: Error, Sendable, Equatable {
    /// The helper or the token endpoint failed; `message` names the source's
    /// `auth` and says what went wrong, without any secret.
    case failed(message: String, retryable: Bool)
    /// The surrounding task was cancelled.
    case cancelled
}

/// What a provider may use to obtain a credential: the transport that
/// reaches the token endpoint (the source's own, under its recording or
/// replay, so the token exchange is recorded and replayed too) and how long
/// one exchange may take.
public struct CredentialContext: Sendable {
    public var transport: any HTTPTransport
    /// Seconds one token request may take (the source's `timeout`).
    public var timeout: Double

    public init(transport: any HTTPTransport, timeout: Double) {
        self.transport = transport
        self.timeout = timeout
    }
}

/// Gives the credential of an `http` source's `auth` (docs/config.md), one
/// conformer per kind: fixed ones (`StaticCredentialProvider`: bearer,
/// basic, header) and tokens obtained at run time, cached and renewed
/// (`RenewingCredentialProvider` over a `TokenIssuer`: a credential helper,
/// OAuth 2.0).
///
/// A provider may be shared by every collection whose `auth` is the same
/// (`HTTPSourceEnvironment`), so it must cope with concurrent calls.
public protocol CredentialProvider: Sendable {
    /// The credential to send now, obtained first when there is none yet,
    /// or renewed when it expires soon.
    func credential(_ context: CredentialContext) async throws(CredentialError) -> Credential

    /// The credential to send instead of `rejected`, which the server
    /// refused with 401; `nil` when there is no other (the 401 stands).
    ///
    /// The default implementation returns `nil`: a fixed credential cannot
    /// be renewed.
    func renewed(after rejected: Credential, _ context: CredentialContext) async throws(CredentialError) -> Credential?
}

extension CredentialProvider {
    public func renewed(after rejected: Credential, _ context: CredentialContext) async throws(CredentialError) -> Credential? {
        nil
    }
}
