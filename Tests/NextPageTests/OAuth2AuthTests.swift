import Jansson
import NIOConcurrencyHelpers
import NextPage
import XCTest

/// `auth` of type `oauth2` over a real token endpoint and API on 127.0.0.1
/// (`OAuthTestBackend`), with a clock the tests control: tokens obtained
/// once, cached, renewed before they expire and after a 401, shared without
/// a stampede, never sent elsewhere, never shown.
final class OAuth2AuthTests: HTTPSourceTestCase {
    private func settings(
        _ server: HTTPTestServer, _ backend: OAuthTestBackend, refreshToken: String? = nil,
        clientAuthentication: OAuth2Settings.ClientAuthentication = .basic, scopes: [String] = []
    ) -> OAuth2Settings {
        OAuth2Settings(
            tokenURL: server.baseURL + "/token", clientId: backend.clientId, clientSecret: backend.clientSecret, scopes: scopes,
            refreshToken: refreshToken, clientAuthentication: clientAuthentication)
    }

    private func authCollection(
        _ source: HTTPSource, transport: any HTTPTransport, environment: HTTPSourceEnvironment, name: String = "test"
    ) -> PagedCollection {
        let client = HTTPPageClient(
            source: source, collection: name, transport: transport, retryPolicy: Self.fastRetries, environment: environment)
        return PagedCollection(name: name, client: client, paging: Paging(strategy: .cursor))
    }

    private func bearer(_ request: HTTPReceivedRequest) -> String? {
        request.header("Authorization").map { String($0.dropFirst("Bearer ".count)) }
    }

    func testTokenIsObtainedOnceCachedAndRenewedAheadOfItsExpiry() async throws {
        let clock = TestClock()
        let backend = OAuthTestBackend(clock: clock, lifetime: 120)
        try await withServer(backend.answer) { server, transport in
            let environment = HTTPSourceEnvironment(clock: clock, secrets: LearnedSecrets())
            let source = HTTPSource(url: server.baseURL + "/items", auth: .oauth2(settings(server, backend, scopes: ["read"])))
            let collection = authCollection(source, transport: transport, environment: environment)

            let first = try await collection.loadNext()
            XCTAssertEqual(Self.ids(first.items), ["1", "2"])
            clock.advance(by: 100)  // not yet within the renewal margin (a tenth of 120 s)
            let second = try await collection.loadNext()
            XCTAssertEqual(Self.ids(second.items), ["3", "4"])
            XCTAssertEqual(backend.grants, 1)
            clock.advance(by: 10)  // 110 s: 10 s before the token expires, inside the 12 s margin
            let third = try await collection.loadNext()
            XCTAssertEqual(Self.ids(third.items), ["5", "6"])
            XCTAssertFalse(third.state.hasNext)

            XCTAssertEqual(backend.grants, 2)
            XCTAssertEqual(backend.refusals, 0, "the token was renewed before the API refused it")
            XCTAssertEqual(backend.apiRequests.map(\.uri), ["/items", "/items?cursor=c2", "/items?cursor=c3"])
            XCTAssertEqual(backend.apiRequests.map(bearer), ["at-1-Zx81QmVb", "at-1-Zx81QmVb", "at-2-Zx81QmVb"])
            // RFC 6749 §4.4: a form-encoded POST, the client authenticated by HTTP Basic.
            let request = try XCTUnwrap(backend.tokenRequests.first)
            XCTAssertEqual(request.method, "POST")
            XCTAssertEqual(request.header("Content-Type"), "application/x-www-form-urlencoded")
            XCTAssertEqual(request.header("Authorization"), backend.basicAuthorization)
            XCTAssertEqual(request.bodyText, "grant_type=client_credentials&scope=read")
            XCTAssertEqual(clock.waits, [])
            // Every token joined the known secrets as it was obtained.
            XCTAssertTrue(environment.secrets.values.contains("at-2-Zx81QmVb"))
        }
    }

    func testA401RenewsTheTokenOnceAndSendsTheRequestAgain() async throws {
        let clock = TestClock()
        // The API revokes a token after two uses: the third page's first try gets a 401.
        let backend = OAuthTestBackend(clock: clock, maxUses: 2)
        try await withServer(backend.answer) { server, transport in
            let environment = HTTPSourceEnvironment(clock: clock, secrets: LearnedSecrets())
            let source = HTTPSource(url: server.baseURL + "/items", auth: .oauth2(settings(server, backend)))
            let collection = authCollection(source, transport: transport, environment: environment)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, Self.strings(1...6))
            XCTAssertEqual(result.pages, 3)
            XCTAssertEqual(backend.grants, 2)
            XCTAssertEqual(backend.refusals, 1)
            XCTAssertEqual(backend.apiRequests.map(\.uri), ["/items", "/items?cursor=c2", "/items?cursor=c3", "/items?cursor=c3"])
            XCTAssertEqual(backend.apiRequests.map(bearer), ["at-1-Zx81QmVb", "at-1-Zx81QmVb", "at-1-Zx81QmVb", "at-2-Zx81QmVb"])
            XCTAssertEqual(clock.waits, [], "a 401 is answered by a new token, not by waiting")
        }
    }

    func testASecond401IsTheErrorAndTheCollectionKeepsItsPlace() async throws {
        let clock = TestClock()
        let backend = OAuthTestBackend(clock: clock)
        try await withServer(backend.answer) { server, transport in
            let environment = HTTPSourceEnvironment(clock: clock, secrets: LearnedSecrets())
            let source = HTTPSource(url: server.baseURL + "/items", retries: 3, auth: .oauth2(settings(server, backend)))
            let collection = authCollection(source, transport: transport, environment: environment)
            let first = try await collection.loadNext()
            XCTAssertEqual(Self.ids(first.items), ["1", "2"])

            backend.setRefusesAll(true)
            do {
                _ = try await collection.loadNext()
                XCTFail("expected a failure")
            } catch {
                let failure = upstreamFailure(error)
                XCTAssertEqual(failure?.status, 401)
                XCTAssertEqual(failure?.retryable, false, "a refused credential is not retried with backoff")
                XCTAssertEqual(failure?.message, #"GET \#(server.baseURL)/items?cursor=c2 answered 401 Unauthorized: {"message": "Bad credentials"}"#)
            }
            // One renewal, one more try: two grants, two requests for page 2.
            XCTAssertEqual(backend.grants, 2)
            XCTAssertEqual(backend.apiRequests.map(\.uri), ["/items", "/items?cursor=c2", "/items?cursor=c2"])
            let state = await collection.state
            XCTAssertEqual(state.lastId, .string("c2"))
            XCTAssertEqual(state.count, 2)

            backend.setRefusesAll(false)
            let second = try await collection.loadNext()
            XCTAssertEqual(Self.ids(second.items), ["3", "4"])
            XCTAssertEqual(backend.grants, 2, "the renewed token is kept")
        }
    }

    func testCollectionsWithTheSameAuthShareOneToken() async throws {
        let clock = TestClock()
        let backend = OAuthTestBackend(clock: clock)
        try await withServer(backend.answer) { server, transport in
            let environment = HTTPSourceEnvironment(clock: clock, secrets: LearnedSecrets())
            let source = HTTPSource(url: server.baseURL + "/items", auth: .oauth2(settings(server, backend)))
            let collections = (1...4).map { authCollection(source, transport: transport, environment: environment, name: "c\($0)") }
            let walks = try await withThrowingTaskGroup(of: [String].self) { group in
                for collection in collections {
                    group.addTask {
                        var ids: [String] = []
                        while true {
                            let page = try await collection.loadNext()
                            ids += Self.ids(page.items)
                            if !page.state.hasNext { return ids }
                        }
                    }
                }
                var walks: [[String]] = []
                for try await ids in group { walks.append(ids) }
                return walks
            }
            XCTAssertEqual(walks, Array(repeating: Self.strings(1...6), count: 4))
            XCTAssertEqual(backend.grants, 1)
            XCTAssertEqual(backend.apiRequests.count, 12)
        }
    }

    func testRefreshTokenGrantUsesTheRotatedRefreshToken() async throws {
        let clock = TestClock()
        let backend = OAuthTestBackend(clock: clock, lifetime: 60, refreshToken: "rt-0-initial-Yq3", rotatesRefreshTokens: true)
        try await withServer(backend.answer) { server, transport in
            let environment = HTTPSourceEnvironment(clock: clock, secrets: LearnedSecrets())
            let source = HTTPSource(url: server.baseURL + "/items", auth: .oauth2(settings(server, backend, refreshToken: "rt-0-initial-Yq3")))
            let collection = authCollection(source, transport: transport, environment: environment)
            _ = try await collection.loadNext()
            clock.advance(by: 59)
            _ = try await collection.loadNext()
            clock.advance(by: 59)
            let last = try await collection.loadNext()
            XCTAssertEqual(Self.ids(last.items), ["5", "6"])
            XCTAssertEqual(backend.grants, 3)
            let sent = backend.tokenRequests.map { OAuthTestBackend.form($0.bodyText) }
            XCTAssertEqual(sent.map { $0["grant_type"] }, ["refresh_token", "refresh_token", "refresh_token"])
            // Each refresh sends the token the answer before it rotated in (the server accepts only that one).
            XCTAssertEqual(sent.map { $0["refresh_token"] }, ["rt-0-initial-Yq3", "rt-at-1-Zx81QmVb", "rt-at-2-Zx81QmVb"])
            XCTAssertEqual(backend.refusals, 0)
            XCTAssertTrue(environment.secrets.values.contains("rt-at-2-Zx81QmVb"))
        }
    }

    func testClientCanAuthenticateInTheBody() async throws {
        let clock = TestClock()
        let backend = OAuthTestBackend(clock: clock, clientSecret: "s3cr3t with space&amp")
        try await withServer(backend.answer) { server, transport in
            let environment = HTTPSourceEnvironment(clock: clock, secrets: LearnedSecrets())
            let auth = HTTPAuth.oauth2(settings(server, backend, clientAuthentication: .body, scopes: ["read", "write"]))
            let collection = authCollection(HTTPSource(url: server.baseURL + "/items", auth: auth), transport: transport, environment: environment)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, Self.strings(1...6))
            let request = try XCTUnwrap(backend.tokenRequests.first)
            XCTAssertNil(request.header("Authorization"))
            XCTAssertEqual(
                request.bodyText,
                "grant_type=client_credentials&scope=read%20write&client_id=client-7&client_secret=s3cr3t%20with%20space%26amp")
        }
    }

    func testTokenEndpointFaultsAreClearErrorsAndThePlaceIsKept() async throws {
        let clock = TestClock()
        let backend = OAuthTestBackend(clock: clock, lifetime: 60)
        try await withServer(backend.answer) { server, transport in
            let environment = HTTPSourceEnvironment(clock: clock, secrets: LearnedSecrets())
            let source = HTTPSource(url: server.baseURL + "/items", retries: 1, auth: .oauth2(settings(server, backend)))
            let collection = authCollection(source, transport: transport, environment: environment)
            _ = try await collection.loadNext()
            let endpoint = "POST \(server.baseURL)/token"
            let faults: [(HTTPScriptedAnswer, String, Bool, Int)] = [
                (.json(#"{"error": "invalid_client", "error_description": "Client authentication failed"}"#, status: 400),
                 "answered 400 Bad Request: invalid_client (Client authentication failed)", false, 1),
                (.status(500, body: "database down"), "answered 500 Internal Server Error: database down (after 2 attempts)", true, 2),
                (.respond(status: 200, headers: [("Content-Type", "text/html")], body: Array("<html><body>Sign in</body></html>".utf8)),
                 #"answered 200 OK with an HTML page, not a token (expected JSON with "access_token")"#, false, 1),
                (.json(#"{"token_type": "Bearer"}"#), #"answered 200 OK without an "access_token" string"#, false, 1),
            ]
            for (answer, said, retryable, tries) in faults {
                clock.advance(by: 60)  // the token in hand expires
                backend.setTokenFault(answer)
                let before = backend.tokenRequests.count
                do {
                    _ = try await collection.loadNext()
                    XCTFail("expected a failure for \(said)")
                } catch {
                    let failure = upstreamFailure(error)
                    XCTAssertEqual(failure?.message, "GET \(server.baseURL)/items?cursor=c2: source.auth: the token endpoint \(endpoint) \(said)")
                    XCTAssertEqual(failure?.retryable, retryable)
                    XCTAssertNil(failure?.status)
                    XCTAssertFalse(failure?.message.contains(backend.clientSecret) ?? true)
                }
                XCTAssertEqual(backend.tokenRequests.count - before, tries)
                let state = await collection.state
                XCTAssertEqual(state.lastId, .string("c2"), said)
                XCTAssertEqual(state.count, 2)
            }
            XCTAssertEqual(backend.apiRequests.count, 1, "no request went without a token")
            backend.setTokenFault(nil)
            let second = try await collection.loadNext()
            XCTAssertEqual(Self.ids(second.items), ["3", "4"])
        }
    }

    func testCredentialsNeverLeaveTheSourcesOrigin() async throws {
        // A header whose name does not look secret: only its being the auth's keeps it from other origins.
        let other = try await HTTPTestServer.start { request in
            request.path == "/landing"
                ? .json(#"{"items": [{"id": 9}], "next": null}"#)
                : .json(#"{"items": [{"id": 3}], "next": null}"#)
        }
        defer { Task { await other.stop() } }
        try await withServer({ request in
            switch request.path {
            case "/items": return .json(#"{"items": [{"id": 1}], "next": "/page2"}"#)
            case "/page2": return .json(#"{"items": [{"id": 2}], "next": "\#(other.baseURL)/elsewhere"}"#)
            case "/moved": return .status(302, headers: [("Location", other.baseURL + "/landing")])
            default: return .status(404)
            }
        }) { server, transport in
            let environment = HTTPSourceEnvironment(clock: TestClock(), secrets: LearnedSecrets())
            let auth = HTTPAuth.header(name: "X-Session", value: "sess-9f8e7d6c5b")
            let client = HTTPPageClient(
                source: HTTPSource(url: server.baseURL + "/items", auth: auth), collection: "test", transport: transport,
                retryPolicy: Self.fastRetries, environment: environment)
            let collection = PagedCollection(name: "test", client: client, paging: Paging(strategy: .nextUrl))
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, ["1", "2", "3"])
            XCTAssertEqual(server.requests.map { $0.header("X-Session") }, ["sess-9f8e7d6c5b", "sess-9f8e7d6c5b"])
            XCTAssertEqual(other.requests.map(\.path), ["/elsewhere"])
            XCTAssertNil(other.requests[0].header("X-Session"))

            // A redirect to another origin drops it too.
            let redirected = HTTPPageClient(
                source: HTTPSource(url: server.baseURL + "/moved", auth: auth), collection: "test", transport: transport,
                retryPolicy: Self.fastRetries, environment: environment)
            let moved = PagedCollection(name: "moved", client: redirected, paging: Paging(strategy: .nextUrl))
            let movedIds = try await loadAll(moved).ids
            XCTAssertEqual(movedIds, ["9"])
            XCTAssertEqual(server.requests.last?.header("X-Session"), "sess-9f8e7d6c5b")
            XCTAssertEqual(other.requests.map(\.path), ["/elsewhere", "/landing"])
            XCTAssertNil(other.requests[1].header("X-Session"))
        }
    }

    func testRecordingHoldsNoSecretAndReplaysTheTokenExchangeOffline() async throws {
        let clock = TestClock()
        let backend = OAuthTestBackend(clock: clock, maxUses: 2, refreshToken: "rt-0-initial-Yq3", rotatesRefreshTokens: true)
        let directory = try scratchFolder()
        let file = directory + "/auth.jsonl"
        let paging = Paging(strategy: .cursor)
        var auth: HTTPAuth?
        var url = ""
        try await withServer(backend.answer) { server, transport in
            let environment = HTTPSourceEnvironment(clock: clock, secrets: LearnedSecrets())
            auth = .oauth2(settings(server, backend, refreshToken: "rt-0-initial-Yq3"))
            url = server.baseURL + "/items"
            let source = HTTPSource(url: url, auth: auth)
            let redactor = HTTPRedactor(source: source, exemptQueryNames: HTTPRedactor.pagingNames(paging, pageSizeParam: nil), learned: environment.secrets)
            let recording = RecordingTransport(wrapping: transport, file: file, redactor: redactor)
            let collection = authCollection(source, transport: recording, environment: environment)
            let ids = try await loadAll(collection).ids
            XCTAssertEqual(ids, Self.strings(1...6))
            XCTAssertEqual(backend.grants, 2)
        }
        let recorded = try String(contentsOfFile: file, encoding: .utf8)
        let lines = recorded.split(separator: "\n")
        // Two token exchanges, four page requests (one of them refused with 401).
        XCTAssertEqual(lines.count, 6)
        var secrets = [backend.clientSecret, backend.basicAuthorization, "rt-0-initial-Yq3"]
        secrets += backend.issuedTokens + backend.refreshTokensIssued
        for secret in secrets {
            XCTAssertFalse(recorded.contains(secret), "the recording shows \(secret)")
            XCTAssertFalse(recorded.contains(HTTPURL.encodeComponent(secret)), "the recording shows \(secret), encoded")
        }
        let exchange = try JSON.parse(String(lines[0]))
        XCTAssertEqual(exchange.pointer("/request/body")?.string, "grant_type=refresh_token&refresh_token=[redacted]")
        XCTAssertEqual(exchange.pointer("/request/headers/Authorization")?.string, "[redacted]")
        XCTAssertEqual(exchange.pointer("/response/body/access_token")?.string, "[redacted]")
        XCTAssertEqual(exchange.pointer("/response/body/refresh_token")?.string, "[redacted]")
        XCTAssertEqual(exchange.pointer("/response/body/expires_in")?.integer, 3600)

        // The server is gone: the replay answers the token endpoint and the API alike.
        let environment = HTTPSourceEnvironment(clock: TestClock(), secrets: LearnedSecrets())
        let source = HTTPSource(url: url, auth: auth)
        let replay = ReplayTransport(file: file, redactor: HTTPRedactor(source: source, exemptQueryNames: HTTPRedactor.pagingNames(paging, pageSizeParam: nil), learned: environment.secrets))
        let collection = authCollection(source, transport: replay, environment: environment)
        let replayed = try await loadAll(collection).ids
        XCTAssertEqual(replayed, Self.strings(1...6))
        let answered = await replay.answered
        XCTAssertEqual(answered, 6)
    }
}
