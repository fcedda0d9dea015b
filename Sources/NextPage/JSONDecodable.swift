/// A value decoded from an upstream answer (the seeds' `Decodable`, renamed
/// so it does not shadow the standard library's).
public protocol JSONDecodable: Sendable {
    /// Decodes the answer to `request`; throws `LoadError.undecodable` when it is not understood.
    static func decode<R: Request>(_ response: UpstreamResponse, for request: R) throws -> Self
}
