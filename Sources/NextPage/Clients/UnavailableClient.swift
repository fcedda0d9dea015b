/// A source that cannot be used as it is defined (an `http` source whose
/// `${env:NAME}` is not set in the server's environment): every fetch fails
/// with the reason, and nothing is sent anywhere. The rest of the config is
/// served.
public struct UnavailableClient: Client {
    /// Why the source cannot be used, as a fetch reports it.
    public let reason: String

    public init(reason: String) {
        self.reason = reason
    }

    public func fetch<R: Request>(_ request: R) async throws -> UpstreamResponse {
        throw LoadError.upstream(UpstreamFailure(attempts: 0, retryable: false, message: reason))
    }
}
