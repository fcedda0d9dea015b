import Jansson
import NIOConcurrencyHelpers
import NextPage
import XCTest

/// The parts of `auth` and rate limits on their own, with test doubles: the
/// token cache (one renewal at a time, cancellation, a failed renewal),
/// fixed credentials, the rate-limit headers, redaction of what becomes
/// secret at run time.
final class AuthPartsTests: XCTestCase {
    /// A token issuer whose grants wait until the test opens the gate.
    final class GatedIssuer: TokenIssuer {
        struct State {
            var calls = 0
            var open = false
            var fails = false
            var lifetime: Double? = 100
            var waiting: [CheckedContinuation<Void, Never>] = []
            var callWatchers: [(Int, CheckedContinuation<Void, Never>)] = []
        }

        let clock: TestClock
        let state = NIOLockedValueBox(State())

        init(clock: TestClock) {
            self.clock = clock
        }

        var calls: Int { state.withLockedValue { $0.calls } }

        func issue(_ context: CredentialContext) async throws(CredentialError) -> IssuedToken {
            let (number, ready) = state.withLockedValue { state -> (Int, [CheckedContinuation<Void, Never>]) in
                state.calls += 1
                let ready = state.callWatchers.filter { $0.0 <= state.calls }.map(\.1)
                state.callWatchers.removeAll { $0.0 <= state.calls }
                return (state.calls, ready)
            }
            for watcher in ready { watcher.resume() }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let open = state.withLockedValue { state -> Bool in
                    if state.open { return true }
                    state.waiting.append(continuation)
                    return false
                }
                if open { continuation.resume() }
            }
            let (fails, lifetime) = state.withLockedValue { ($0.fails, $0.lifetime) }
            if fails { throw .failed(message: "grant \(number) failed", retryable: true) }
            let now = clock.now()
            return IssuedToken(token: "token-\(number)-abcdef", issuedAt: now, expiresAt: lifetime.map { now + $0 })
        }

        func open() {
            let waiting = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
                state.open = true
                defer { state.waiting = [] }
                return state.waiting
            }
            for continuation in waiting { continuation.resume() }
        }

        func close() { state.withLockedValue { $0.open = false } }

        func waitForCalls(_ count: Int) async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLockedValue { state -> Bool in
                    if state.calls >= count { return true }
                    state.callWatchers.append((count, continuation))
                    return false
                }
                if ready { continuation.resume() }
            }
        }
    }

    private let context = CredentialContext(transport: ReplayTransport(file: "/nonexistent"), timeout: 1)

    func testConcurrentCallersShareOneGrant() async throws {
        let clock = TestClock()
        let issuer = GatedIssuer(clock: clock)
        let secrets = LearnedSecrets()
        let provider = RenewingCredentialProvider(issuer: issuer, clock: clock, secrets: secrets)
        let context = self.context
        let credentials = try await withThrowingTaskGroup(of: Credential.self) { group in
            for _ in 0..<10 { group.addTask { try await provider.credential(context) } }
            await issuer.waitForCalls(1)
            issuer.open()
            var all: [Credential] = []
            for try await credential in group { all.append(credential) }
            return all
        }
        XCTAssertEqual(issuer.calls, 1)
        XCTAssertEqual(Set(credentials.map(\.value)), ["Bearer token-1-abcdef"])
        XCTAssertEqual(provider.grants, 1)
        XCTAssertTrue(secrets.values.contains("token-1-abcdef"))
        XCTAssertTrue(secrets.values.contains("Bearer token-1-abcdef"))
    }

    func testACancelledCallerStopsWaitingAndTheGrantGoesOnForTheOthers() async throws {
        let clock = TestClock()
        let issuer = GatedIssuer(clock: clock)
        let provider = RenewingCredentialProvider(issuer: issuer, clock: clock, secrets: LearnedSecrets())
        let context = self.context
        let cancelled = Task { try await provider.credential(context) }
        await issuer.waitForCalls(1)
        let patient = Task { try await provider.credential(context) }
        cancelled.cancel()
        do {
            _ = try await cancelled.value
            XCTFail("expected cancellation")
        } catch {
            XCTAssertEqual(error as? CredentialError, .cancelled)
        }
        issuer.open()
        let credential = try await patient.value
        XCTAssertEqual(credential.value, "Bearer token-1-abcdef")
        XCTAssertEqual(issuer.calls, 1)
    }

    func testRenewalAheadOfExpiryThatFailsKeepsTheValidToken() async throws {
        let clock = TestClock()
        let issuer = GatedIssuer(clock: clock)
        issuer.open()
        let provider = RenewingCredentialProvider(issuer: issuer, clock: clock, secrets: LearnedSecrets())
        let first = try await provider.credential(context)
        clock.advance(by: 95)  // inside the 10 s margin of a 100 s token
        issuer.state.withLockedValue { $0.fails = true }
        let second = try await provider.credential(context)
        XCTAssertEqual(second, first, "the token in hand still works")
        XCTAssertEqual(issuer.calls, 2)
        clock.advance(by: 5)  // expired now: the failure is the answer
        do {
            _ = try await provider.credential(context)
            XCTFail("expected a failure")
        } catch {
            XCTAssertEqual(error, .failed(message: "grant 3 failed", retryable: true))
        }
    }

    func testA401OnAReplacedTokenGetsTheReplacementWithoutAGrant() async throws {
        let clock = TestClock()
        let issuer = GatedIssuer(clock: clock)
        issuer.open()
        let provider = RenewingCredentialProvider(issuer: issuer, clock: clock, secrets: LearnedSecrets())
        let old = try await provider.credential(context)
        let renewed = try await provider.renewed(after: old, context)
        XCTAssertEqual(renewed?.value, "Bearer token-2-abcdef")
        // Another request that was sent with the old token gets the new one.
        let again = try await provider.renewed(after: old, context)
        XCTAssertEqual(again, renewed)
        XCTAssertEqual(issuer.calls, 2)
    }

    func testFixedCredentials() async throws {
        // RFC 7617's example.
        let basic = try XCTUnwrap(StaticCredentialProvider(.basic(username: "Aladdin", password: "open sesame")))
        let credential = try await basic.credential(context)
        XCTAssertEqual(credential, Credential(name: "Authorization", value: "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="))
        let bearer = try await XCTUnwrap(StaticCredentialProvider(.bearer(token: "t0k"))).credential(context)
        XCTAssertEqual(bearer, Credential(name: "Authorization", value: "Bearer t0k"))
        let header = try await XCTUnwrap(StaticCredentialProvider(.header(name: "X-Api-Key", value: "k3y"))).credential(context)
        XCTAssertEqual(header, Credential(name: "X-Api-Key", value: "k3y"))
        let renewed = try await basic.renewed(after: credential, context)
        XCTAssertNil(renewed, "a fixed credential has no other")
        XCTAssertNil(StaticCredentialProvider(.command(CredentialCommand(argv: ["gh"]))))
    }

    // MARK: Rate-limit headers

    func testRateLimitHeadersAreRead() {
        let now = 1_800_000_000.0
        func read(_ status: Int, _ headers: [(String, String)], body: String = "") -> RateLimitReport {
            RateLimitReport.read(status: status, headers: headers.map { (name: $0.0, value: $0.1) }, body: Array(body.utf8), now: now)
        }
        // GitHub: Unix seconds.
        let github = read(200, [("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "1800000042")])
        XCTAssertEqual(github.remaining, 0)
        XCTAssertEqual(github.resetAt, 1_800_000_042)
        XCTAssertFalse(github.isRefusal, "a success is never a refusal")
        // The IETF draft: seconds from now; a list per policy gives its smallest.
        let ietf = read(200, [("RateLimit-Remaining", "10, 0"), ("RateLimit-Reset", "30")])
        XCTAssertEqual(ietf.remaining, 0)
        XCTAssertEqual(ietf.resetAt, now + 30)
        // Milliseconds (octokit's normalized fixtures) and seconds in the X- family.
        XCTAssertEqual(read(200, [("X-RateLimit-Remaining", "5"), ("X-RateLimit-Reset", "1507651200000")]).resetAt, 1_507_651_200)
        XCTAssertEqual(read(200, [("X-RateLimit-Remaining", "5"), ("X-RateLimit-Reset", "45")]).resetAt, now + 45)
        // The combined field, both forms.
        let combined = read(200, [("RateLimit", #""default";r=50;t=30, "daily";r=3;t=3600"#)])
        XCTAssertEqual(combined.remaining, 3)
        XCTAssertEqual(combined.resetAt, now + 3600)
        let older = read(200, [("RateLimit", "limit=100, remaining=7, reset=12")])
        XCTAssertEqual(older.remaining, 7)
        XCTAssertEqual(older.resetAt, now + 12)
        // Unreadable values are ignored, and said.
        let bad = read(403, [("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "-5"), ("Retry-After", "soon")])
        XCTAssertEqual(bad.remaining, 0)
        XCTAssertNil(bad.resetAt)
        XCTAssertNil(bad.retryAfter)
        XCTAssertEqual(bad.unreadable, ["x-ratelimit-reset", "retry-after"])
        XCTAssertTrue(bad.isRefusal)
        XCTAssertNil(bad.retryAt(now: now), "no time named: the backoff")
        // Refusals: 403/429 with Retry-After or nothing remaining; a 403 that says so.
        XCTAssertEqual(read(429, [("Retry-After", "7")]).retryAt(now: now), now + 7)
        XCTAssertEqual(read(403, [("Retry-After", "7"), ("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "1800000100")]).retryAt(now: now), now + 7)
        XCTAssertEqual(read(403, [("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "1800000100")]).retryAt(now: now), 1_800_000_100)
        XCTAssertEqual(read(403, [], body: #"{"message": "You have exceeded a secondary rate limit"}"#).retryAt(now: now), now + 60)
        XCTAssertFalse(read(403, [("X-RateLimit-Remaining", "12")], body: "Resource not accessible").isRefusal)
        XCTAssertFalse(read(429, []).isRefusal, "a bare 429 gets the normal backoff")
        XCTAssertFalse(read(503, [("Retry-After", "7")]).isRefusal)
    }

    func testRequestSpacingIsATokenBucket() {
        let spacing = RequestSpacing(RequestRate(requestsPerSecond: 4, burst: 3))
        let now = 100.0
        XCTAssertEqual((0..<6).map { _ in spacing.reserve(now: now) }, [0, 0, 0, 0.25, 0.5, 0.75])
        // After a pause long enough to refill the bucket, a burst goes at once again.
        XCTAssertEqual((0..<3).map { _ in spacing.reserve(now: now + 10) }, [0, 0, 0])
    }

    // MARK: Redaction

    func testTokenExchangesAreRedactedByNameAndLearnedSecretsEverywhere() throws {
        let learned = LearnedSecrets()
        let redactor = HTTPRedactor(learned: learned)
        XCTAssertEqual(
            redactor.form("grant_type=refresh_token&refresh_token=rt-123456&client_id=me&client_secret=s%20x&scope=read"),
            "grant_type=refresh_token&refresh_token=[redacted]&client_id=me&client_secret=[redacted]&scope=read")
        let answer = Array(#"{"access_token":"at-99","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-2","scope":"read"}"#.utf8)
        let clean = try JSON.parse(XCTUnwrap(redactor.credentialAnswer(answer)))
        XCTAssertEqual(clean["access_token"]?.string, "[redacted]")
        XCTAssertEqual(clean["refresh_token"]?.string, "[redacted]")
        XCTAssertEqual(clean["token_type"]?.string, "Bearer")
        XCTAssertEqual(clean["expires_in"]?.integer, 3600)

        XCTAssertEqual(redactor.scrub("echo: tok-learned-later/x"), "echo: tok-learned-later/x")
        learned.add("tok-learned/later")
        XCTAssertEqual(redactor.scrub("echo: tok-learned/later and tok-learned%2Flater"), "echo: [redacted] and [redacted]")
        XCTAssertEqual(redactor.scrub(json: Array(#"{"t":"tok-learned\/later"}"#.utf8)), Array(#"{"t":"[redacted]"}"#.utf8))
    }

    func testARedirectToAnotherOriginDropsTheCredentialHeaders() {
        let request = HTTPExchangeRequest(method: "GET", url: "https://api.example.com/items")
            .adding(Credential(name: "X-Session", value: "s-1"))
        XCTAssertEqual(request.credentialHeaders, ["x-session"])
        let same = HTTPRedirect.next(after: request, status: 302, location: "/other")
        XCTAssertEqual(same?.headerValue("X-Session"), "s-1")
        let away = HTTPRedirect.next(after: request, status: 302, location: "https://evil.example.net/x")
        XCTAssertNil(away?.headerValue("X-Session"))
        XCTAssertEqual(away?.credentialHeaders, [])
    }
}
