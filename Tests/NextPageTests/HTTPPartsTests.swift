import Jansson
import NextPage
import XCTest

/// The pieces of the http source that need no server: URL text, retry
/// timing, redaction, `${env:NAME}`, body pointers and request building.
final class HTTPPartsTests: XCTestCase {
    // MARK: URLs

    func testEncodeComponentKeepsOnlyUnreservedBytes() {
        XCTAssertEqual(HTTPURL.encodeComponent("AZaz09-._~"), "AZaz09-._~")
        XCTAssertEqual(HTTPURL.encodeComponent("a b+c&d=e#f/g?h%i"), "a%20b%2Bc%26d%3De%23f%2Fg%3Fh%25i")
        XCTAssertEqual(HTTPURL.encodeComponent("ü€😀"), "%C3%BC%E2%82%AC%F0%9F%98%80")
    }

    func testEncodeIllegalLeavesAValidURLUntouched() {
        let url = "https://api.example.com/a/b;c?x=a%2Bb&y=+&z=~!$'()*,:@/?"
        XCTAssertEqual(HTTPURL.encodeIllegal(url), url)
        XCTAssertEqual(HTTPURL.encodeIllegal("http://h/a b?q=ü&r=100%&s=%zz|"), "http://h/a%20b?q=%C3%BC&r=100%25&s=%25zz%7C")
    }

    func testEncodeIllegalEncodesBracketsOutsideAnIPv6Host() {
        // Raw brackets in a query made the HTTP client encode the whole query again (`%2B` as `%252B`).
        XCTAssertEqual(HTTPURL.encodeIllegal("http://h/x?filter[state]=open&c=a%2Bb"), "http://h/x?filter%5Bstate%5D=open&c=a%2Bb")
        XCTAssertEqual(HTTPURL.encodeIllegal("http://[::1]:8080/p[1]?a=[]#f[2]"), "http://[::1]:8080/p%5B1%5D?a=%5B%5D#f%5B2%5D")
        XCTAssertEqual(HTTPURL.encodeIllegal("https://u@[fe80::1]?page[n]=2"), "https://u@[fe80::1]?page%5Bn%5D=2")
        XCTAssertEqual(HTTPURL.encodeIllegal("//[::1]/a[b]"), "//[::1]/a%5Bb%5D")
        XCTAssertEqual(HTTPURL.encodeIllegal("/n?page[number]=2"), "/n?page%5Bnumber%5D=2")
        XCTAssertEqual(HTTPURL.encodeIllegal("http://h/x?page%5Bsize%5D=5"), "http://h/x?page%5Bsize%5D=5")
    }

    func testResolveFollowsRFC3986Examples() {
        let base = "http://a/b/c/d;p?q"
        let cases: [(String, String)] = [
            ("g:h", "g:h"), ("g", "http://a/b/c/g"), ("./g", "http://a/b/c/g"), ("g/", "http://a/b/c/g/"),
            ("/g", "http://a/g"), ("//g", "http://g"), ("?y", "http://a/b/c/d;p?y"), ("g?y", "http://a/b/c/g?y"),
            ("#s", "http://a/b/c/d;p?q#s"), ("g#s", "http://a/b/c/g#s"), (";x", "http://a/b/c/;x"), ("", "http://a/b/c/d;p?q"),
            (".", "http://a/b/c/"), ("..", "http://a/b/"), ("../g", "http://a/b/g"), ("../..", "http://a/"),
            ("../../g", "http://a/g"), ("../../../g", "http://a/g"), ("/./g", "http://a/g"), ("g.", "http://a/b/c/g."),
            ("./../g", "http://a/b/g"), ("g;x=1/../y", "http://a/b/c/y"),
        ]
        for (reference, expected) in cases {
            XCTAssertEqual(HTTPURL.resolve(reference, against: base), expected, reference)
        }
    }

    func testSettingQueryItemsKeepsExistingItemsAndReplacesSameNames() {
        XCTAssertEqual(HTTPURL.settingQueryItems([], in: "http://h/p?a=1#f"), "http://h/p?a=1")
        XCTAssertEqual(HTTPURL.settingQueryItems([("b", "x y")], in: "http://h/p"), "http://h/p?b=x%20y")
        XCTAssertEqual(HTTPURL.settingQueryItems([("b", "2")], in: "http://h/p?"), "http://h/p?b=2")
        XCTAssertEqual(
            HTTPURL.settingQueryItems([("a", "3"), ("c", "+")], in: "http://h/p?a=1&b=%2F&a=2&flag"),
            "http://h/p?a=3&b=%2F&flag&c=%2B")
        // Names are compared decoded, however the URL's author wrote them.
        XCTAssertEqual(HTTPURL.settingQueryItems([("$skip", "3"), ("$top", "3")], in: "http://h/users?$skip=0"), "http://h/users?%24skip=3&%24top=3")
        XCTAssertEqual(
            HTTPURL.settingQueryItems([("page[size]", "5")], in: "http://h/p?page[size]=9&page%5bsize%5d=8&x=1"),
            "http://h/p?page%5Bsize%5D=5&x=1")
    }

    func testIsHTTP() {
        XCTAssertTrue(HTTPURL.isHTTP("https://api.example.com"))
        XCTAssertTrue(HTTPURL.isHTTP("HTTP://127.0.0.1:8080/x?y"))
        XCTAssertFalse(HTTPURL.isHTTP("ftp://example.com/x"))
        XCTAssertFalse(HTTPURL.isHTTP("https:///path"))
        XCTAssertFalse(HTTPURL.isHTTP("/relative"))
        XCTAssertFalse(HTTPURL.isHTTP("https://exa mple.com"))
    }

    // MARK: Retry timing

    func testBackoffGrowsWithJitterUpToTheCap() {
        let policy = HTTPRetryPolicy(baseDelay: 0.2, maxDelay: 1)
        for _ in 0..<50 {
            XCTAssert((0.1...0.2).contains(policy.delay(beforeRetry: 1, retryAfter: nil)))
            XCTAssert((0.2...0.4).contains(policy.delay(beforeRetry: 2, retryAfter: nil)))
            XCTAssert((0.5...1).contains(policy.delay(beforeRetry: 10, retryAfter: nil)))
            XCTAssertGreaterThanOrEqual(policy.delay(beforeRetry: 1, retryAfter: 3), 3)
        }
        XCTAssertTrue(policy.refuses(retryAfter: 61))
        XCTAssertFalse(policy.refuses(retryAfter: 60))
        XCTAssertEqual(HTTPRetryPolicy.immediate.delay(beforeRetry: 3, retryAfter: 30), 0)
    }

    func testRetryAfterAcceptsSecondsAndHTTPDates() {
        let now = 784_111_777.0 // Sun, 06 Nov 1994 08:49:37 GMT
        XCTAssertEqual(HTTPRetryPolicy.retryAfterSeconds("120", now: now), 120)
        XCTAssertEqual(HTTPRetryPolicy.retryAfterSeconds(" 0 ", now: now), 0)
        XCTAssertEqual(HTTPRetryPolicy.retryAfterSeconds("Sun, 06 Nov 1994 08:49:47 GMT", now: now), 10)
        XCTAssertEqual(HTTPRetryPolicy.retryAfterSeconds("Sunday, 06-Nov-94 08:49:57 GMT", now: now), 20)
        XCTAssertEqual(HTTPRetryPolicy.retryAfterSeconds("Sun Nov  6 08:50:07 1994", now: now), 30)
        XCTAssertEqual(HTTPRetryPolicy.retryAfterSeconds("Sun, 06 Nov 1994 08:00:00 GMT", now: now), 0)
        XCTAssertNil(HTTPRetryPolicy.retryAfterSeconds("soon", now: now))
        XCTAssertNil(HTTPRetryPolicy.retryAfterSeconds("-5", now: now))
        XCTAssertNil(HTTPRetryPolicy.retryAfterSeconds("Sun, 32 Nov 1994 08:49:37 GMT", now: now))
    }

    // MARK: Secrets

    func testSecretHeaderNames() {
        for name in ["Authorization", "proxy-authorization", "Cookie", "Set-Cookie", "X-Api-Key", "X-Auth-Token", "Private-Token", "X-Client-Secret", "api_key"] {
            XCTAssertTrue(HTTPRedactor.isSecretHeader(name), name)
        }
        for name in ["Accept", "Content-Type", "X-Request-Id", "Link", "User-Agent"] {
            XCTAssertFalse(HTTPRedactor.isSecretHeader(name), name)
        }
    }

    func testRedactorReplacesSecretsButKeepsPagingParameters() {
        let source = HTTPSource(
            url: "https://user:pw-1234@api.example.com/x?access_token=tok-abcdef&page_token=p1",
            query: [("client_secret", "shh-123456")],
            headers: [("Authorization", "Bearer abcdefgh12345"), ("X-Trace", "t")])
        let redactor = HTTPRedactor(source: source, exemptQueryNames: ["page_token"])
        XCTAssertEqual(
            redactor.url("https://user:pw-1234@api.example.com/x?access_token=tok-abcdef&page_token=p1&client_secret=shh-123456"),
            "https://[redacted]@api.example.com/x?access_token=[redacted]&page_token=p1&client_secret=[redacted]")
        XCTAssertEqual(redactor.scrub("echo: Bearer abcdefgh12345 and abcdefgh12345 and shh-123456"), "echo: [redacted] and [redacted] and [redacted]")
        XCTAssertEqual(
            redactor.headers([("Set-Cookie", "a=b"), ("X-Trace", "t"), ("X-Echo", "tok-abcdef")]).map(\.value),
            ["[redacted]", "t", "[redacted]"])
    }

    // MARK: Environment

    func testEnvironmentExpansion() throws {
        let environment = ["TOKEN": "t0k", "HOST": "api.example.com", "EMPTY": ""]
        func expand(_ text: String) throws(HTTPSource.UnsetVariable) -> String {
            try HTTPSource.expandEnvironment(text) { environment[$0] }
        }
        XCTAssertEqual(try expand("https://${env:HOST}/x?t=${env:TOKEN}${env:EMPTY}"), "https://api.example.com/x?t=t0k")
        XCTAssertEqual(try expand("${HOME} ${env:} ${env:1X} ${env:TOKEN"), "${HOME} ${env:} ${env:1X} ${env:TOKEN")
        XCTAssertThrowsError(try expand("Bearer ${env:MISSING_TOKEN}")) { error in
            XCTAssertEqual(error as? HTTPSource.UnsetVariable, HTTPSource.UnsetVariable(name: "MISSING_TOKEN"))
        }
    }

    // MARK: Requests

    func testBodyPointerInsertion() throws {
        let root = try JSON.parse(#"{"a": {"b": 1}, "list": [1]}"#)
        XCTAssertTrue(HTTPPageClient.insert(.string("x"), at: "/a/c", into: root))
        XCTAssertTrue(HTTPPageClient.insert(.string("y"), at: "/new/deep/er", into: root))
        XCTAssertTrue(HTTPPageClient.insert(.integer(2), at: "/list/-", into: root))
        XCTAssertTrue(HTTPPageClient.insert(.string("z"), at: "/a~1b~0c", into: root))
        XCTAssertFalse(HTTPPageClient.insert(.string("no"), at: "/a/b/c", into: root))
        XCTAssertFalse(HTTPPageClient.insert(.string("no"), at: "/list/0", into: root))
        XCTAssertFalse(HTTPPageClient.insert(.string("no"), at: "", into: root))
        XCTAssertEqual(root.compactString, #"{"a":{"b":1,"c":"x"},"list":[1,2],"new":{"deep":{"er":"y"}},"a/b~c":"z"}"#)
    }

    func testExchangeRequestForEachPlacement() throws {
        let source = HTTPSource(url: "https://h/p?k=v", method: .post, body: RawJSON(trusted: Array(#"{"v":{}}"#.utf8)))
        let client = HTTPPageClient(source: source, transport: ReplayTransport(file: "/nonexistent"))
        func request(_ cursor: Cursor?, _ paging: Paging, pageSize: Int? = nil, pageSizeParam: String? = nil) throws -> HTTPExchangeRequest {
            try client.exchangeRequest(for: PageRequest(
                cursor: cursor, isFirstPage: cursor == nil, paging: paging,
                options: CollectionOptions(pageSize: pageSize, pageSizeParam: pageSizeParam)))
        }
        let query = try request(.string("a b"), Paging(strategy: .cursor), pageSize: 10, pageSizeParam: "n")
        XCTAssertEqual(query.method, "POST")
        XCTAssertEqual(query.url, "https://h/p?k=v&cursor=a%20b&n=10")
        XCTAssertEqual(query.body.map { String(decoding: $0, as: UTF8.self) }, #"{"v":{}}"#)
        XCTAssertEqual(query.headers.map(\.name), ["Accept", "User-Agent", "Content-Type"])

        // A configured body's reals go out as written in the config, not as jansson's 17 digits.
        let decimals = HTTPSource(url: "https://h/p", method: .post, body: RawJSON(trusted: Array(#"{"min_price":0.1,"ratio":1.10}"#.utf8)))
        let posted = try HTTPPageClient(source: decimals, transport: ReplayTransport(file: "/nonexistent")).exchangeRequest(for: PageRequest(
            cursor: .string("c"), isFirstPage: false, paging: Paging(strategy: .cursor, bodyPointer: "/after"), options: CollectionOptions()))
        XCTAssertEqual(posted.body.map { String(decoding: $0, as: UTF8.self) }, #"{"min_price":0.1,"ratio":1.1,"after":"c"}"#)

        let body = try request(.integer(40), Paging(strategy: .offset, bodyPointer: "/v/offset"), pageSize: 20)
        XCTAssertEqual(body.url, "https://h/p?k=v&limit=20")
        XCTAssertEqual(body.body.map { String(decoding: $0, as: UTF8.self) }, #"{"v":{"offset":40}}"#)

        let header = try request(.string("c\u{00FC}"), Paging(strategy: .cursor, header: "X-Cursor"))
        XCTAssertEqual(header.url, "https://h/p?k=v")
        XCTAssertEqual(header.headers.first { $0.name == "X-Cursor" }?.value, "c\u{00FC}")

        XCTAssertThrowsError(try request(.string("bad\r\nInjected: 1"), Paging(strategy: .cursor, header: "X-Cursor"))) { error in
            guard case .upstream(let failure)? = error as? LoadError else { return XCTFail("\(error)") }
            XCTAssertFalse(failure.retryable)
        }

        // A next URL is followed as given, and asks for pageSize when it does not already.
        let link = try request(.string("https://other/next?page=2&x=%2B"), Paging(strategy: .link), pageSize: 5, pageSizeParam: "n")
        XCTAssertEqual(link.url, "https://other/next?page=2&x=%2B&n=5")
        let sized = try request(.string("https://other/next?n=7&page=2#top"), Paging(strategy: .link), pageSize: 5, pageSizeParam: "n")
        XCTAssertEqual(sized.url, "https://other/next?n=7&page=2#top")
        // However the URL spells the name (JSON:API's page[size], raw or escaped in either case).
        for spelled in ["page[size]=10", "page%5Bsize%5D=10", "page%5bsize%5d=10"] {
            let next = try request(.string("https://other/next?\(spelled)&page[number]=2"), Paging(strategy: .nextUrl), pageSize: 5, pageSizeParam: "page[size]")
            XCTAssertFalse(next.url.contains("=5"), "no second page size: \(next.url)")
            XCTAssert(next.url.contains("=10&"), next.url)
        }
        let unsized = try request(.string("https://other/next?page=2"), Paging(strategy: .link), pageSize: 5)
        XCTAssertEqual(unsized.url, "https://other/next?page=2")
        let relative = try request(.string("/q?page=3"), Paging(strategy: .nextUrl))
        XCTAssertEqual(relative.url, "https://h/q?page=3")
    }

    func testTheCursorAndPageSizeReplaceQueryItemsOfTheSameName() throws {
        let source = HTTPSource(url: "https://h/p", query: [("cursor", "init"), ("limit", "5"), ("q", "x")])
        let client = HTTPPageClient(source: source, transport: ReplayTransport(file: "/nonexistent"))
        func url(_ cursor: Cursor?, _ paging: Paging, pageSize: Int? = nil, pageSizeParam: String? = nil) throws -> String {
            try client.exchangeRequest(for: PageRequest(
                cursor: cursor, isFirstPage: cursor == nil, paging: paging,
                options: CollectionOptions(pageSize: pageSize, pageSizeParam: pageSizeParam))).url
        }
        // The first page sends the query as configured.
        XCTAssertEqual(try url(nil, Paging(strategy: .cursor)), "https://h/p?cursor=init&limit=5&q=x")
        XCTAssertEqual(try url(.string("n1"), Paging(strategy: .cursor), pageSize: 3, pageSizeParam: "limit"), "https://h/p?q=x&cursor=n1&limit=3")
        XCTAssertEqual(
            try url(.integer(40), Paging(strategy: .offset, param: "cursor", limitParam: "limit"), pageSize: 20),
            "https://h/p?q=x&cursor=40&limit=20")
    }

    func testANextURLOnAnotherOriginGetsNoCredentials() throws {
        let source = HTTPSource(url: "https://api.example.com/items", headers: [
            ("Authorization", "Bearer t0ken-value"), ("X-Api-Key", "k-1"), ("Cookie", "s=1"), ("X-Tenant", "acme"),
        ])
        let client = HTTPPageClient(source: source, transport: ReplayTransport(file: "/nonexistent"))
        func headers(_ next: String) throws -> [String] {
            try client.exchangeRequest(for: PageRequest(
                cursor: .string(next), isFirstPage: false, paging: Paging(strategy: .nextUrl), options: CollectionOptions())).headers.map(\.name)
        }
        let all = ["Authorization", "X-Api-Key", "Cookie", "X-Tenant", "Accept", "User-Agent"]
        XCTAssertEqual(try headers("https://API.example.com:443/items?page=2"), all, "same origin, however written")
        XCTAssertEqual(try headers("/items?page=2"), all, "relative")
        for other in ["https://evil.example.net/items?page=2", "http://api.example.com/items?page=2", "https://api.example.com:8443/items"] {
            XCTAssertEqual(try headers(other), ["X-Tenant", "Accept", "User-Agent"], other)
        }
        XCTAssertEqual(HTTPURL.origin("http://u:p@[::1]/x"), "http://[::1]:80")
        XCTAssertNil(HTTPURL.origin("/relative"))
        for (url, host, port) in [("http://u:p@[::1]:8080/x", "[::1]", "8080"), ("https://u@H.example:444", "h.example", "444"), ("http://h", "h", "")] {
            XCTAssertEqual(HTTPURL.parts(url).host, host, url)
            XCTAssertEqual(HTTPURL.parts(url).port, port, url)
        }
    }

    func testARedirectKeepsCredentialsOnlyOnTheSameOrigin() throws {
        let request = HTTPExchangeRequest(method: "GET", url: "https://api.example.com/v1/items?page=2", headers: [
            ("Authorization", "Bearer t0ken-value"), ("X-Api-Key", "k-1"), ("Cookie", "s=1"), ("Origin", "https://app.example.com"),
            ("X-Page-Token", "cursor-7"), ("X-Tenant", "acme"), ("Accept", "application/json"),
        ], cursorHeader: "x-page-token")
        let names = request.headers.map(\.name)
        func next(_ location: String?, status: Int = 302) -> HTTPExchangeRequest? {
            HTTPRedirect.next(after: request, status: status, location: location)
        }
        XCTAssertEqual(next("/v2/items?page=2")?.url, "https://api.example.com/v2/items?page=2")
        XCTAssertEqual(next("/v2/items?page=2")?.headers.map(\.name), names, "same origin: every header")
        XCTAssertEqual(next("https://API.example.com:443/x")?.headers.map(\.name), names, "same origin, however written")
        for other in ["https://cdn.example.net/items", "http://api.example.com/items", "https://api.example.com:8443/items"] {
            // The cursor header is not a credential: the redirected request still asks for the same page.
            XCTAssertEqual(next(other)?.headers.map(\.name), ["X-Page-Token", "X-Tenant", "Accept"], other)
            XCTAssertEqual(next(other)?.url, other)
        }
        XCTAssertEqual(next("items?x=[1]")?.url, "https://api.example.com/v1/items?x=%5B1%5D", "relative, and encoded as sent")
        XCTAssertNil(next("ftp://files.example.com/x"), "only http(s) is followed")
        XCTAssertNil(next(nil), "no Location")
        XCTAssertNil(next("/x", status: 304))
        XCTAssertNil(next("/x", status: 200))
    }

    func testARedirectChangesTheMethodAsBrowsersDo() throws {
        let post = HTTPExchangeRequest(
            method: "POST", url: "http://h/search", headers: [("Content-Type", "application/json"), ("Accept", "application/json")],
            body: Array(#"{"q":1}"#.utf8))
        for status in [301, 302, 303] {
            let next = try XCTUnwrap(HTTPRedirect.next(after: post, status: status, location: "/results"))
            XCTAssertEqual(next.method, "GET", "\(status)")
            XCTAssertNil(next.body, "\(status)")
            XCTAssertEqual(next.headers.map(\.name), ["Accept"], "\(status)")
        }
        for status in [307, 308] {
            let next = try XCTUnwrap(HTTPRedirect.next(after: post, status: status, location: "/results"))
            XCTAssertEqual(next.method, "POST", "\(status)")
            XCTAssertEqual(next.body, post.body, "\(status)")
            XCTAssertEqual(next.headers.map(\.name), ["Content-Type", "Accept"], "\(status)")
        }
        let get = HTTPExchangeRequest(method: "GET", url: "http://h/a")
        XCTAssertEqual(HTTPRedirect.next(after: get, status: 303, location: "/b")?.method, "GET")
    }
}
