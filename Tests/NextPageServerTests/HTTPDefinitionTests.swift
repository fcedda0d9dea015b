import Jansson
import NextPage
@testable import NextPageServer
import XCTest

/// The `http` source in collection definitions: what validates, what it
/// becomes, and the errors that name the field.
final class HTTPDefinitionTests: XCTestCase {
    private let environment = ["API_TOKEN": "t0k3n-value", "API_HOST": "api.example.com"]

    private func validate(_ source: String, paging: String = #"{"strategy": "cursor"}"#, extra: String = "") throws(DefinitionError) -> CollectionDefinition {
        let text = #"{"source": \#(source), "paging": \#(paging)\#(extra.isEmpty ? "" : ", " + extra)}"#
        let json = try! JSON.parse(text)
        return try DefinitionValidator(environment: environment).validate(json)
    }

    private func error(_ source: String, paging: String = #"{"strategy": "cursor"}"#, file: StaticString = #filePath, line: UInt = #line) -> DefinitionError? {
        do {
            _ = try validate(source, paging: paging)
            XCTFail("expected a definition error", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    private func http(_ definition: CollectionDefinition, file: StaticString = #filePath, line: UInt = #line) -> HTTPSource? {
        guard case .http(let source) = definition.source else {
            XCTFail("not an http source: \(definition.source)", file: file, line: line)
            return nil
        }
        return source
    }

    // MARK: What validates

    func testFullHTTPSourceWithDefaults() throws {
        let minimal = try XCTUnwrap(http(try validate(#"{"type": "http", "url": "https://api.example.com/items"}"#)))
        XCTAssertEqual(minimal, HTTPSource(url: "https://api.example.com/items"))
        XCTAssertEqual(minimal.method, .get)
        XCTAssertEqual(minimal.timeout, 30)
        XCTAssertEqual(minimal.retries, 2)
        XCTAssertEqual(minimal.maxBodyBytes, 64 << 20)

        let full = try XCTUnwrap(http(try validate("""
            {"type": "http", "url": "https://${env:API_HOST}/graphql?v=1", "method": "POST",
             "body": {"query": "{ x }", "variables": {"first": 50}},
             "query": {"per_page": "50", "key": "${env:API_TOKEN}"},
             "headers": {"Authorization": "Bearer ${env:API_TOKEN}", "Accept": "application/json"},
             "timeout": 2.5, "retries": 0, "maxBodyBytes": 1048576}
            """, paging: #"{"strategy": "cursor", "bodyPointer": "/variables/after", "next": "/data/x/pageInfo/endCursor"}"#)))
        XCTAssertEqual(full.url, "https://api.example.com/graphql?v=1")
        XCTAssertEqual(full.method, .post)
        XCTAssertEqual(full.body?.description, #"{"query":"{ x }","variables":{"first":50}}"#)
        XCTAssertEqual(full.query.map(\.name), ["per_page", "key"])
        XCTAssertEqual(full.query.map(\.value), ["50", "t0k3n-value"])
        XCTAssertEqual(full.headers.map(\.name), ["Authorization", "Accept"])
        XCTAssertEqual(full.headers.map(\.value), ["Bearer t0k3n-value", "application/json"])
        XCTAssertEqual(Set(full.environmentValues), ["t0k3n-value"], "the host is not a secret")
        XCTAssertEqual(full.timeout, 2.5)
        XCTAssertEqual(full.retries, 0)
        XCTAssertEqual(full.maxBodyBytes, 1_048_576)
    }

    func testEveryValueFromTheEnvironmentIsASecretButTheEndpoint() throws {
        // docs/config.md: a value from ${env:NAME} in url, query or headers is a
        // secret that never reaches logs or transcripts, whatever the field is called.
        let environment = [
            "BASE": "https://api.example.com", "ACCOUNT": "acct-424242", "SIG": "sig+abc/def==",
            "JWT": "eyJhbGciOi.x.y", "FORMAT": "json",
        ]
        let definition = try DefinitionValidator(environment: environment).validate(try JSON.parse("""
            {"source": {"type": "http", "url": "${env:BASE}/v1/${env:ACCOUNT}/items",
                        "query": {"sig": "${env:SIG}", "format": "${env:FORMAT}"}, "headers": {"X-Jwt": "${env:JWT}"}},
             "paging": {"strategy": "cursor", "param": "cursor"}}
            """))
        let source = try XCTUnwrap(http(definition))
        XCTAssertEqual(Set(source.environmentValues), ["acct-424242", "sig+abc/def==", "eyJhbGciOi.x.y", "json"])
        let redactor = HTTPRedactor(source: source, exemptQueryNames: ["cursor"])
        XCTAssertEqual(
            redactor.url("https://api.example.com/v1/acct-424242/items?sig=sig%2Babc%2Fdef%3D%3D&format=json&cursor=c2"),
            "https://api.example.com/v1/[redacted]/items?sig=[redacted]&format=json&cursor=c2",
            "a short value (json) is left alone: it would be taken out of every page")
        XCTAssertEqual(redactor.headers([("X-Jwt", "eyJhbGciOi.x.y"), ("Accept", "json")]).map(\.value), ["[redacted]", "json"])
        XCTAssertEqual(redactor.scrub("account acct-424242 has no access"), "account [redacted] has no access")
    }

    func testLinkStrategyIsAllowedForHTTP() throws {
        let definition = try validate(#"{"type": "http", "url": "http://127.0.0.1:8080/x"}"#, paging: #"{"strategy": "link", "items": ""}"#)
        XCTAssertEqual(definition.paging.strategy, .link)
        XCTAssertTrue(definition.makeClient(name: "x") is HTTPPageClient)
    }

    func testConfigFileNamesTheCollectionInErrors() throws {
        let config = try JSON.parse(#"{"collections": {"friends": {"source": {"type": "http", "url": "ftp://x"}, "paging": {"strategy": "cursor"}}}}"#)
        XCTAssertThrowsError(try DefinitionValidator().validateConfig(config)) { error in
            XCTAssertEqual((error as? DefinitionError)?.fieldAndExpected, "collections.friends.source.url: expected an http or https URL")
        }
    }

    // MARK: Errors that name the field

    func testSourceFieldErrors() {
        XCTAssertEqual(error(#"{"type": "http"}"#)?.fieldAndExpected, "source.url: expected an http or https URL")
        XCTAssertEqual(error(#"{"type": "http", "url": "file:///etc/passwd"}"#)?.fieldAndExpected, "source.url: expected an http or https URL")
        XCTAssertEqual(error(#"{"type": "http", "url": 5}"#)?.fieldAndExpected, "source.url: expected an http or https URL")
        XCTAssertEqual(error(#"{"type": "ftp", "url": "x"}"#)?.fieldAndExpected, "source.type: expected one of file, http, command")
        XCTAssertEqual(
            error(#"{"type": "http", "url": "https://a", "dir": "x"}"#)?.fieldAndExpected,
            "source.dir: expected no such field for an http source (known: auth, body, headers, maxBodyBytes, maxRateLimitWait, method, query, rateLimit, retries, timeout, type, url)")
        XCTAssertEqual(error(#"{"type": "http", "url": "https://a", "method": "PUT"}"#)?.fieldAndExpected, "source.method: expected one of GET, POST")
        XCTAssertEqual(error(#"{"type": "http", "url": "https://a", "method": "get"}"#)?.field, "source.method")
        XCTAssertEqual(
            error(#"{"type": "http", "url": "https://a", "body": {"q": 1}}"#)?.fieldAndExpected,
            #"source.body: expected no body with method GET (add "method": "POST")"#)
        XCTAssertEqual(error(#"{"type": "http", "url": "https://a", "method": "POST", "body": [1]}"#)?.fieldAndExpected, "source.body: expected a JSON object")
        XCTAssertEqual(error(#"{"type": "http", "url": "https://a", "query": {"n": 50}}"#)?.fieldAndExpected, "source.query.n: expected a string")
        XCTAssertEqual(error(#"{"type": "http", "url": "https://a", "query": "n=1"}"#)?.fieldAndExpected, "source.query: expected an object of strings")
        XCTAssertEqual(error(#"{"type": "http", "url": "https://a", "headers": {"X-A": true}}"#)?.fieldAndExpected, "source.headers.X-A: expected a string")
        XCTAssertEqual(error(#"{"type": "http", "url": "https://a", "headers": {"Bad Name": "x"}}"#)?.field, "source.headers.Bad Name")
        XCTAssertEqual(
            error(#"{"type": "http", "url": "https://a", "headers": {"X-A": "a\r\nX-Injected: 1"}}"#)?.fieldAndExpected,
            "source.headers.X-A: expected a header value without line breaks")
        for timeout in ["0", "-1", "\"10\"", "100000"] {
            XCTAssertEqual(
                error(#"{"type": "http", "url": "https://a", "timeout": \#(timeout)}"#)?.fieldAndExpected,
                "source.timeout: expected a number of seconds > 0 (at most 86400)", timeout)
        }
        XCTAssertEqual(error(#"{"type": "http", "url": "https://a", "retries": -1}"#)?.fieldAndExpected, "source.retries: expected an integer from 0 to 100")
        XCTAssertEqual(error(#"{"type": "http", "url": "https://a", "retries": 1.5}"#)?.field, "source.retries")
        XCTAssertEqual(error(#"{"type": "http", "url": "https://a", "maxBodyBytes": 0}"#)?.fieldAndExpected, "source.maxBodyBytes: expected an integer ≥ 1")
    }

    func testUnsetEnvironmentVariableNamesTheFieldAndTheVariable() {
        XCTAssertEqual(
            error(#"{"type": "http", "url": "https://a", "headers": {"Authorization": "Bearer ${env:NOPE_TOKEN}"}}"#)?.fieldAndExpected,
            "source.headers.Authorization: expected environment variable NOPE_TOKEN to be set (for ${env:NOPE_TOKEN})")
        XCTAssertEqual(error(#"{"type": "http", "url": "https://${env:NOPE_HOST}/x"}"#)?.field, "source.url")
        XCTAssertEqual(error(#"{"type": "http", "url": "https://a", "query": {"k": "${env:NOPE}"}}"#)?.field, "source.query.k")
    }

    func testAConfigFileKeepsACollectionWhoseVariableIsUnsetAndItsFetchesSayWhy() async throws {
        let config = try JSON.parse(#"""
            {"collections": {
              "api": {"source": {"type": "http", "url": "https://a/x", "headers": {"Authorization": "Bearer ${env:NOPE_TOKEN}"}}, "paging": {"strategy": "link"}},
              "run": {"source": {"type": "command", "argv": ["cat", "${env:NOPE_FILE}"]}, "paging": {"strategy": "cursor"}},
              "host": {"source": {"type": "http", "url": "https://${env:NOPE_HOST}/x"}, "paging": {"strategy": "link"}},
              "base": {"source": {"type": "http", "url": "${env:NOPE_BASE}/x"}, "paging": {"strategy": "link"}},
              "tool": {"source": {"type": "command", "argv": ["${env:NOPE_TOOL}", "x"]}, "paging": {"strategy": "cursor"}},
              "ok": {"source": {"type": "http", "url": "https://a/y"}, "paging": {"strategy": "link"}}}}
            """#)
        let collections = Dictionary(uniqueKeysWithValues: try DefinitionValidator(environment: [:]).validateConfig(config).map { ($0.name, $0.definition) })
        XCTAssertEqual(collections["api"]?.unavailable, "environment variable NOPE_TOKEN is not set (for ${env:NOPE_TOKEN} in collections.api.source.headers.Authorization)")
        XCTAssertEqual(collections["run"]?.unavailable, "environment variable NOPE_FILE is not set (for ${env:NOPE_FILE} in collections.run.source.argv.1)")
        // Where the variable is the whole host, base or program, the field's other checks do not reject the file.
        XCTAssertEqual(collections["host"]?.unavailable, "environment variable NOPE_HOST is not set (for ${env:NOPE_HOST} in collections.host.source.url)")
        XCTAssertEqual(collections["base"]?.unavailable, "environment variable NOPE_BASE is not set (for ${env:NOPE_BASE} in collections.base.source.url)")
        XCTAssertEqual(collections["tool"]?.unavailable, "environment variable NOPE_TOOL is not set (for ${env:NOPE_TOOL} in collections.tool.source.argv.0)")
        XCTAssertNil(collections["ok"]?.unavailable)
        XCTAssertTrue(collections["ok"]?.makeClient(name: "ok") is HTTPPageClient)
        let api = try XCTUnwrap(collections["api"]).makeCollection(name: "api")
        do {
            _ = try await api.loadNext()
            XCTFail("expected a failure")
        } catch LoadError.upstream(let failure) {
            XCTAssertEqual(failure, UpstreamFailure(attempts: 0, retryable: false, message: try XCTUnwrap(collections["api"]?.unavailable)))
        }
        // `define` (one definition) still rejects it at once.
        let one = try JSON.parse(#"{"source": {"type": "http", "url": "https://a/x", "headers": {"Authorization": "Bearer ${env:NOPE_TOKEN}"}}, "paging": {"strategy": "link"}}"#)
        XCTAssertThrowsError(try DefinitionValidator(environment: [:]).validate(one)) { error in
            XCTAssertEqual((error as? DefinitionError)?.field, "source.headers.Authorization")
        }
    }

    func testEnvironmentDefaultsToTheProcessEnvironment() throws {
        let home = try XCTUnwrap(getenv("PATH").map { String(cString: $0) })
        let json = try JSON.parse(#"{"source": {"type": "http", "url": "https://a", "headers": {"X-Path": "${env:PATH}"}}, "paging": {"strategy": "cursor"}}"#)
        let definition = try DefinitionValidator().validate(json)
        XCTAssertEqual(http(definition)?.headers.first?.value, home)
    }

    func testCursorPlacementErrors() {
        let post = #"{"type": "http", "url": "https://a", "method": "POST", "body": {"variables": 1}}"#
        let get = #"{"type": "http", "url": "https://a"}"#
        XCTAssertEqual(
            error(get, paging: #"{"strategy": "cursor", "bodyPointer": "/variables/after"}"#)?.fieldAndExpected,
            #"paging.bodyPointer: expected a POST source ("source.method": "POST")"#)
        XCTAssertEqual(
            error(post, paging: #"{"strategy": "cursor", "bodyPointer": "/variables/after"}"#)?.fieldAndExpected,
            "paging.bodyPointer: expected a JSON Pointer to a member inside source.body (missing objects are created)")
        XCTAssertEqual(error(post, paging: #"{"strategy": "cursor", "bodyPointer": ""}"#)?.field, "paging.bodyPointer")
        XCTAssertEqual(
            error(post, paging: #"{"strategy": "cursor", "bodyPointer": "/after", "header": "X-C"}"#)?.fieldAndExpected,
            "paging.header: expected either bodyPointer or header, not both")
        XCTAssertEqual(
            error(get, paging: #"{"strategy": "nextUrl", "header": "X-C"}"#)?.fieldAndExpected,
            "paging.header: expected no header with the nextUrl strategy (its cursor is the next URL)")
        XCTAssertEqual(error(post, paging: #"{"strategy": "link", "bodyPointer": "/after"}"#)?.field, "paging.bodyPointer")
        XCTAssertEqual(error(get, paging: #"{"strategy": "cursor", "header": "X C"}"#)?.field, "paging.header")
        XCTAssertNoThrow(try validate(post, paging: #"{"strategy": "page", "bodyPointer": "/paging/page"}"#))
        XCTAssertNoThrow(try validate(get, paging: #"{"strategy": "cursor", "header": "X-Cursor"}"#))
    }

    // MARK: Clients

    func testUpstreamModeChoosesTheTransport() throws {
        let definition = try validate(#"{"type": "http", "url": "https://a/x"}"#)
        let live = try XCTUnwrap(definition.makeClient(name: "c") as? HTTPPageClient)
        XCTAssertTrue(live.transport is HTTPNetworkTransport)
        XCTAssertEqual(live.retryPolicy, .standard)

        let recording = try XCTUnwrap(definition.makeClient(name: "a/b", upstream: .record(directory: "/tmp/rec")) as? HTTPPageClient)
        XCTAssertEqual((recording.transport as? RecordingTransport)?.file, "/tmp/rec/a%2Fb.jsonl")

        let replay = try XCTUnwrap(definition.makeClient(name: "c", upstream: .replay(directory: "/tmp/rec/")) as? HTTPPageClient)
        XCTAssertEqual((replay.transport as? ReplayTransport)?.file, "/tmp/rec/c.jsonl")
        XCTAssertEqual(replay.retryPolicy, .immediate)

        // Other sources ignore the mode.
        XCTAssertTrue(Demo.definition.makeClient(name: "demo", upstream: .replay(directory: "/tmp")) is BundledClient)
    }

    func testUpstreamFailureBecomesError32002WithItsData() throws {
        let error = Wire.error(
            .upstream(UpstreamFailure(status: 503, attempts: 3, retryable: true, message: "GET https://a/x answered 503 (after 3 attempts)")),
            collection: "friends")
        XCTAssertEqual(error.code, -32002)
        let data = try XCTUnwrap(error.data).parsed()
        XCTAssertEqual(data.compactString, #"{"collection":"friends","status":503,"attempts":3,"retryable":true,"message":"GET https://a/x answered 503 (after 3 attempts)"}"#)

        let noStatus = try XCTUnwrap(Wire.error(
            .upstream(UpstreamFailure(attempts: 1, retryable: true, message: "timeout")), collection: "c").data).parsed()
        XCTAssertNil(noStatus["status"])
    }
}
