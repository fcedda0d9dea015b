import Jansson
import NextPage
import XCTest

/// Helpers for the http source tests: a real server per test, a network
/// transport of the test's own, and paging driven through `PagedCollection`.
class HTTPSourceTestCase: XCTestCase {
    /// Backoff short enough for tests (Retry-After is still honoured).
    static let fastRetries = HTTPRetryPolicy(baseDelay: 0.01, maxDelay: 0.05)

    /// Runs `body` with a started server and a fresh network transport, then stops both.
    func withServer(
        _ script: @escaping HTTPTestServer.Script,
        _ body: (HTTPTestServer, HTTPNetworkTransport) async throws -> Void
    ) async throws {
        let server = try await HTTPTestServer.start(script)
        try await run(server, body)
    }

    /// Runs `body` with a server answering `answers` in order.
    func withServer(
        answers: [HTTPScriptedAnswer],
        _ body: (HTTPTestServer, HTTPNetworkTransport) async throws -> Void
    ) async throws {
        let server = try await HTTPTestServer.start(answers: answers)
        try await run(server, body)
    }

    private func run(_ server: HTTPTestServer, _ body: (HTTPTestServer, HTTPNetworkTransport) async throws -> Void) async throws {
        let transport = HTTPNetworkTransport()
        do {
            try await body(server, transport)
        } catch {
            await transport.shutdown()
            await server.stop()
            throw error
        }
        await transport.shutdown()
        await server.stop()
    }

    /// A fresh folder, removed after the test.
    func scratchFolder() throws -> String {
        var template = Array((NSTemporaryDirectory() + "/nextpage-test-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw XCTSkip("mkdtemp failed") }
        let path = String(cString: made)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    func collection(
        _ source: HTTPSource, _ paging: Paging, options: CollectionOptions = CollectionOptions(),
        transport: any HTTPTransport, retryPolicy: HTTPRetryPolicy = HTTPSourceTestCase.fastRetries
    ) -> PagedCollection {
        let client = HTTPPageClient(source: source, collection: "test", transport: transport, retryPolicy: retryPolicy)
        return PagedCollection(name: "test", client: client, paging: paging, options: options)
    }

    /// Pages to the end (at most `maxPages`); returns the ids delivered, in
    /// order, and the number of pages. Then checks that one more `loadNext`
    /// lands nothing.
    func loadAll(_ collection: PagedCollection, maxPages: Int = 20, file: StaticString = #filePath, line: UInt = #line) async throws -> (ids: [String], pages: Int) {
        var ids: [String] = []
        var pages = 0
        while pages < maxPages {
            let result = try await collection.loadNext()
            pages += 1
            ids += Self.ids(result.items)
            if !result.state.hasNext { break }
        }
        let after = try await collection.loadNext()
        XCTAssertFalse(after.landed, "a loadNext after the end fetched a page", file: file, line: line)
        XCTAssertEqual(after.items.count, 0, file: file, line: line)
        return (ids, pages)
    }

    /// `[{"id":1},{"id":2}]`.
    static func items(_ ids: [Int]) -> String {
        "[" + ids.map { "{\"id\":\($0)}" }.joined(separator: ",") + "]"
    }

    /// The `id` of each item as text (`?` when it has none).
    static func ids<C: Collection>(_ items: C) -> [String] where C.Element == RawJSON {
        items.map { raw in
            guard let id = try? raw.parsed().pointer("/id") else { return "?" }
            return id.string ?? id.integer.map(String.init) ?? "?"
        }
    }

    /// `["1", "2", ...]`.
    static func strings(_ ids: ClosedRange<Int>) -> [String] { ids.map(String.init) }

    /// The upstream failure a load threw, or a test failure.
    func upstreamFailure(_ error: any Error, file: StaticString = #filePath, line: UInt = #line) -> UpstreamFailure? {
        guard case .upstream(let failure)? = error as? LoadError else {
            XCTFail("expected LoadError.upstream, got \(error)", file: file, line: line)
            return nil
        }
        return failure
    }
}
