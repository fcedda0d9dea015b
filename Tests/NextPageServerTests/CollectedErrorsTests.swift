import Foundation
import Jansson
import NextPage
@testable import NextPageServer
import XCTest

extension DefinitionError {
    /// `FIELD: expected EXPECTED`: what -32004's data says, without the value found.
    var fieldAndExpected: String { "\(field): expected \(expected)" }
}

/// `checkConfig` and `check`: every error of a document in one run, each
/// with the value found (secrets redacted) and the nearest valid name; the
/// first of them is what `validate`, `validateConfig` and so `define` throw.
final class CollectedErrorsTests: XCTestCase {
    private var dir = ""

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "nextpage-collected-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/pages", withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    private func configErrors(_ text: String, environment: [String: String] = [:]) throws -> [String] {
        let checked = DefinitionValidator(baseDirectory: dir, environment: environment).checkConfig(try JSON.parse(text))
        XCTAssertTrue(checked.collections.isEmpty, "collections of an invalid config: \(checked.collections.map(\.name))")
        return checked.errors.map(\.description)
    }

    private func defineErrors(_ text: String, environment: [String: String] = [:]) throws -> [String] {
        let checked = DefinitionValidator(baseDirectory: dir, environment: environment).check(try JSON.parse(text), ignoring: ["name"])
        XCTAssertNil(checked.definition)
        return checked.errors.map(\.description)
    }

    func testEveryErrorOfAConfigInTheOrderOfTheFileWithValueAndSuggestion() throws {
        let errors = try configErrors(#"""
            {"colections": {},
             "collections": {
               "a": {"source": {"type": "file", "dir": "pages"}, "paging": {"strategy": "curser", "itmes": "/items"},
                     "pagesize": 30, "prefetch": 5, "onRepeatedCursor": "Stop"},
               "b": {"source": {"type": "http", "url": "https://api.example.com/x", "method": "get", "timout": 3, "retries": -1},
                     "paging": {"strategy": "link"}, "maxItems": "all"},
               "ok": {"source": {"type": "file", "dir": "pages"}, "paging": {"strategy": "cursor"}}}}
            """#)
        XCTAssertEqual(errors, [
            #"colections: expected no such field (known: collections), got {}; did you mean "collections"?"#,
            #"collections.a.pagesize: expected no such field (known: concurrency, dedupe, incremental, maxEmptyPages, maxItems, onRepeatedCursor, pageSize, pageSizeParam, paging, prefetch, source), got 30; did you mean "pageSize"?"#,
            #"collections.a.paging.itmes: expected no such field (known: bodyPointer, hasNext, header, id, items, limitParam, next, nextHeader, param, start, strategy, total), got "/items"; did you mean "items"?"#,
            #"collections.a.paging.strategy: expected one of cursor, lastId, page, offset, link, nextUrl, auto, got "curser"; did you mean "cursor"?"#,
            #"collections.a.prefetch: expected an integer from 0 to 2, got 5"#,
            #"collections.a.onRepeatedCursor: expected one of stop, error, got "Stop"; did you mean "stop"?"#,
            #"collections.b.source.timout: expected no such field for an http source (known: auth, body, headers, maxBodyBytes, maxRateLimitWait, method, query, rateLimit, retries, timeout, type, url), got 3; did you mean "timeout"?"#,
            #"collections.b.source.method: expected one of GET, POST, got "get"; did you mean "GET"?"#,
            #"collections.b.source.retries: expected an integer from 0 to 100, got -1"#,
            #"collections.b.maxItems: expected an integer ≥ 0, got "all""#,
        ])
    }

    func testTheFirstCollectedErrorIsTheOneThrown() throws {
        let text = #"{"name": "x", "pagesize": 3, "source": {"type": "file", "dir": "nowhere"}, "paging": {"strategy": "page", "start": -1}}"#
        let all = try defineErrors(text)
        XCTAssertEqual(all.count, 3, "\(all)")
        XCTAssertThrowsError(try DefinitionValidator(baseDirectory: dir).validate(try JSON.parse(text), ignoring: ["name"])) { error in
            let error = error as? DefinitionError
            // -32004's data is the first error's field and expectation, as before.
            XCTAssertEqual(error?.field, "pagesize")
            XCTAssertEqual(error?.expected.hasPrefix("no such field (known: "), true)
            XCTAssertEqual(error?.description, all.first)
            XCTAssertEqual(error?.suggestion, "pageSize")
        }
        let wire = Wire.invalidDefinition(DefinitionValidator(baseDirectory: dir).check(try JSON.parse(text), ignoring: ["name"]).errors[0])
        XCTAssertEqual(wire.code, -32004)
        XCTAssertEqual(wire.data?.description, #"{"field":"pagesize","expected":"no such field (known: concurrency, dedupe, incremental, maxEmptyPages, maxItems, onRepeatedCursor, pageSize, pageSizeParam, paging, prefetch, source)"}"#)
        XCTAssertTrue(wire.message.hasSuffix(#", got 3; did you mean "pageSize"?"#), wire.message)
    }

    func testChecksThatDependOnAnInvalidPartAreSkipped() throws {
        // No source: whether the strategy, nextHeader or a cursor place suit it cannot be told.
        XCTAssertEqual(try defineErrors(#"{"paging": {"strategy": "cursor", "nextHeader": "X-Next"}}"#), [
            #"source: expected an object with "type""#,
        ])
        XCTAssertEqual(try defineErrors(#"{"paging": {"strategy": "link", "bodyPointer": "/after"}}"#), [
            #"source: expected an object with "type""#,
        ])
        // With a file source, both are errors.
        XCTAssertEqual(try defineErrors(#"{"source": {"type": "file", "dir": "pages"}, "paging": {"strategy": "link", "nextHeader": "X-Next"}}"#).count, 2)
        // An unknown source type: only fields no source has are reported (with the nearest).
        XCTAssertEqual(try defineErrors(#"{"source": {"type": "fiel", "dri": "pages", "url": "https://a"}, "paging": {"strategy": "link"}}"#), [
            #"source.type: expected one of file, http, command, got "fiel"; did you mean "file"?"#,
            #"source.dri: expected no such field for any source (known: argv, auth, body, dir, env, headers, maxBodyBytes, maxRateLimitWait, method, query, rateLimit, retries, timeout, type, url), got "pages"; did you mean "dir"?"#,
        ])
        // An unknown strategy: the cursor placement it would need is not judged; the other paging fields are.
        XCTAssertEqual(try defineErrors(#"{"source": {"type": "http", "url": "https://a"}, "paging": {"strategy": "links", "header": "X-C", "items": "items"}}"#), [
            #"paging.strategy: expected one of cursor, lastId, page, offset, link, nextUrl, auto, got "links"; did you mean "link"?"#,
            #"paging.items: expected a JSON Pointer ("" or starting with "/"), got "items""#,
        ])
        // A bad method: a body is not judged against it.
        XCTAssertEqual(try defineErrors(#"{"source": {"type": "http", "url": "https://a", "method": "PUT", "body": {"q": 1}}, "paging": {"strategy": "cursor"}}"#), [
            #"source.method: expected one of GET, POST, got "PUT""#,
        ])
        // Each query item, header, scope and command argument is checked.
        XCTAssertEqual(try defineErrors(#"{"source": {"type": "http", "url": "https://a", "query": {"a": 1, "b": "2", "c": [3]}, "auth": {"type": "oauth2", "tokenUrl": "https://a/t", "clientId": "me", "clientSecret": "s", "scopes": ["ok", "a b", ""], "clientAuth": "Body"}}, "paging": {"strategy": "cursor"}}"#), [
            #"source.query.a: expected a string, got 1"#,
            #"source.query.c: expected a string, got [3]"#,
            #"source.auth.scopes.1: expected a scope (a non-empty string without spaces), got "a b""#,
            #"source.auth.scopes.2: expected a scope (a non-empty string without spaces), got """#,
            #"source.auth.clientAuth: expected one of basic, body, got "Body"; did you mean "body"?"#,
        ])
    }

    func testSecretsAreNeverShown() throws {
        let environment = ["TOKEN": "tok-line1\ntok-line2", "HOST": "api.example.com"]
        let errors = try configErrors(#"""
            {"collections": {"x": {"source": {"type": "http", "url": "ftp://me:hunter2pw@${env:HOST}/x",
                                              "headers": {"Authorization": "Bearer ${env:TOKEN}", "X-Api-Key": 12345, "X-Plain": 7},
                                              "query": {"api_key": ["sk-query-secret"]},
                                              "auth": {"type": "oauth2", "tokenUrl": "https://a/t", "clientId": "me", "clientSecret": ["sk-client-secret"], "refresh": "rt-secret"}},
                                   "paging": {"strategy": "cursor"}},
                             "y": {"source": {"type": "http", "url": "https://me:hunter2pw@api.example.com/x", "headers": ["Authorization: Bearer sk-in-a-list"], "auth": "Bearer sk-auth-string"},
                                   "paging": {"strategy": "cursor", "param": 5}},
                             "z": {"source": {"type": "command", "argv": ["x"], "env": {"API_TOKEN": 42, "MODE": 1}}, "paging": {"strategy": "cursor"}}}}
            """#, environment: environment)
        XCTAssertEqual(errors, [
            "collections.x.source.url: expected an http or https URL, got [redacted]",
            "collections.x.source.query.api_key: expected a string, got [redacted]",
            "collections.x.source.headers.Authorization: expected a header value without line breaks, got [redacted]",
            "collections.x.source.headers.X-Api-Key: expected a string, got [redacted]",
            "collections.x.source.headers.X-Plain: expected a string, got 7",
            "collections.x.source.auth.refresh: expected no such field for oauth2 auth (known: clientAuth, clientId, clientSecret, refreshToken, scopes, tokenUrl, type), got [redacted]; did you mean \"refreshToken\"?",
            "collections.x.source.auth.clientSecret: expected a string, got [redacted]",
            "collections.y.source.headers: expected an object of strings, got [redacted]",
            "collections.y.source.auth: expected an object with \"type\" (one of bearer, basic, header, command, oauth2), got [redacted]",
            "collections.y.paging.param: expected a non-empty string, got 5",
            "collections.z.source.env.API_TOKEN: expected a string, got [redacted]",
            "collections.z.source.env.MODE: expected a string, got 1",
        ])
        for secret in ["tok-line", "hunter2pw", "sk-", "rt-secret", "12345", "42"] {
            XCTAssertFalse(errors.joined().contains(secret), "\(secret) shown")
        }
        // A URL's user info never shows, wherever the URL is.
        let url = try configErrors(#"{"collections": {"x": {"source": {"type": "http", "url": "ftp://me:hunter2pw@a/x?token=sk-q&page=2"}, "paging": {"strategy": "cursor"}}}}"#)
        XCTAssertEqual(url, [#"collections.x.source.url: expected an http or https URL, got "ftp://[redacted]@a/x?token=[redacted]&page=2""#])
        let whole = try configErrors(#"{"collections": {"x": {"source": {"type": "http", "url": "https://me:hunter2pw@a/x", "body": "b"}, "paging": {"strategy": "cursor"}}, "y": 5}}"#)
        XCTAssertEqual(whole, [#"collections.x.source.body: expected a JSON object, got "b""#, "collections.y: expected an object, got 5"])
    }

    func testLongValuesAreShortened() throws {
        let long = String(repeating: "abcdefghij", count: 20)
        let errors = try defineErrors(#"{"source": {"type": "file", "dir": "pages"}, "paging": {"strategy": "\#(long)"}}"#)
        XCTAssertEqual(errors.count, 1)
        let got = errors[0].components(separatedBy: ", got ").last ?? ""
        XCTAssertEqual(got.count, 80)
        XCTAssertTrue(got.hasPrefix("\"abcdefghij"), got)
        XCTAssertTrue(got.hasSuffix("…"), got)
    }

    // MARK: Unset variables under --replay-upstream

    private func http(_ source: String) -> String {
        #"{"collections": {"c": {"source": {"type": "http", "url": "https://api.example.com/x", \#(source)}, "paging": {"strategy": "link"}}}}"#
    }

    private func replayConfig(_ source: String, replay: Bool = true) throws -> CollectionDefinition {
        var validator = DefinitionValidator(environment: ["SET": "set-value"])
        validator.replaysUpstream = replay
        let collections = try validator.validateConfig(try JSON.parse(http(source)))
        return collections[0].definition
    }

    func testUnderReplayAnUnsetVariableOnlyCredentialsUseLeavesTheCollectionUsable() throws {
        let source = #""headers": {"Authorization": "Bearer ${env:GH_TOKEN}", "Accept": "x/${env:SET}"}, "auth": {"type": "basic", "username": "${env:USER_NAME}", "password": "${env:PASS}"}"#
        let replayed = try replayConfig(source)
        XCTAssertNil(replayed.unavailable)
        XCTAssertEqual(replayed.unsetForReplay, [
            UnsetVariable(name: "GH_TOKEN", field: "collections.c.source.headers.Authorization", credential: true),
            UnsetVariable(name: "USER_NAME", field: "collections.c.source.auth.username", credential: true),
            UnsetVariable(name: "PASS", field: "collections.c.source.auth.password", credential: true),
        ])
        guard case .http(let http) = replayed.source else { return XCTFail("not http") }
        // The header without its variable is not sent at all; the others are.
        XCTAssertEqual(http.headers.map(\.name), ["Accept"])
        XCTAssertEqual(http.headers.first?.value, "x/set-value")

        // Without a replay, the first unset variable keeps the collection from fetching, as before.
        let live = try replayConfig(source, replay: false)
        XCTAssertEqual(live.unavailable, "environment variable GH_TOKEN is not set (for ${env:GH_TOKEN} in collections.c.source.headers.Authorization)")
        XCTAssertEqual(live.unsetForReplay, [])
    }

    func testUnderReplayAnUnsetVariableInTheURLQueryOrTokenRequestStillFails() throws {
        let query = try replayConfig(#""headers": {"Authorization": "${env:GH_TOKEN}"}, "query": {"org": "${env:ORG}"}"#)
        XCTAssertEqual(query.unavailable, "environment variable ORG is not set (for ${env:ORG} in collections.c.source.query.org)")
        let url = try replayConfig(#""headers": {"X": "1"}, "auth": {"type": "bearer", "token": "${env:URL_PART}"}, "method": "GET""#)
        XCTAssertNil(url.unavailable)
        // The client id goes in the token request's body with clientAuth body (which a replay matches), else in a header.
        let body = try replayConfig(#""auth": {"type": "oauth2", "tokenUrl": "https://a/t", "clientId": "${env:CID}", "clientSecret": "${env:CS}", "clientAuth": "body"}"#)
        XCTAssertEqual(body.unavailable, "environment variable CID is not set (for ${env:CID} in collections.c.source.auth.clientId)")
        let basic = try replayConfig(#""auth": {"type": "oauth2", "tokenUrl": "https://a/t", "clientId": "${env:CID}", "clientSecret": "${env:CS}"}"#)
        XCTAssertNil(basic.unavailable)
        let tokenURL = try replayConfig(#""auth": {"type": "oauth2", "tokenUrl": "https://${env:IDP}/t", "clientId": "me", "clientSecret": "${env:CS}"}"#)
        XCTAssertEqual(tokenURL.unavailable, "environment variable IDP is not set (for ${env:IDP} in collections.c.source.auth.tokenUrl)")
    }

    func testUnderReplayDefineTakesAnUnsetHeaderVariableButNotAQueryOne() throws {
        var validator = DefinitionValidator(environment: [:])
        validator.replaysUpstream = true
        let header = validator.check(try JSON.parse(#"{"name": "c", "source": {"type": "http", "url": "https://a/x", "headers": {"Authorization": "Bearer ${env:T}"}}, "paging": {"strategy": "link"}}"#), ignoring: ["name"])
        XCTAssertEqual(header.errors, [])
        XCTAssertEqual(header.definition?.unsetForReplay, [UnsetVariable(name: "T", field: "source.headers.Authorization", credential: true)])
        let query = validator.check(try JSON.parse(#"{"name": "c", "source": {"type": "http", "url": "https://a/x", "query": {"k": "${env:K}"}}, "paging": {"strategy": "link"}}"#), ignoring: ["name"])
        XCTAssertEqual(query.errors.map(\.fieldAndExpected), ["source.query.k: expected environment variable K to be set (for ${env:K})"])
        // Without a replay, define rejects an unset header variable, as before.
        validator.replaysUpstream = false
        let live = validator.check(try JSON.parse(#"{"name": "c", "source": {"type": "http", "url": "https://a/x", "headers": {"Authorization": "Bearer ${env:T}"}}, "paging": {"strategy": "link"}}"#), ignoring: ["name"])
        XCTAssertEqual(live.errors.map(\.fieldAndExpected), ["source.headers.Authorization: expected environment variable T to be set (for ${env:T})"])
    }

    func testOneReplayWarningPerVariable() throws {
        var validator = DefinitionValidator(environment: [:])
        validator.replaysUpstream = true
        let collections = try validator.validateConfig(try JSON.parse(#"""
            {"collections": {
              "a": {"source": {"type": "http", "url": "https://a/x", "headers": {"Authorization": "Bearer ${env:T}", "X-Other": "${env:T}"}}, "paging": {"strategy": "link"}},
              "b": {"source": {"type": "http", "url": "https://a/y", "headers": {"Authorization": "Bearer ${env:T}", "X-Key": "${env:K}"}}, "paging": {"strategy": "link"}}}}
            """#))
        XCTAssertEqual(ServerLauncher.replayWarnings(collections), [
            "environment variable T is not set (for ${env:T} in collections.a.source.headers.Authorization and 2 more fields): replaying without it, as a replay sends no credentials",
            "environment variable K is not set (for ${env:K} in collections.b.source.headers.X-Key): replaying without it, as a replay sends no credentials",
        ])
    }
}
