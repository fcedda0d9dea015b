import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `source.auth` and rate limits through the real binary, against a token
/// endpoint and an API on 127.0.0.1 started by the test: the items, the
/// token grants and upstream requests, the state file, the recording and
/// its offline replay, and that no secret reaches stderr, the transcript
/// or the recording.
final class AuthEndToEndTests: EndToEndTestCase {
    private var nextId = 0

    private func call(_ server: ServerHarness, _ method: String, _ params: String? = nil) throws -> JSONValue {
        nextId += 1
        try server.request("\(nextId)", method, params)
        return try server.reply("\(nextId)", timeout: 30)
    }

    private static let pages: [String: String] = [
        "/items": #"{"items": [{"id": 1}, {"id": 2}], "next_cursor": "c2"}"#,
        "/items?cursor=c2": #"{"items": [{"id": 3}, {"id": 4}], "next_cursor": "c3"}"#,
        "/items?cursor=c3": #"{"items": [{"id": 5}, {"id": 6}], "next_cursor": null}"#,
    ]

    /// A token endpoint (client credentials, HTTP Basic) and an API that
    /// revokes a token after two uses.
    final class Backend: @unchecked Sendable {
        let clientId = "e2e-client"
        let clientSecret = "cs-E2E-Secret-9431"
        private let lock = NSLock()
        private var issued: [String] = []
        private var uses: [String: Int] = [:]
        private(set) var refusals = 0

        var grants: Int { lock.withLock { issued.count } }
        var tokens: [String] { lock.withLock { issued } }
        var basic: String { "Basic " + Data("\(clientId):\(clientSecret)".utf8).base64EncodedString() }

        func answer(_ request: ReceivedHTTPRequest) -> HTTPFault {
            lock.withLock {
                if request.path == "/token" {
                    guard request.method == "POST", request.header("Authorization") == basic,
                          request.bodyText == "grant_type=client_credentials" else {
                        return .json(#"{"error": "invalid_client"}"#, status: 401)
                    }
                    let token = "at-E2E-\(issued.count + 1)-tokenvalue"
                    issued.append(token)
                    return .json(#"{"access_token": "\#(token)", "token_type": "bearer", "expires_in": 3600}"#, status: 200)
                }
                let token = request.header("Authorization").map { String($0.dropFirst("Bearer ".count)) } ?? ""
                guard token == issued.last, uses[token, default: 0] < 2 else {
                    refusals += 1
                    return .json(#"{"message": "Bad credentials"}"#, status: 401)
                }
                uses[token, default: 0] += 1
                return AuthEndToEndTests.pages[request.target].map { .json($0) } ?? .json("{}", status: 404)
            }
        }
    }

    private func startUpstream(_ handler: @escaping FaultyHTTPServer.Handler) throws -> FaultyHTTPServer {
        let server = try FaultyHTTPServer(handler: handler)
        addTeardownBlock { server.stop() }
        return server
    }

    /// Every page notification's item ids, in order.
    private func pagedIds(_ server: ServerHarness) -> [Int64] {
        server.takeAll { $0["method"] == .string("page") }.flatMap { page in
            (page["params"]?["items"]?.arrayValue ?? []).compactMap { $0["id"]?.intValue }
        }
    }

    func testOAuth2SourceRenewsOn401KeepsNoSecretAndReplaysOffline() throws {
        let backend = Backend()
        let upstream = try startUpstream(backend.answer)
        let directory = try temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory + "/rec", withIntermediateDirectories: true)
        let config = #"""
            {"collections": {"api": {"source": {"type": "http", "url": "\#(upstream.baseURL)/items",
              "auth": {"type": "oauth2", "tokenUrl": "\#(upstream.baseURL)/token", "clientId": "e2e-client", "clientSecret": "cs-E2E-Secret-9431"}},
              "paging": {"strategy": "cursor"}}}}
            """#
        let server = try startServer(
            config: config, arguments: ["--state", "s.json", "--transcript", "t.jsonl", "--record-upstream", "rec", "--log-level", "debug"],
            in: directory)
        try expectMatch(call(server, "loadAll", #"{"collection": "api"}"#), rpcResult(nextId, #"{"collection":"api","pages":3,"count":6,"hasNext":false,"lastId":null}"#))
        XCTAssertEqual(pagedIds(server), [1, 2, 3, 4, 5, 6])
        try server.finish()

        // Two uses per token: page 3 was refused once, a second token was obtained, and page 3 asked for again.
        XCTAssertEqual(backend.grants, 2)
        XCTAssertEqual(backend.refusals, 1)
        XCTAssertEqual(upstream.requests, ["/token", "/items", "/items?cursor=c2", "/items?cursor=c3", "/token", "/items?cursor=c3"])
        let state = try JSONValue.parse(String(contentsOfFile: directory + "/s.json", encoding: .utf8))
        try expectMatch(state["collections"]?["api"] ?? .null, #"{"hasNext":false,"lastId":null,"count":6,"pages":3,"lastError":null}"#)

        let written = [
            ("stderr", server.stderrText),
            ("the transcript", try String(contentsOfFile: directory + "/t.jsonl", encoding: .utf8)),
            ("the recording", try String(contentsOfFile: directory + "/rec/api.jsonl", encoding: .utf8)),
        ]
        for secret in [backend.clientSecret, backend.basic, String(backend.basic.dropFirst(6))] + backend.tokens {
            for (name, text) in written {
                XCTAssertFalse(text.contains(secret), "\(name) shows \(secret)")
            }
        }
        XCTAssertTrue(written[2].1.contains(#""access_token":"[redacted]""#))

        // Offline: the upstream is gone, the recording answers the token endpoint and the API.
        upstream.stop()
        let before = upstream.requests.count
        let replay = try startServer(config: config, arguments: ["--replay-upstream", "rec"], in: directory)
        try expectMatch(call(replay, "loadAll", #"{"collection": "api"}"#), rpcResult(nextId, #"{"collection":"api","pages":3,"count":6,"hasNext":false,"lastId":null}"#))
        XCTAssertEqual(pagedIds(replay), [1, 2, 3, 4, 5, 6])
        try replay.finish()
        XCTAssertEqual(upstream.requests.count, before)
    }

    func testGitHubThenIETFHeadersThenASecondaryLimitThenAFarResetThroughTheBinary() throws {
        let now = Int(Date().timeIntervalSince1970)
        let farReset = now + 3600
        let secondaryTries = NSLock()
        nonisolated(unsafe) var refusedOnce = false
        let upstream = try startUpstream { request in
            switch request.target {
            case "/items":
                // GitHub: used up, with a reset already past: the next request goes at once.
                return .json(Self.pages["/items"]!, status: 200, headers: [("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", String(now - 5))])
            case "/items?cursor=c2":
                let first = secondaryTries.withLock { () -> Bool in
                    defer { refusedOnce = true }
                    return !refusedOnce
                }
                // A secondary limit that asks for no wait, then the IETF headers: used up, resetting now.
                return first
                    ? .json(#"{"message": "You have exceeded a secondary rate limit."}"#, status: 403, headers: [("Retry-After", "0")])
                    : .json(Self.pages["/items?cursor=c2"]!, status: 200, headers: [("RateLimit-Remaining", "0"), ("RateLimit-Reset", "0")])
            default:
                return .json(#"{"message": "API rate limit exceeded"}"#, status: 403, headers: [
                    ("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", String(farReset)),
                ])
            }
        }
        let directory = try temporaryDirectory()
        let config = #"{"collections": {"gh": {"source": {"type": "http", "url": "\#(upstream.baseURL)/items"}, "paging": {"strategy": "cursor"}}}}"#
        let server = try startServer(config: config, arguments: ["--state", "s.json"], in: directory)
        try expectMatch(call(server, "loadNext", #"{"collection": "gh"}"#), rpcResult(nextId, #"{"collection":"gh","items":[{"id":1},{"id":2}],"page":1,"hasNext":true,"lastId":"c2","count":2}"#))
        try expectMatch(call(server, "loadNext", #"{"collection": "gh"}"#), rpcResult(nextId, #"{"collection":"gh","items":[{"id":3},{"id":4}],"page":2,"hasNext":true,"lastId":"c3","count":4}"#))
        let failed = try call(server, "loadNext", #"{"collection": "gh"}"#)
        try expectMatch(failed, rpcError(nextId, #"{"code":-32002,"message":"<string>","data":{"collection":"gh","status":403,"attempts":1,"retryable":true,"retryAt":\#(farReset),"message":"<contains:the rate limit resets in>"}}"#))
        // The reset is beyond maxRateLimitWait: the next call fails at once, without a request.
        try expectMatch(call(server, "loadNext", #"{"collection": "gh"}"#), rpcError(nextId, #"{"code":-32002,"message":"<string>","data":{"collection":"gh","attempts":0,"retryable":true,"retryAt":\#(farReset),"message":"<contains:the rate limit is used up>"}}"#))
        try expectMatch(call(server, "status", #"{"collection": "gh"}"#), rpcResult(nextId, #"{"collection":"gh","hasNext":true,"isLoading":false,"lastId":"c3","count":4,"pages":2,"lastError":"<contains:the rate limit is used up>","rateLimit":{"remaining":0,"resetAt":\#(farReset)}}"#))
        try server.finish()
        XCTAssertEqual(upstream.requests, ["/items", "/items?cursor=c2", "/items?cursor=c2", "/items?cursor=c3"])
        let state = try JSONValue.parse(String(contentsOfFile: directory + "/s.json", encoding: .utf8))
        XCTAssertEqual(state["collections"]?["gh"]?["lastId"], .string("c3"))
        XCTAssertEqual(state["collections"]?["gh"]?["count"], .int(4))
    }

    func testCredentialHelperFaultsAndCommandAuthAtRunTimeThroughTheBinary() throws {
        let directory = try temporaryDirectory()
        let upstream = try startUpstream { request in
            request.header("Authorization") == "token ghp_FromHelper42"
                ? .json(Self.pages[request.target] ?? "{}", status: Self.pages[request.target] == nil ? 404 : 200)
                : .json(#"{"message": "Bad credentials"}"#, status: 401)
        }
        try writeFile(directory + "/helper.sh", "#!/bin/sh\necho 'no credentials for this host' >&2\nexit 2\n")
        chmod(directory + "/helper.sh", 0o755)
        let config = #"""
            {"collections": {"api": {"source": {"type": "http", "url": "\#(upstream.baseURL)/items",
              "auth": {"type": "command", "argv": ["./helper.sh"], "scheme": "token"}}, "paging": {"strategy": "cursor"}}}}
            """#
        let server = try startServer(config: config, arguments: ["--log-level", "debug"], in: directory)
        // Relative to the config file's folder, as written.
        let helper = "./helper.sh"
        try expectMatch(call(server, "loadNext", #"{"collection": "api"}"#), rpcError(nextId, #"{"code":-32002,"message":"<string>","data":{"collection":"api","attempts":1,"retryable":false,"message":"GET \#(upstream.baseURL)/items: source.auth: credential helper '\#(helper)' exited with status 2: stderr: no credentials for this host"}}"#))
        XCTAssertEqual(upstream.requests, [], "nothing is sent without a credential")

        // The helper now prints a token (with the newline `gh auth token` prints).
        try writeFile(directory + "/helper.sh", "#!/bin/sh\necho ghp_FromHelper42\n")
        try expectMatch(call(server, "loadNext", #"{"collection": "api"}"#), rpcResult(nextId, #"{"collection":"api","items":[{"id":1},{"id":2}],"page":1,"hasNext":true,"lastId":"c2","count":2}"#))

        // A credential helper is a program: `define` takes one only with --allow-commands.
        try expectMatch(
            call(server, "define", #"{"name": "x", "source": {"type": "http", "url": "\#(upstream.baseURL)/items", "auth": {"type": "command", "argv": ["./helper.sh"]}}, "paging": {"strategy": "cursor"}}"#),
            rpcError(nextId, #"{"code":-32004,"message":"<string>","data":{"field":"source.auth.type","expected":"<contains:--allow-commands>"}}"#))
        try server.finish()
        XCTAssertFalse(server.stderrText.contains("ghp_FromHelper42"), server.stderrText)

        // check-config names the field of a bad auth.
        try writeFile(directory + "/bad.json", #"{"collections": {"x": {"source": {"type": "http", "url": "https://api.example.com", "auth": {"type": "oauth2", "tokenUrl": "token", "clientId": "me", "clientSecret": "s"}}, "paging": {"strategy": "cursor"}}}}"#)
        let checked = try runNextpage(["check-config", "bad.json"], in: directory)
        XCTAssertEqual(checked.status, 2)
        XCTAssertTrue(checked.stderr.contains("collections.x.source.auth.tokenUrl: expected an http or https URL"), checked.stderr)
    }
}
