import Jansson
import NIOConcurrencyHelpers
import NextPage
import XCTest

/// Rate limits over a real HTTP server, with a clock the tests control:
/// GitHub's and the IETF draft's headers, 403/429 refusals, resets too far
/// away, in the past or unreadable, client-side spacing, cancellation.
final class RateLimitTests: HTTPSourceTestCase {
    private func limitedCollection(
        _ source: HTTPSource, transport: any HTTPTransport, environment: HTTPSourceEnvironment, name: String = "test"
    ) -> (PagedCollection, HTTPPageClient) {
        let client = HTTPPageClient(source: source, collection: name, transport: transport, retryPolicy: Self.fastRetries, environment: environment)
        return (PagedCollection(name: name, client: client, paging: Paging(strategy: .cursor)), client)
    }

    private static func page(_ ids: [Int], next: String?) -> String {
        #"{"items": \#(items(ids)), "next_cursor": \#(next.map { "\"\($0)\"" } ?? "null")}"#
    }

    func testGitHubThenIETFThenASecondaryLimitEachWaitUntilTheirReset() async throws {
        let clock = TestClock()
        let start = Int(clock.now())
        let tries = NIOLockedValueBox(0)
        try await withServer({ request in
            switch request.queryValue("cursor") {
            case nil:
                // GitHub: the last request of the window; the reset in Unix seconds.
                return .json(Self.page([1, 2], next: "c2"), headers: [
                    ("X-RateLimit-Limit", "60"), ("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", String(start + 30)),
                ])
            case "c2":
                // The IETF draft: the reset in seconds from now.
                return .json(Self.page([3, 4], next: "c3"), headers: [("RateLimit-Remaining", "0"), ("RateLimit-Reset", "20")])
            default:
                let first = tries.withLockedValue { value -> Bool in
                    value += 1
                    return value == 1
                }
                if first {
                    // GitHub's secondary limit: 403 with Retry-After.
                    return .json(#"{"message": "You have exceeded a secondary rate limit."}"#, status: 403, headers: [("Retry-After", "5")])
                }
                return .json(Self.page([5, 6], next: nil), headers: [
                    ("X-RateLimit-Remaining", "4999"), ("X-RateLimit-Reset", String(start + 3600)),
                ])
            }
        }) { server, transport in
            let environment = HTTPSourceEnvironment(clock: clock, secrets: LearnedSecrets())
            let (collection, client) = limitedCollection(HTTPSource(url: server.baseURL + "/items"), transport: transport, environment: environment)
            let first = try await collection.loadNext()
            XCTAssertEqual(Self.ids(first.items), ["1", "2"], "a page that used up the limit is delivered")
            XCTAssertEqual(client.rateLimitStatus(), RateLimitStatus(remaining: 0, resetAt: Double(start + 30)))
            XCTAssertEqual(clock.waits, [])

            let rest = try await loadAll(collection)
            XCTAssertEqual(rest.ids, Self.strings(3...6))
            // 30 s until GitHub's reset, 20 s for the IETF one, 5 s for Retry-After.
            XCTAssertEqual(clock.waits, [30, 20, 5])
            XCTAssertEqual(server.requests.map(\.uri), ["/items", "/items?cursor=c2", "/items?cursor=c3", "/items?cursor=c3"])
            XCTAssertEqual(client.rateLimitStatus(), RateLimitStatus(remaining: 4999, resetAt: Double(start + 3600)))
        }
    }

    func testTheCombinedRateLimitFieldIsRead() async throws {
        let clock = TestClock()
        try await withServer(answers: [
            .json(Self.page([1], next: "c2"), headers: [("RateLimit", #""default";r=0;t=12, "burst";r=5;t=1"#)]),
            .json(Self.page([2], next: "c3"), headers: [("RateLimit", "limit=100, remaining=0, reset=7")]),
            .json(Self.page([3], next: nil)),
        ]) { server, transport in
            let environment = HTTPSourceEnvironment(clock: clock, secrets: LearnedSecrets())
            let (collection, _) = limitedCollection(HTTPSource(url: server.baseURL + "/items"), transport: transport, environment: environment)
            let walked1 = try await loadAll(collection).ids
            XCTAssertEqual(walked1, ["1", "2", "3"])
            XCTAssertEqual(clock.waits, [12, 7])
        }
    }

    func testAResetFurtherThanMaxRateLimitWaitFailsAtOnceWithRetryAt() async throws {
        let clock = TestClock()
        let start = Int(clock.now())
        try await withServer(answers: [
            .json(Self.page([1, 2], next: "c2"), headers: [("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", String(start + 3600))]),
        ]) { server, transport in
            let environment = HTTPSourceEnvironment(clock: clock, secrets: LearnedSecrets())
            let source = HTTPSource(url: server.baseURL + "/items", retries: 3)
            let (collection, _) = limitedCollection(source, transport: transport, environment: environment)
            _ = try await collection.loadNext()
            do {
                _ = try await collection.loadNext()
                XCTFail("expected a failure")
            } catch {
                let failure = upstreamFailure(error)
                XCTAssertEqual(failure?.retryable, true)
                XCTAssertEqual(failure?.retryAt, Double(start + 3600))
                XCTAssertNil(failure?.status)
                XCTAssertEqual(failure?.attempts, 0, "nothing was sent")
                XCTAssertEqual(
                    failure?.message,
                    "GET \(server.baseURL)/items?cursor=c2: the rate limit is used up; it resets in 3600 s, more than maxRateLimitWait (60 s)")
            }
            XCTAssertEqual(server.requests.count, 1)
            XCTAssertEqual(clock.waits, [])
            let state = await collection.state
            XCTAssertEqual(state.lastId, .string("c2"))
            XCTAssertEqual(state.count, 2)
        }
    }

    func testARefusalWhoseResetIsTooFarFailsWithRetryAt() async throws {
        let clock = TestClock()
        let start = Int(clock.now())
        try await withServer({ _ in
            .json(#"{"message": "API rate limit exceeded"}"#, status: 403, headers: [
                ("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", String(start + 600)),
            ])
        }) { server, transport in
            let environment = HTTPSourceEnvironment(clock: clock, secrets: LearnedSecrets())
            let source = HTTPSource(url: server.baseURL + "/items", retries: 3, maxRateLimitWait: 300)
            let (collection, client) = limitedCollection(source, transport: transport, environment: environment)
            do {
                _ = try await collection.loadNext()
                XCTFail("expected a failure")
            } catch {
                let failure = upstreamFailure(error)
                XCTAssertEqual(failure?.status, 403)
                XCTAssertEqual(failure?.retryable, true)
                XCTAssertEqual(failure?.retryAt, Double(start + 600))
                XCTAssertEqual(failure?.attempts, 1)
                XCTAssertEqual(
                    failure?.message,
                    #"GET \#(server.baseURL)/items answered 403 Forbidden: {"message": "API rate limit exceeded"}; the rate limit resets in 600 s, more than maxRateLimitWait (300 s)"#)
            }
            XCTAssertEqual(server.requests.count, 1)
            XCTAssertEqual(clock.waits, [])
            XCTAssertEqual(client.rateLimitStatus(), RateLimitStatus(remaining: 0, resetAt: Double(start + 600)))
        }
    }

    func testAResetInThePastIsRetriedAtOnceTheFirstTimeOnly() async throws {
        let clock = TestClock()
        let past = String(Int(clock.now()) - 10)
        let refusal = HTTPScriptedAnswer.json(
            #"{"message": "API rate limit exceeded"}"#, status: 403, headers: [("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", past)])
        try await withServer(answers: [refusal, refusal, .json(Self.page([1], next: nil))]) { server, transport in
            let environment = HTTPSourceEnvironment(clock: clock, secrets: LearnedSecrets())
            let (collection, _) = limitedCollection(
                HTTPSource(url: server.baseURL + "/items", retries: 0), transport: transport, environment: environment)
            let walked2 = try await loadAll(collection).ids
            XCTAssertEqual(walked2, ["1"])
            XCTAssertEqual(server.requests.count, 3)
            // The first retry went at once; the second after the backoff (0.02 s at most, halved by jitter).
            XCTAssertEqual(clock.waits.count, 1)
            XCTAssert((0.01...0.02).contains(clock.waits.first ?? -1), "\(clock.waits)")
        }
    }

    func testAnUnreadableResetFallsBackToRetryAfterOrTheBackoff() async throws {
        let clock = TestClock()
        try await withServer(answers: [
            .status(429, headers: [("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "soon"), ("Retry-After", "3")]),
            .status(403, headers: [("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "tomorrow")]),
            .json(Self.page([1], next: nil)),
        ]) { server, transport in
            let environment = HTTPSourceEnvironment(clock: clock, secrets: LearnedSecrets())
            let (collection, client) = limitedCollection(
                HTTPSource(url: server.baseURL + "/items", retries: 0), transport: transport, environment: environment)
            let walked3 = try await loadAll(collection).ids
            XCTAssertEqual(walked3, ["1"])
            XCTAssertEqual(server.requests.count, 3)
            let waits = clock.waits
            XCTAssertEqual(waits.count, 2)
            XCTAssertEqual(waits.first, 3, "Retry-After, as the reset could not be read")
            XCTAssert((0.01...0.02).contains(waits.last ?? -1), "the backoff: \(waits)")
            XCTAssertEqual(client.rateLimitStatus()?.remaining, 0)
            XCTAssertNil(client.rateLimitStatus()?.resetAt)
        }
    }

    func testRateLimitRefusalsStopAfterTheirOwnBudget() async throws {
        let clock = TestClock()
        try await withServer({ _ in .status(429, headers: [("Retry-After", "1")]) }) { server, transport in
            let environment = HTTPSourceEnvironment(clock: clock, secrets: LearnedSecrets())
            let (collection, _) = limitedCollection(
                HTTPSource(url: server.baseURL + "/items", retries: 0), transport: transport, environment: environment)
            do {
                _ = try await collection.loadNext()
                XCTFail("expected a failure")
            } catch {
                let failure = upstreamFailure(error)
                XCTAssertEqual(failure?.status, 429)
                XCTAssertEqual(failure?.attempts, 4)
                XCTAssertEqual(failure?.retryable, true)
                XCTAssertNotNil(failure?.retryAt)
            }
            XCTAssertEqual(server.requests.count, 4, "the first try and three rate-limit retries, apart from retries: 0")
            XCTAssertEqual(clock.waits.count, 3)
        }
    }

    func testOneCollectionsUsedUpLimitMakesTheOthersWait() async throws {
        let clock = TestClock()
        let reset = String(Int(clock.now()) + 40)
        try await withServer({ request in
            request.queryValue("cursor") == nil
                ? .json(Self.page([1], next: "c2"), headers: [("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", reset)])
                : .json(Self.page([2], next: nil), headers: [("X-RateLimit-Remaining", "59"), ("X-RateLimit-Reset", reset)])
        }) { server, transport in
            let environment = HTTPSourceEnvironment(clock: clock, secrets: LearnedSecrets())
            let source = HTTPSource(url: server.baseURL + "/items", headers: [("Authorization", "Bearer same-token-123")])
            let (first, _) = limitedCollection(source, transport: transport, environment: environment, name: "a")
            let (second, _) = limitedCollection(source, transport: transport, environment: environment, name: "b")
            _ = try await first.loadNext()
            _ = try await second.loadNext()
            XCTAssertEqual(clock.waits, [40], "the second collection waited for the reset the first one was told of")
            // Other credentials have limits of their own.
            let other = HTTPSource(url: server.baseURL + "/items", headers: [("Authorization", "Bearer other-token-456")])
            let (third, _) = limitedCollection(other, transport: transport, environment: environment, name: "c")
            _ = try await third.loadNext()
            XCTAssertEqual(clock.waits, [40])
        }
    }

    func testClientSideRateSpacesRequestsToAnOriginAcrossCollections() async throws {
        let clock = TestClock()
        let plain = try await HTTPTestServer.start { _ in .json(Self.page([9], next: nil)) }
        defer { Task { await plain.stop() } }
        try await withServer({ request in
            switch request.queryValue("cursor") {
            case nil: return .json(Self.page([1], next: "c2"))
            case "c2": return .json(Self.page([2], next: "c3"))
            default: return .json(Self.page([3], next: nil))
            }
        }) { server, transport in
            let environment = HTTPSourceEnvironment(clock: clock, secrets: LearnedSecrets())
            let source = HTTPSource(url: server.baseURL + "/items", rateLimit: RequestRate(requestsPerSecond: 2, burst: 2))
            let (first, _) = limitedCollection(source, transport: transport, environment: environment, name: "a")
            let (second, _) = limitedCollection(source, transport: transport, environment: environment, name: "b")
            let (elsewhere, _) = limitedCollection(HTTPSource(url: plain.baseURL + "/items"), transport: transport, environment: environment, name: "c")
            let walked4 = try await loadAll(first).ids
            XCTAssertEqual(walked4, ["1", "2", "3"])
            let walked5 = try await loadAll(elsewhere).ids
            XCTAssertEqual(walked5, ["9"])
            let walked6 = try await loadAll(second).ids
            XCTAssertEqual(walked6, ["1", "2", "3"])
            // Six requests to one origin: a burst of two, then one every half second.
            XCTAssertEqual(clock.waits, [0.5, 0.5, 0.5, 0.5])
            XCTAssertEqual(server.requests.count, 6)
        }
    }

    func testWaitingForAResetEndsAtOnceOnResetOrCancel() async throws {
        let clock = TestClock(holdsWaits: true)
        let reset = String(Int(clock.now()) + 30)
        try await withServer({ _ in
            .json(Self.page([1], next: "c2"), headers: [("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", reset)])
        }) { server, transport in
            let environment = HTTPSourceEnvironment(clock: clock, secrets: LearnedSecrets())
            let (collection, _) = limitedCollection(HTTPSource(url: server.baseURL + "/items"), transport: transport, environment: environment)
            _ = try await collection.loadNext()

            let waiting = Task { try await collection.loadNext() }
            await clock.waitForWaiters(1)
            await collection.reset()
            do {
                _ = try await waiting.value
                XCTFail("expected the wait to be cancelled")
            } catch {
                XCTAssertEqual(error as? LoadError, .cancelled)
            }
            XCTAssertEqual(server.requests.count, 1, "nothing was sent while waiting")

            // A cancelled request ($/cancelRequest cancels its task) stops waiting too: the
            // first page again, as the limit is still used up.
            let cancelled = Task { try await collection.loadNext() }
            await clock.waitForWaiters(1)
            cancelled.cancel()
            do {
                _ = try await cancelled.value
                XCTFail("expected the wait to be cancelled")
            } catch {
                XCTAssertEqual(error as? LoadError, .cancelled)
            }
            XCTAssertEqual(server.requests.count, 1)
            XCTAssertEqual(clock.waits, [30, 30])
            let state = await collection.state
            XCTAssertEqual(state.count, 0)
        }
    }
}
