import Jansson
import NIOConcurrencyHelpers
import NextPage
import XCTest

/// `auth` of type `command`: credential helpers written by the tests as
/// small shell scripts, over a real API on 127.0.0.1 that checks the token.
final class CredentialHelperTests: HTTPSourceTestCase {
    private static let pages: [String?: String] = OAuthTestBackend.threePages

    /// A script in a fresh folder; each run appends a line to `runs` in that folder.
    private func helper(_ body: String) throws -> (path: String, runs: String) {
        let folder = try scratchFolder()
        let path = folder + "/token-helper.sh"
        let script = "#!/bin/sh\necho run >> '\(folder)/runs'\n" + body + "\n"
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
        return (path, folder + "/runs")
    }

    private func runs(_ file: String) -> Int {
        ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    /// An API that takes `Bearer` tokens in `accepted` (changed by the test).
    private func api(_ accepted: NIOLockedValueBox<Set<String>>) -> HTTPTestServer.Script {
        { request in
            guard let header = request.header("Authorization"), header.hasPrefix("Bearer "),
                  accepted.withLockedValue({ $0.contains(String(header.dropFirst(7))) }) else {
                return .json(#"{"message": "Bad credentials"}"#, status: 401)
            }
            return Self.pages[request.queryValue("cursor")].map { .json($0) } ?? .status(404)
        }
    }

    private func helperCollection(
        _ server: HTTPTestServer, _ transport: HTTPNetworkTransport, _ argv: [String], clock: TestClock, timeout: Double = 10,
        scheme: String = "Bearer"
    ) -> PagedCollection {
        let environment = HTTPSourceEnvironment(clock: clock, secrets: LearnedSecrets())
        let auth = HTTPAuth.command(CredentialCommand(argv: argv, scheme: scheme, timeout: timeout))
        let client = HTTPPageClient(
            source: HTTPSource(url: server.baseURL + "/items", retries: 0, auth: auth), collection: "test", transport: transport,
            retryPolicy: Self.fastRetries, environment: environment)
        return PagedCollection(name: "test", client: client, paging: Paging(strategy: .cursor))
    }

    func testThePrintedTokenIsTrimmedAndKeptUntilA401() async throws {
        // As `gh auth token` prints it: the token and a newline (here with spaces around too).
        let (path, runs) = try helper(#"printf '  ghp_Helper0001token\n\n'"#)
        let accepted = NIOLockedValueBox<Set<String>>(["ghp_Helper0001token"])
        try await withServer(api(accepted)) { server, transport in
            let collection = helperCollection(server, transport, [path], clock: TestClock())
            let first = try await collection.loadNext()
            XCTAssertEqual(Self.ids(first.items), ["1", "2"])
            let second = try await collection.loadNext()
            XCTAssertEqual(Self.ids(second.items), ["3", "4"])
            XCTAssertEqual(self.runs(runs), 1, "the token is cached")
            XCTAssertEqual(server.requests.map { $0.header("Authorization") }, ["Bearer ghp_Helper0001token", "Bearer ghp_Helper0001token"])

            // The server stops taking it: the helper runs again, and the request is sent again.
            accepted.withLockedValue { $0 = [] }
            do {
                _ = try await collection.loadNext()
                XCTFail("expected a failure")
            } catch {
                XCTAssertEqual(upstreamFailure(error)?.status, 401)
            }
            XCTAssertEqual(self.runs(runs), 2)
            XCTAssertEqual(server.requests.count, 4)
        }
    }

    func testAJSONAnswerSetsTheExpiry() async throws {
        let folder = try scratchFolder()
        let counter = folder + "/n"
        // Each run prints a new token that lives 60 s.
        let (path, runs) = try helper(#"""
            n=$(cat '\#(counter)' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '\#(counter)'
            printf '{"token": "tok-%s-AbCdEf", "expiresIn": 60}\n' "$n"
            """#)
        let accepted = NIOLockedValueBox<Set<String>>(["tok-1-AbCdEf", "tok-2-AbCdEf"])
        try await withServer(api(accepted)) { server, transport in
            let clock = TestClock()
            let collection = helperCollection(server, transport, [path], clock: clock, scheme: "Bearer")
            _ = try await collection.loadNext()
            clock.advance(by: 50)
            _ = try await collection.loadNext()
            XCTAssertEqual(self.runs(runs), 1)
            clock.advance(by: 5)  // 55 s: within the 6 s margin of a 60 s token
            let last = try await collection.loadNext()
            XCTAssertEqual(Self.ids(last.items), ["5", "6"])
            XCTAssertEqual(self.runs(runs), 2)
            XCTAssertEqual(
                server.requests.map { $0.header("Authorization") },
                ["Bearer tok-1-AbCdEf", "Bearer tok-1-AbCdEf", "Bearer tok-2-AbCdEf"])
        }
    }

    func testKubectlExecCredentialAndAnRFC3339ExpiryAreRead() async throws {
        let (path, runs) = try helper(#"""
            echo '{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",'
            echo ' "status": {"token": "k8s-token-Qw12", "expirationTimestamp": "2027-01-15T08:00:00Z"}}'
            """#)
        let accepted = NIOLockedValueBox<Set<String>>(["k8s-token-Qw12"])
        try await withServer(api(accepted)) { server, transport in
            // 2027-01-15T08:00:00Z is Unix 1800000000: ten minutes from the clock's time.
            let clock = TestClock(now: 1_800_000_000 - 600)
            let collection = helperCollection(server, transport, [path], clock: clock)
            _ = try await collection.loadNext()
            clock.advance(by: 500)
            _ = try await collection.loadNext()
            XCTAssertEqual(self.runs(runs), 1)
            clock.advance(by: 50)  // within a minute of the expiry
            let last = try await collection.loadNext()
            XCTAssertEqual(Self.ids(last.items), ["5", "6"])
            XCTAssertEqual(self.runs(runs), 2)
        }
    }

    func testHelperFaultsAreClearErrorsThatNeverShowTheToken() async throws {
        let cases: [(script: String, said: String, retryable: Bool)] = [
            ("echo 'not logged in: run gh auth login' >&2; exit 3",
             "exited with status 3: stderr: not logged in: run gh auth login", false),
            ("true", "printed nothing on stdout (expected a token)", false),
            (#"printf 'first-half-SECRETA\nsecond-half-SECRETB\n'"#, "printed a token with a line break inside (a token is one line)", false),
            (#"echo '{"expiresIn": 60}'"#, #"printed JSON without a "token" string"#, false),
            ("exec sleep 30", "gave no token within 0.5 s (timeout) and was killed", true),
        ]
        let accepted = NIOLockedValueBox<Set<String>>([])
        try await withServer(api(accepted)) { server, transport in
            for (script, said, retryable) in cases {
                let (path, runs) = try helper(script)
                let collection = helperCollection(server, transport, [path], clock: TestClock(), timeout: 0.5)
                do {
                    _ = try await collection.loadNext()
                    XCTFail("expected a failure: \(said)")
                } catch {
                    let failure = upstreamFailure(error)
                    XCTAssertEqual(failure?.message, "GET \(server.baseURL)/items: source.auth: credential helper '\(path)' \(said)")
                    XCTAssertEqual(failure?.retryable, retryable, said)
                    XCTAssertFalse(failure?.message.contains("SECRET") ?? true)
                }
                XCTAssertEqual(self.runs(runs), 1, said)
                let state = await collection.state
                XCTAssertEqual(state.count, 0)
                XCTAssertTrue(state.hasNext)
            }
            XCTAssertEqual(server.requests.count, 0, "no request went without a token")
        }
    }
}
