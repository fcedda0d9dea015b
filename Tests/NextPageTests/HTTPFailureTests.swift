import Jansson
import Logging
import NIOConcurrencyHelpers
import NextPage
import XCTest

/// Retries, timeouts, bad pages, redirects, compression, cancellation and
/// secrets of the http source, over a real HTTP server.
final class HTTPFailureTests: HTTPSourceTestCase {
    private static let page = #"{"items": [{"id": 1}, {"id": 2}], "next_cursor": null}"#

    // MARK: Retries

    func test500ThenSuccessIsRetried() async throws {
        try await withServer(answers: [.status(500, body: "oops"), .json(Self.page)]) { server, transport in
            let collection = collection(HTTPSource(url: server.baseURL + "/items"), Paging(strategy: .cursor), transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, ["1", "2"])
            XCTAssertEqual(server.requests.map(\.uri), ["/items", "/items"])
        }
    }

    func test503TwiceThenSuccessIsRetried() async throws {
        try await withServer(answers: [.status(503), .status(503), .json(Self.page)]) { server, transport in
            let collection = collection(
                HTTPSource(url: server.baseURL + "/items", retries: 2), Paging(strategy: .cursor), transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, ["1", "2"])
            XCTAssertEqual(server.requests.count, 3)
        }
    }

    func test429WaitsForRetryAfterSeconds() async throws {
        try await withServer(answers: [.status(429, headers: [("Retry-After", "1")]), .json(Self.page)]) { server, transport in
            let collection = collection(HTTPSource(url: server.baseURL + "/items"), Paging(strategy: .cursor), transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, ["1", "2"])
            let requests = server.requests
            XCTAssertEqual(requests.count, 2)
            // A lower bound only: the retry came no sooner than the server asked.
            XCTAssertGreaterThanOrEqual(requests[1].receivedAt - requests[0].receivedAt, 1_000_000_000)
        }
    }

    func testRetriesRunOutWithARetryableFailure() async throws {
        try await withServer({ _ in .status(503, body: "busy") }) { server, transport in
            let collection = collection(
                HTTPSource(url: server.baseURL + "/items", retries: 2), Paging(strategy: .cursor), transport: transport)
            do {
                _ = try await collection.loadNext()
                XCTFail("expected a failure")
            } catch {
                let failure = upstreamFailure(error)
                XCTAssertEqual(failure?.status, 503)
                XCTAssertEqual(failure?.attempts, 3)
                XCTAssertEqual(failure?.retryable, true)
                XCTAssertEqual(failure?.message, "GET \(server.baseURL)/items answered 503 Service Unavailable: busy (after 3 attempts)")
            }
            XCTAssertEqual(server.requests.count, 3)
        }
    }

    func testNonRetryableStatusFailsAtOnce() async throws {
        try await withServer({ _ in .status(404, body: #"{"message": "Not Found"}"#) }) { server, transport in
            let collection = collection(
                HTTPSource(url: server.baseURL + "/items", retries: 5), Paging(strategy: .cursor), transport: transport)
            do {
                _ = try await collection.loadNext()
                XCTFail("expected a failure")
            } catch {
                XCTAssertEqual(upstreamFailure(error), UpstreamFailure(
                    status: 404, attempts: 1, retryable: false,
                    message: #"GET \#(server.baseURL)/items answered 404 Not Found: {"message": "Not Found"}"#))
            }
            XCTAssertEqual(server.requests.count, 1)
        }
    }

    func testRetryAfterLongerThanTheCapFailsAtOnce() async throws {
        try await withServer({ _ in .status(429, headers: [("Retry-After", "3600")]) }) { server, transport in
            let collection = collection(
                HTTPSource(url: server.baseURL + "/items", retries: 3), Paging(strategy: .cursor), transport: transport)
            do {
                _ = try await collection.loadNext()
                XCTFail("expected a failure")
            } catch {
                let failure = upstreamFailure(error)
                XCTAssertEqual(failure?.status, 429)
                XCTAssertEqual(failure?.attempts, 1)
                XCTAssertEqual(failure?.retryable, true)
                XCTAssertTrue(failure?.message.contains("wait 3600 s") ?? false, failure?.message ?? "")
            }
            XCTAssertEqual(server.requests.count, 1)
        }
    }

    func testTimeoutWhenTheServerNeverAnswers() async throws {
        try await withServer({ _ in .hang }) { server, transport in
            let collection = collection(
                HTTPSource(url: server.baseURL + "/slow", timeout: 0.5, retries: 1), Paging(strategy: .cursor), transport: transport)
            do {
                _ = try await collection.loadNext()
                XCTFail("expected a failure")
            } catch {
                XCTAssertEqual(upstreamFailure(error), UpstreamFailure(
                    status: nil, attempts: 2, retryable: true,
                    message: "GET \(server.baseURL)/slow: no complete answer within 0.5 s (after 2 attempts)"))
            }
            XCTAssertEqual(server.requests.map(\.uri), ["/slow", "/slow"])
        }
    }

    func testDroppedConnectionIsRetryable() async throws {
        try await withServer(answers: [.close, .close]) { server, transport in
            let url = server.baseURL + "/items"
            let collection = collection(HTTPSource(url: url, retries: 1), Paging(strategy: .cursor), transport: transport)
            do {
                _ = try await collection.loadNext()
                XCTFail("expected a failure")
            } catch {
                let failure = upstreamFailure(error)
                XCTAssertNil(failure?.status)
                XCTAssertEqual(failure?.attempts, 2)
                XCTAssertEqual(failure?.retryable, true)
                XCTAssertTrue(failure?.message.hasPrefix("GET \(url): connection failed") ?? false, failure?.message ?? "")
            }
            XCTAssertEqual(server.requests.count, 2)
        }
    }

    // MARK: Pages not understood

    func testMalformedBodyIsUndecodableAndNotRetried() async throws {
        try await withServer(answers: [.json("{\"items\": [1,\n 2")]) { server, transport in
            let collection = collection(HTTPSource(url: server.baseURL + "/items"), Paging(strategy: .cursor), transport: transport)
            do {
                _ = try await collection.loadNext()
                XCTFail("expected a failure")
            } catch {
                guard case .undecodable(let failure)? = error as? LoadError else { return XCTFail("got \(error)") }
                XCTAssertEqual(failure.line, 2)
                XCTAssertNotNil(failure.column)
                XCTAssertNil(failure.pointer)
            }
            XCTAssertEqual(server.requests.count, 1)
        }
    }

    func testMissingItemsPointerIsUndecodable() async throws {
        try await withServer(answers: [.json(#"{"data": [{"id": 1}]}"#)]) { server, transport in
            let collection = collection(HTTPSource(url: server.baseURL + "/items"), Paging(strategy: .cursor), transport: transport)
            do {
                _ = try await collection.loadNext()
                XCTFail("expected a failure")
            } catch {
                guard case .undecodable(let failure)? = error as? LoadError else { return XCTFail("got \(error)") }
                XCTAssertEqual(failure.pointer, "/items")
            }
            XCTAssertEqual(server.requests.count, 1)
        }
    }

    func testFailedFirstPageResetsTheCollection() async throws {
        try await withServer(answers: [.status(403, body: "forbidden"), .json(Self.page)]) { server, transport in
            let collection = collection(HTTPSource(url: server.baseURL + "/items"), Paging(strategy: .cursor), transport: transport)
            do {
                _ = try await collection.loadNext()
                XCTFail("expected a failure")
            } catch {
                XCTAssertEqual(upstreamFailure(error)?.status, 403)
            }
            let state = await collection.state
            XCTAssertTrue(state.hasNext)
            XCTAssertNil(state.lastId)
            XCTAssertEqual(state.pages, 0)
            XCTAssertEqual(state.count, 0)
            XCTAssertFalse(state.isLoading)
            XCTAssertEqual(state.lastError, "GET \(server.baseURL)/items answered 403 Forbidden: forbidden")
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, ["1", "2"])
            XCTAssertEqual(server.requests.map(\.uri), ["/items", "/items"])
        }
    }

    func testFailedLaterPageKeepsTheCursor() async throws {
        try await withServer(answers: [
            .json(#"{"items": [{"id": 1}], "next_cursor": "c2"}"#),
            .status(400, body: "bad"),
            .json(#"{"items": [{"id": 2}], "next_cursor": null}"#),
        ]) { server, transport in
            let collection = collection(HTTPSource(url: server.baseURL + "/items"), Paging(strategy: .cursor), transport: transport)
            _ = try await collection.loadNext()
            do {
                _ = try await collection.loadNext()
                XCTFail("expected a failure")
            } catch {
                XCTAssertEqual(upstreamFailure(error)?.status, 400)
            }
            let state = await collection.state
            XCTAssertEqual(state.lastId, .string("c2"))
            XCTAssertEqual(state.pages, 1)
            let last = try await collection.loadNext()
            XCTAssertEqual(Self.ids(last.items), ["2"])
            XCTAssertEqual(server.requests.map(\.uri), ["/items", "/items?cursor=c2", "/items?cursor=c2"])
        }
    }

    func testBodyLargerThanMaxBodyBytesIsAnUpstreamError() async throws {
        let big = #"{"items": [], "padding": ""# + String(repeating: "x", count: 5000) + #""}"#
        try await withServer(answers: [.json(big)]) { server, transport in
            let collection = collection(
                HTTPSource(url: server.baseURL + "/items", maxBodyBytes: 1000), Paging(strategy: .cursor), transport: transport)
            do {
                _ = try await collection.loadNext()
                XCTFail("expected a failure")
            } catch {
                XCTAssertEqual(upstreamFailure(error), UpstreamFailure(
                    status: nil, attempts: 1, retryable: false,
                    message: "GET \(server.baseURL)/items: the response body is larger than maxBodyBytes (1000 bytes)"))
            }
            XCTAssertEqual(server.requests.count, 1)
        }
    }

    // MARK: Transport features

    func testGzipAndDeflateBodiesAreDecompressed() async throws {
        let gzip: [UInt8] = [
            0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0xab, 0x56, 0xca, 0x2c, 0x49, 0xcd, 0x2d, 0x56, 0xb2, 0x52,
            0x88, 0xae, 0x56, 0xca, 0x4c, 0x51, 0xb2, 0x32, 0xd4, 0x51, 0x2a, 0x49, 0xad, 0x28, 0x51, 0xb2, 0x52, 0x4a, 0xce, 0xcf,
            0x2d, 0x28, 0x4a, 0x2d, 0x2e, 0x4e, 0x4d, 0x51, 0x28, 0x48, 0x4c, 0x4f, 0x55, 0xaa, 0xd5, 0x81, 0xa8, 0x30, 0x22, 0xa8,
            0xc2, 0x18, 0xb7, 0x8a, 0xd8, 0x5a, 0x00, 0xfb, 0x0d, 0x41, 0xe0, 0x72, 0x00, 0x00, 0x00,
        ]
        let deflate: [UInt8] = [
            0x78, 0x9c, 0xab, 0x56, 0xca, 0x2c, 0x49, 0xcd, 0x2d, 0x56, 0xb2, 0x52, 0x88, 0xae, 0x56, 0xca, 0x4c, 0x51, 0xb2, 0x32,
            0xd4, 0x51, 0x2a, 0x49, 0xad, 0x28, 0x51, 0xb2, 0x52, 0x4a, 0xce, 0xcf, 0x2d, 0x28, 0x4a, 0x2d, 0x2e, 0x4e, 0x4d, 0x51,
            0x28, 0x48, 0x4c, 0x4f, 0x55, 0xaa, 0xd5, 0x81, 0xa8, 0x30, 0x22, 0xa8, 0xc2, 0x18, 0xb7, 0x8a, 0xd8, 0x5a, 0x00, 0x63,
            0x48, 0x26, 0x17,
        ]
        try await withServer({ request in
            let encoding = request.queryValue("page") == "2" ? "deflate" : "gzip"
            return .respond(
                status: 200, headers: [("Content-Type", "application/json"), ("Content-Encoding", encoding)],
                body: encoding == "gzip" ? gzip : deflate)
        }) { server, transport in
            let collection = collection(
                HTTPSource(url: server.baseURL + "/items"), Paging(strategy: .page),
                options: CollectionOptions(pageSize: 3), transport: transport)
            let first = try await collection.loadNext()
            XCTAssertEqual(Self.ids(first.items), ["1", "2", "3"])
            XCTAssertEqual(first.items.first?.description, #"{"id":1,"text":"compressed page"}"#)
            let second = try await collection.loadNext()
            XCTAssertEqual(Self.ids(second.items), ["1", "2", "3"])
            XCTAssertEqual(server.requests.map(\.uri), ["/items?page=1", "/items?page=2"])
            XCTAssertTrue(server.requests[0].header("Accept-Encoding")?.contains("gzip") ?? false)
        }
    }

    func testRedirectIsFollowedAndRelativeURLsResolveAgainstWhereItLanded() async throws {
        try await withServer({ request in
            switch request.uri {
            case "/old": return .status(301, headers: [("Location", "/api/list")])
            case "/api/list": return .json(#"{"items": [{"id": 1}], "next": "list?page=2"}"#)
            case "/api/list?page=2": return .json(#"{"items": [{"id": 2}], "next": null}"#)
            default: return .status(404)
            }
        }) { server, transport in
            let collection = collection(HTTPSource(url: server.baseURL + "/old"), Paging(strategy: .nextUrl), transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, ["1", "2"])
            XCTAssertEqual(server.requests.map(\.uri), ["/old", "/api/list", "/api/list?page=2"])
        }
    }

    /// A redirect to another origin (here `localhost` instead of
    /// `127.0.0.1`) does not carry the source's credentials there.
    func testARedirectToAnotherOriginGetsNoCredentials() async throws {
        try await withServer({ request in
            switch request.uri {
            case "/same": return .status(302, headers: [("Location", "/other")])
            case "/other": return .status(307, headers: [("Location", request.header("Host-Redirect") ?? "")])
            case "/items": return .json(#"{"items": [{"id": 1}], "next_cursor": null}"#)
            default: return .status(404)
            }
        }) { server, transport in
            let elsewhere = server.baseURL.replacingOccurrences(of: "127.0.0.1", with: "localhost") + "/items"
            XCTAssertNotEqual(elsewhere, server.baseURL + "/items")
            let source = HTTPSource(url: server.baseURL + "/same", headers: [
                ("X-Api-Key", "k-secret-1"), ("Authorization", "Bearer t0ken"), ("X-Tenant", "acme"), ("Host-Redirect", elsewhere),
            ])
            let collection = collection(source, Paging(strategy: .cursor), transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, ["1"])
            let requests = server.requests
            XCTAssertEqual(requests.map(\.uri), ["/same", "/other", "/items"])
            for same in requests.prefix(2) {
                XCTAssertEqual(same.header("X-Api-Key"), "k-secret-1", same.uri)
                XCTAssertEqual(same.header("Authorization"), "Bearer t0ken", same.uri)
            }
            XCTAssertNil(requests[2].header("X-Api-Key"))
            XCTAssertNil(requests[2].header("Authorization"))
            XCTAssertEqual(requests[2].header("X-Tenant"), "acme")
        }
    }

    func testTooManyRedirectsFailWithoutRetry() async throws {
        try await withServer({ request in
            let hop = Int(request.queryValue("hop") ?? "0") ?? 0
            return .status(302, headers: [("Location", "/loop?hop=\(hop + 1)")])
        }) { server, transport in
            let collection = collection(
                HTTPSource(url: server.baseURL + "/loop", retries: 3), Paging(strategy: .cursor), transport: transport)
            do {
                _ = try await collection.loadNext()
                XCTFail("expected a failure")
            } catch {
                let failure = upstreamFailure(error)
                XCTAssertEqual(failure?.attempts, 1)
                XCTAssertEqual(failure?.retryable, false)
                XCTAssertTrue(failure?.message.contains("redirect") ?? false, failure?.message ?? "")
            }
            XCTAssertEqual(server.requests.count, HTTPNetworkTransport.maxRedirects + 1)
        }
    }

    // MARK: Cancellation

    func testResetCancelsAWaitingRetryAtOnce() async throws {
        try await withServer({ _ in .status(503) }) { server, transport in
            // The first retry would wait at least 10 s.
            let collection = collection(
                HTTPSource(url: server.baseURL + "/items", retries: 5), Paging(strategy: .cursor),
                transport: transport, retryPolicy: HTTPRetryPolicy(baseDelay: 20, maxDelay: 20))
            let started = ContinuousClock.now
            let load = Task { try await collection.loadNext() }
            await server.waitForRequests(1)
            await collection.reset()
            do {
                _ = try await load.value
                XCTFail("expected cancellation")
            } catch {
                XCTAssertEqual(error as? LoadError, .cancelled)
            }
            XCTAssertLessThan(ContinuousClock.now - started, .seconds(5))
            XCTAssertEqual(server.requests.count, 1)
        }
    }

    func testCancellingTheTaskStopsAHangingRequest() async throws {
        try await withServer({ _ in .hang }) { server, transport in
            let collection = collection(
                HTTPSource(url: server.baseURL + "/items", timeout: 60), Paging(strategy: .cursor), transport: transport)
            let started = ContinuousClock.now
            let load = Task { try await collection.loadNext() }
            await server.waitForRequests(1)
            load.cancel()
            do {
                _ = try await load.value
                XCTFail("expected cancellation")
            } catch {
                XCTAssertEqual(error as? LoadError, .cancelled)
            }
            XCTAssertLessThan(ContinuousClock.now - started, .seconds(30))
            let state = await collection.state
            XCTAssertEqual(state.pages, 0)
            XCTAssertEqual(server.requests.count, 1)
        }
    }

    // MARK: Secrets

    func testSecretsNeverAppearInErrorsOrLogs() async throws {
        let token = "sk-live-0123456789abcdef"
        try await withServer({ request in
            // An echoing server: it sends the credentials back in its error.
            .status(401, body: "bad credentials: \(request.header("Authorization") ?? "") key=\(request.queryValue("api_key") ?? "")")
        }) { server, transport in
            let logs = LogCapture()
            var logger = Logger(label: "test") { _ in logs }
            logger.logLevel = .trace
            let source = HTTPSource(
                url: server.baseURL + "/items?api_key=q-secret-42", headers: [("Authorization", "Bearer \(token)")], retries: 0)
            let client = HTTPPageClient(source: source, collection: "test", transport: transport, logger: logger)
            let collection = PagedCollection(name: "test", client: client, paging: Paging(strategy: .cursor))
            do {
                _ = try await collection.loadNext()
                XCTFail("expected a failure")
            } catch {
                let message = upstreamFailure(error)?.message ?? ""
                XCTAssertFalse(message.contains(token), message)
                XCTAssertFalse(message.contains("q-secret-42"), message)
                XCTAssertEqual(message, "GET \(server.baseURL)/items?api_key=[redacted] answered 401 Unauthorized: bad credentials: [redacted] key=[redacted]")
            }
            // The server did get the real credentials.
            XCTAssertEqual(server.requests.first?.header("Authorization"), "Bearer \(token)")
            XCTAssertFalse(logs.text.isEmpty)
            XCTAssertFalse(logs.text.contains(token), logs.text)
            XCTAssertFalse(logs.text.contains("q-secret-42"), logs.text)
        }
    }
}

/// Keeps every log line (message and metadata) as text.
private final class LogCapture: LogHandler, @unchecked Sendable {
    private let lines = NIOLockedValueBox<[String]>([])
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    var text: String { lines.withLockedValue { $0.joined(separator: "\n") } }

    func log(event: LogEvent) {
        let line = "\(event.message) \(event.metadata ?? [:])"
        lines.withLockedValue { $0.append(line) }
    }
}
