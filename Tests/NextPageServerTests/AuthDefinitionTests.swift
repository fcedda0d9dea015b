import Jansson
import NextPage
@testable import NextPageServer
import XCTest

/// `source.auth`, `source.rateLimit` and `source.maxRateLimitWait` in
/// collection definitions: what they become, the errors that name the
/// field, the transcript's redaction of them, and their wire shapes.
final class AuthDefinitionTests: XCTestCase {
    private let environment = ["CLIENT_SECRET": "cs-from-env-123", "GH_TOKEN": "ghp_envtoken99"]

    private func source(_ auth: String, extra: String = "", allowsCommands: Bool = true) throws(DefinitionError) -> HTTPSource {
        let text = #"{"collections": {"x": {"source": {"type": "http", "url": "https://api.example.com/items", "auth": \#(auth)\#(extra)}, "paging": {"strategy": "cursor"}}}}"#
        let validator = DefinitionValidator(baseDirectory: "/etc/nextpage", environment: environment, allowsCommands: allowsCommands)
        let definitions = try validator.validateConfig(try! JSON.parse(text))
        guard case .http(let source) = definitions[0].definition.source else { preconditionFailure("not http") }
        return source
    }

    private func error(_ auth: String, extra: String = "", allowsCommands: Bool = true, file: StaticString = #filePath, line: UInt = #line) -> String? {
        do {
            _ = try source(auth, extra: extra, allowsCommands: allowsCommands)
            XCTFail("expected a definition error", file: file, line: line)
            return nil
        } catch {
            return error.fieldAndExpected
        }
    }

    func testEachAuthTypeValidates() throws {
        XCTAssertEqual(try source(#"{"type": "bearer", "token": "${env:GH_TOKEN}"}"#).auth, .bearer(token: "ghp_envtoken99"))
        XCTAssertEqual(try source(#"{"type": "basic", "username": "me", "password": "pw"}"#).auth, .basic(username: "me", password: "pw"))
        XCTAssertEqual(try source(#"{"type": "header", "name": "X-Api-Key", "value": "k"}"#).auth, .header(name: "X-Api-Key", value: "k"))
        XCTAssertEqual(
            try source(#"{"type": "command", "argv": ["bin/token.sh", "--for", "api"], "timeout": 3}"#).auth,
            .command(CredentialCommand(argv: ["/etc/nextpage/bin/token.sh", "--for", "api"], scheme: "Bearer", timeout: 3)))
        XCTAssertEqual(try source(#"{"type": "command", "argv": ["gh", "auth", "token"], "scheme": ""}"#).auth,
                       .command(CredentialCommand(argv: ["gh", "auth", "token"], scheme: "", timeout: 10)))
        XCTAssertEqual(
            try source(#"{"type": "oauth2", "tokenUrl": "https://auth.example.com/token", "clientId": "me", "clientSecret": "${env:CLIENT_SECRET}", "scopes": ["a", "b"], "refreshToken": "rt-1", "clientAuth": "body"}"#).auth,
            .oauth2(OAuth2Settings(
                tokenURL: "https://auth.example.com/token", clientId: "me", clientSecret: "cs-from-env-123", scopes: ["a", "b"],
                refreshToken: "rt-1", clientAuthentication: .body)))
        let limited = try source(#"{"type": "bearer", "token": "t"}"#, extra: #", "rateLimit": {"requestsPerSecond": 1.5, "burst": 4}, "maxRateLimitWait": 0"#)
        XCTAssertEqual(limited.rateLimit, RequestRate(requestsPerSecond: 1.5, burst: 4))
        XCTAssertEqual(limited.maxRateLimitWait, 0)
        let defaults = try source(#"{"type": "bearer", "token": "t"}"#)
        XCTAssertNil(defaults.rateLimit)
        XCTAssertEqual(defaults.maxRateLimitWait, 60)
    }

    func testErrorsNameTheField() {
        let prefix = "collections.x.source"
        XCTAssertEqual(error(#""Bearer x""#), "\(prefix).auth: expected an object with \"type\" (one of bearer, basic, header, command, oauth2)")
        XCTAssertEqual(error(#"{"type": "digest"}"#), "\(prefix).auth.type: expected one of bearer, basic, header, command, oauth2")
        XCTAssertEqual(error(#"{"type": "bearer"}"#), "\(prefix).auth.token: expected a non-empty token")
        XCTAssertEqual(error(#"{"type": "bearer", "token": "a\nb"}"#), "\(prefix).auth.token: expected a value without line breaks or NUL (it is sent in a header)")
        XCTAssertEqual(error(#"{"type": "bearer", "token": "t", "clientId": "x"}"#), "\(prefix).auth.clientId: expected no such field for bearer auth (known: token, type)")
        XCTAssertEqual(error(#"{"type": "basic", "username": "a:b", "password": "p"}"#), "\(prefix).auth.username: expected a user name without \":\" (RFC 7617)")
        XCTAssertEqual(error(#"{"type": "header", "name": "X Key", "value": "v"}"#), "\(prefix).auth.name: expected a header name (letters, digits and !#$%&'*+-.^_`|~)")
        XCTAssertEqual(error(#"{"type": "command", "argv": []}"#), "\(prefix).auth.argv: expected a non-empty array of strings: the program, then its arguments")
        XCTAssertEqual(error(#"{"type": "command", "argv": ["gh"], "timeout": 0}"#), "\(prefix).auth.timeout: expected a number of seconds > 0 (at most 86400)")
        XCTAssertEqual(error(#"{"type": "oauth2", "tokenUrl": "ftp://x/token", "clientId": "me", "clientSecret": "s"}"#), "\(prefix).auth.tokenUrl: expected an http or https URL")
        XCTAssertEqual(error(#"{"type": "oauth2", "tokenUrl": "https://x/token", "clientSecret": "s"}"#), "\(prefix).auth.clientId: expected a non-empty string")
        XCTAssertEqual(error(#"{"type": "oauth2", "tokenUrl": "https://x/token", "clientId": "me", "clientSecret": "s", "scopes": ["a b"]}"#), "\(prefix).auth.scopes.0: expected a scope (a non-empty string without spaces)")
        XCTAssertEqual(error(#"{"type": "oauth2", "tokenUrl": "https://x/token", "clientId": "me", "clientSecret": "s", "clientAuth": "jwt"}"#), "\(prefix).auth.clientAuth: expected one of basic, body")
        XCTAssertEqual(error(#"{"type": "bearer", "token": "t"}"#, extra: #", "rateLimit": {"requestsPerSecond": 0}"#), "\(prefix).rateLimit.requestsPerSecond: expected a number of requests per second > 0 (at most 1000000)")
        XCTAssertEqual(error(#"{"type": "bearer", "token": "t"}"#, extra: #", "rateLimit": {"requestsPerSecond": 1, "burst": 0}"#), "\(prefix).rateLimit.burst: expected an integer from 1 to 1000000")
        XCTAssertEqual(error(#"{"type": "bearer", "token": "t"}"#, extra: #", "maxRateLimitWait": -1"#), "\(prefix).maxRateLimitWait: expected a number of seconds ≥ 0 (at most 86400)")
        // A credential helper is a program: at run time only with --allow-commands.
        XCTAssertEqual(
            error(#"{"type": "command", "argv": ["gh", "auth", "token"]}"#, allowsCommands: false),
            "\(prefix).auth.type: expected one of bearer, basic, header, oauth2 (a command credential helper can be defined at run time only when the server runs with --allow-commands; the config file may always use one)")
    }

    func testAnUnsetVariableInAuthKeepsTheCollectionUnavailable() throws {
        let text = #"{"collections": {"x": {"source": {"type": "http", "url": "https://api.example.com/items", "auth": {"type": "oauth2", "tokenUrl": "${env:NOT_SET_TOKEN_URL}", "clientId": "me", "clientSecret": "${env:NOT_SET_SECRET}"}}, "paging": {"strategy": "cursor"}}}}"#
        let definitions = try DefinitionValidator(environment: [:]).validateConfig(try JSON.parse(text))
        XCTAssertEqual(
            definitions[0].definition.unavailable,
            "environment variable NOT_SET_TOKEN_URL is not set (for ${env:NOT_SET_TOKEN_URL} in collections.x.source.auth.tokenUrl)")
    }

    func testTranscriptsRedactTheSecretsOfAuth() throws {
        var redactor = TranscriptRedactor(collections: [], validator: DefinitionValidator(environment: [:]))
        let define = try JSON.parse(#"""
            {"jsonrpc":"2.0","id":1,"method":"define","params":{"name":"api","source":{"type":"http","url":"https://api.example.com/x",
             "auth":{"type":"oauth2","tokenUrl":"https://auth.example.com/token","clientId":"me","clientSecret":"cs-LiteralSecret1","refreshToken":"rt-Literal22"}},
             "paging":{"strategy":"cursor"}}}
            """#)
        let redacted = redactor.redactIncoming(define).compactString
        XCTAssertTrue(redacted.contains(#""auth":{"type":"oauth2","tokenUrl":"https://auth.example.com/token","clientId":"me","clientSecret":"[redacted]","refreshToken":"[redacted]"}"#), redacted)
        // Learned from the definition: scrubbed from what follows.
        let echo = Array(#"{"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"cs-LiteralSecret1 rt-Literal22"}}"#.utf8)
        XCTAssertEqual(String(decoding: redactor.scrub(echo), as: UTF8.self), #"{"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"[redacted] [redacted]"}}"#)
        for (type, member) in [("bearer", #""token":"tk-Literal-333""#), ("basic", #""username":"u","password":"pw-Literal-444""#), ("header", #""name":"X-K","value":"hv-Literal-555""#)] {
            let text = #"{"jsonrpc":"2.0","id":3,"method":"define","params":{"name":"b","source":{"type":"http","url":"https://x.example.com","auth":{"type":"\#(type)",\#(member)}},"paging":{"strategy":"link"}}}"#
            let clean = redactor.redactIncoming(try JSON.parse(text)).compactString
            XCTAssertFalse(clean.contains("Literal"), clean)
        }
    }

    func testWireShapesOfRateLimitAndRetryAt() throws {
        let state = try Wire.state("c", NextPageState(), rateLimit: RateLimitStatus(remaining: 0, resetAt: 1_800_000_030.2)).parsed()
        XCTAssertEqual(state["rateLimit"]?.compactString, #"{"remaining":0,"resetAt":1800000031}"#)
        XCTAssertNil(try Wire.state("c", NextPageState()).parsed()["rateLimit"], "absent when the source reported none")
        let error = Wire.error(.upstream(UpstreamFailure(status: 403, attempts: 1, retryable: true, message: "m", retryAt: 1_800_000_600)), collection: "c")
        XCTAssertEqual(error.code, -32002)
        let data = try XCTUnwrap(error.data).parsed()
        XCTAssertEqual(data["retryAt"]?.integer, 1_800_000_600)
        XCTAssertEqual(data["retryable"]?.bool, true)
        let plain = try XCTUnwrap(Wire.error(.upstream(UpstreamFailure(retryable: false, message: "m")), collection: "c").data).parsed()
        XCTAssertNil(plain["retryAt"])
    }
}
