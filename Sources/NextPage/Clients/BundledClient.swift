/// Serves pages held in memory, named as `FileClient` names files
/// (`first.json`, `<encoded cursor>.json`). The built-in demo collection
/// uses it; so can tests.
public struct BundledClient: Client {
    /// Page bodies by file name.
    public let pages: [String: [UInt8]]

    public init(pages: [String: [UInt8]]) {
        self.pages = pages
    }

    public var fetchesHaveNoEffects: Bool { true }

    public func fetch<R: Request>(_ request: R) async throws -> UpstreamResponse {
        if Task.isCancelled { throw LoadError.cancelled }
        let name = FileClient.fileName(for: request)
        guard let body = pages[name] else {
            throw LoadError.upstream(UpstreamFailure(retryable: false, message: "no bundled page '\(name)'"))
        }
        return UpstreamResponse(body: body)
    }
}
