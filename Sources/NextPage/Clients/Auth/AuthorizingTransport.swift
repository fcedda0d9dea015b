/// Adds an `http` source's `auth` credential to its requests, as they are
/// sent, around the transport that sends them (the network, a recording, a
/// replay).
///
/// Only requests to the source's own origin (the scheme, host and port of
/// its `url`) get the credential: a next-page URL on another origin goes
/// without it, and a redirect to another origin drops it
/// (`HTTPExchangeRequest.credentialHeaders`, `HTTPRedirect`). The
/// credential replaces a configured header of the same name.
///
/// An answer of 401 from the source's origin, when the provider can renew
/// its credential, renews it once and sends the request again; a second 401
/// is returned as it is (the call then fails with status 401). Token
/// requests go through `inner`, so a recording holds them and a replay
/// answers them.
public struct AuthorizingTransport: HTTPTransport {
    public let inner: any HTTPTransport
    public let provider: any CredentialProvider
    /// The origin that gets the credential.
    public let origin: String?

    public init(wrapping inner: any HTTPTransport, provider: any CredentialProvider, origin: String?) {
        self.inner = inner
        self.provider = provider
        self.origin = origin
    }

    public func perform(_ request: HTTPExchangeRequest, timeout: Double, maxBodyBytes: Int) async throws(HTTPTransportError) -> HTTPExchangeResponse {
        guard let origin, HTTPURL.origin(request.url) == origin else {
            return try await inner.perform(request, timeout: timeout, maxBodyBytes: maxBodyBytes)
        }
        let context = CredentialContext(transport: inner, timeout: timeout)
        let credential = try await Self.obtain { () async throws(CredentialError) in try await provider.credential(context) }
        let response = try await inner.perform(request.adding(credential), timeout: timeout, maxBodyBytes: maxBodyBytes)
        // A 401 from elsewhere (after a redirect) says nothing of this credential.
        guard response.status == 401, HTTPURL.origin(response.url) == origin else { return response }
        let renewed = try await Self.obtain { () async throws(CredentialError) in try await provider.renewed(after: credential, context) }
        guard let renewed else { return response }
        return try await inner.perform(request.adding(renewed), timeout: timeout, maxBodyBytes: maxBodyBytes)
    }

    private static func obtain<T>(_ body: () async throws(CredentialError) -> T) async throws(HTTPTransportError) -> T {
        do {
            return try await body()
        } catch {
            switch error {
            case .cancelled: throw .cancelled
            case .failed(let message, let retryable): throw .credentials(message: message, retryable: retryable)
            }
        }
    }
}
