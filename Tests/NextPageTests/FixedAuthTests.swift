import Jansson
import NextPage
import XCTest

/// `auth` of types `bearer`, `basic` and `header` over a real server: the
/// header each request carries, a 401 that stands (nothing to renew), and
/// recordings that show none of them.
final class FixedAuthTests: HTTPSourceTestCase {
    func testEachFixedCredentialIsSentAndNeverRecorded() async throws {
        let cases: [(HTTPAuth, name: String, value: String, secret: String)] = [
            (.bearer(token: "bt-Fixed-1234"), "Authorization", "Bearer bt-Fixed-1234", "bt-Fixed-1234"),
            // RFC 7617's example pair.
            (.basic(username: "Aladdin", password: "open sesame"), "Authorization", "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==", "open sesame"),
            (.header(name: "X-Api-Key", value: "hk-Fixed-5678"), "X-Api-Key", "hk-Fixed-5678", "hk-Fixed-5678"),
        ]
        for (auth, name, value, secret) in cases {
            try await withServer({ request in
                guard request.header(name) == value else { return .json(#"{"message": "Bad credentials"}"#, status: 401) }
                return request.queryValue("cursor") == nil
                    ? .json(#"{"items": [{"id": 1}], "next_cursor": "c2"}"#)
                    : .json(#"{"items": [{"id": 2}], "next_cursor": null}"#)
            }) { server, transport in
                let file = try scratchFolder() + "/fixed.jsonl"
                let source = HTTPSource(url: server.baseURL + "/items", auth: auth)
                let recording = RecordingTransport(
                    wrapping: transport, file: file,
                    redactor: HTTPRedactor(source: source, exemptQueryNames: ["cursor"], learned: LearnedSecrets()))
                let environment = HTTPSourceEnvironment(clock: TestClock(), secrets: LearnedSecrets())
                let client = HTTPPageClient(source: source, collection: "t", transport: recording, retryPolicy: Self.fastRetries, environment: environment)
                let collection = PagedCollection(name: "t", client: client, paging: Paging(strategy: .cursor))
                let walked = try await loadAll(collection)
                XCTAssertEqual(walked.ids, ["1", "2"])
                XCTAssertEqual(server.requests.map { $0.header(name) }, [value, value])
                let recorded = try String(contentsOfFile: file, encoding: .utf8)
                XCTAssertFalse(recorded.contains(secret), recorded)
                XCTAssertFalse(recorded.contains(value), recorded)
            }
        }
    }

    func testA401WithAFixedCredentialIsTheErrorAtOnce() async throws {
        try await withServer({ _ in .json(#"{"message": "Bad credentials"}"#, status: 401) }) { server, transport in
            let environment = HTTPSourceEnvironment(clock: TestClock(), secrets: LearnedSecrets())
            let source = HTTPSource(url: server.baseURL + "/items", retries: 3, auth: .bearer(token: "bt-Expired-999"))
            let client = HTTPPageClient(source: source, collection: "t", transport: transport, retryPolicy: Self.fastRetries, environment: environment)
            let collection = PagedCollection(name: "t", client: client, paging: Paging(strategy: .cursor))
            do {
                _ = try await collection.loadNext()
                XCTFail("expected a failure")
            } catch {
                let failure = upstreamFailure(error)
                XCTAssertEqual(failure?.status, 401)
                XCTAssertEqual(failure?.retryable, false)
            }
            XCTAssertEqual(server.requests.count, 1, "a fixed credential has nothing to renew: no second try")
        }
    }
}
