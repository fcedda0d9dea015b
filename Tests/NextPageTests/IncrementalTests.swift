import Jansson
import Logging
import NIOConcurrencyHelpers
import NextPage
import XCTest

/// Incremental sync (`incremental`): how values compare, what a walk
/// delivers and keeps, and walks over a real HTTP server whose data changes
/// between them.
final class IncrementalTests: HTTPSourceTestCase {
    private func value(_ json: String) throws -> IncrementalValue {
        try XCTUnwrap(IncrementalValue(try JSON.parse(json)), json)
    }

    // MARK: Values

    func testTimestampsCompareAsInstantsWhateverTheirOffsetAndFraction() throws {
        let same = [
            #""2024-05-01T10:00:00Z""#, #""2024-05-01T12:00:00+02:00""#, #""2024-05-01T05:30:00-0430""#, #""2024-05-01t10:00:00z""#,
            #""2024-05-01 10:00:00.000Z""#, #""2024-05-01T10:00Z""#, #""2024-05-01T10:00:00""#, #""2024-05-01T11:00:00+01""#,
            #""2024-05-01T10:00:00,0Z""#,
        ]
        for text in same {
            let parsed = try value(text)
            XCTAssertEqual(parsed.kind, .timestamp, text)
            XCTAssertEqual(parsed.compare(try value(same[0])), 0, text)
        }
        let ordered = [
            #""2023-12-31""#, #""2024-02-29T23:59:59.999999999Z""#, #""2024-03-01""#, #""2024-05-01T10:00:00Z""#,
            #""2024-05-01T10:00:00.000001Z""#, #""2024-05-01T10:00:00.5Z""#, #""2024-05-01T10:00:00.50001Z""#, #""2024-05-01T09:00:01-01:00""#,
        ]
        for (a, b) in zip(ordered, ordered.dropFirst()) {
            XCTAssertEqual(try value(a).compare(try value(b)), -1, "\(a) < \(b)")
            XCTAssertEqual(try value(b).compare(try value(a)), 1, "\(b) > \(a)")
        }
        // Not timestamps: compared as text.
        for text in [#""2024-02-30""#, #""2023-02-29T00:00:00Z""#, #""2024-05-01T24:00:00Z""#, #""2024-05-01T10:00:00Q""#, #""v2024""#, #""""#] {
            XCTAssertEqual(try value(text).kind, .text, text)
        }
        XCTAssertEqual(try value(#""b""#).compare(try value(#""ab""#)), 1)
        // The text sent is the value as written, not normalised.
        XCTAssertEqual(try value(#""2024-05-01T12:00:00+02:00""#).text, "2024-05-01T12:00:00+02:00")
    }

    func testNumbersCompareAsNumbersAndKindsDoNotMix() throws {
        XCTAssertEqual(try value("9").compare(try value("10")), -1)
        XCTAssertEqual(try value("10").compare(try value("9.5")), 1)
        XCTAssertEqual(try value("1e3").compare(try value("1000")), 0)
        XCTAssertEqual(try value("9223372036854775807").compare(try value("9223372036854775806")), 1)
        XCTAssertEqual(try value("1000").text, "1000")
        XCTAssertNil(try value("10").compare(try value(#""10""#)))
        XCTAssertNil(try value(#""2024-05-01""#).compare(try value(#""x""#)))
        for other in ["true", "null", "[1]", #"{"a": 1}"#] {
            XCTAssertNil(IncrementalValue(try JSON.parse(other)), other)
        }
    }

    // MARK: What a walk delivers

    func testAWalkDeliversWhatIsNewAndItsEndSetsTheValue() throws {
        var state = IncrementalState(value: try value("10"))
        func admit(_ json: String?, _ digest: UInt64) throws -> Bool {
            try state.admit(json.map(value)) { digest }
        }
        XCTAssertFalse(try admit("9", 1), "below the value: not changed since")
        XCTAssertTrue(try admit("10", 2), "at the value, not delivered before")
        XCTAssertTrue(try admit("12", 3))
        XCTAssertTrue(try admit("12", 4))
        XCTAssertTrue(try admit("11", 5))
        XCTAssertTrue(try admit(nil, 6), "no value: delivered, counted")
        XCTAssertTrue(try admit(#""2024-05-01""#, 7), "another kind: delivered, counted")
        XCTAssertEqual(state.withoutValue, 2)
        XCTAssertEqual(state.seen, try value("12"))
        XCTAssertEqual(state.seenBoundary, [3, 4])
        XCTAssertEqual(state.value, try value("10"), "the value changes only at the end of the walk")
        state.walkEnded()
        XCTAssertEqual(state.value, try value("12"))
        XCTAssertEqual(state.boundary, [3, 4])
        XCTAssertNil(state.seen)
        XCTAssertEqual(state.withoutValue, 2, "still telling of the walk that ended")
        state = state.forNewWalk()
        XCTAssertEqual(state.withoutValue, 0, "a new walk counts afresh")
        // The next walk: the items delivered at the value are not delivered again, others at it are.
        XCTAssertFalse(try admit("12", 3))
        XCTAssertTrue(try admit("12", 8))
        state.walkEnded()
        XCTAssertEqual(state.boundary, [3, 4, 8], "a walk that ends at the same value adds to its boundary")
        // A walk that delivers nothing new keeps the value.
        XCTAssertFalse(try admit("11", 9))
        state.walkEnded()
        XCTAssertEqual(state.value, try value("12"))
        XCTAssertEqual(state.forNewWalk(), state)
    }

    func testTheFirstValueSetsTheKind() throws {
        var state = IncrementalState()
        XCTAssertTrue(state.admit(try value(#""2024-05-01T00:00:00Z""#)) { 1 })
        XCTAssertTrue(state.admit(try value("5")) { 2 })
        XCTAssertEqual(state.kind, .timestamp)
        XCTAssertEqual(state.withoutValue, 1)
    }

    // MARK: Walks over a real server

    /// An API of items with `updated_at`, paged by `cursor` two at a time,
    /// answering `since` inclusively (as GitHub's does), sorted by `updated_at`.
    final class ChangingAPI: Sendable {
        let items: NIOLockedValueBox<[(id: Int, updatedAt: String?)]>

        init(_ items: [(id: Int, updatedAt: String?)]) {
            self.items = NIOLockedValueBox(items)
        }

        var script: HTTPTestServer.Script {
            { [items] request in
                let since = request.queryValue("since")?.removingPercentEncoding
                let all = items.withLockedValue { $0 }
                    .filter { since == nil || ($0.updatedAt.map { $0 >= since! } ?? true) }
                    .sorted { ($0.updatedAt ?? "") < ($1.updatedAt ?? "") }
                let start = Int(request.queryValue("cursor") ?? "0") ?? 0
                let page = all.dropFirst(start).prefix(2).map { item in
                    item.updatedAt.map { #"{"id": \#(item.id), "updated_at": "\#($0)"}"# } ?? #"{"id": \#(item.id)}"#
                }
                let next = start + 2 < all.count ? #""\#(start + 2)""# : "null"
                return .json(#"{"items": [\#(page.joined(separator: ","))], "next_cursor": \#(next)}"#)
            }
        }
    }

    func testASecondWalkAsksForWhatChangedAndGetsOnlyThat() async throws {
        let api = ChangingAPI((1...5).map { ($0, "2024-05-0\($0)T10:00:00Z") })
        try await withServer(api.script) { server, transport in
            let options = CollectionOptions(incremental: Incremental(pointer: "/updated_at", param: "since"))
            let collection = collection(HTTPSource(url: server.baseURL + "/items"), Paging(strategy: .cursor), options: options, transport: transport)
            let first = try await loadAll(collection)
            XCTAssertEqual(first.ids, Self.strings(1...5))
            XCTAssertEqual(server.requests.map(\.uri), ["/items", "/items?cursor=2", "/items?cursor=4"], "the first walk sends no since")
            let ended = await collection.state
            XCTAssertEqual(ended.incremental?.value, try value(#""2024-05-05T10:00:00Z""#))
            XCTAssertNil(ended.incremental?.seen)

            api.items.withLockedValue { items in
                items[1].updatedAt = "2024-06-01T09:00:00+02:00"
                items.append((6, "2024-06-01T07:00:00.5Z"))
            }
            let again = try await collection.load()
            var ids = Self.ids(again.items)
            var state = again.state
            while state.hasNext {
                let page = try await collection.loadNext()
                ids += Self.ids(page.items)
                state = page.state
            }
            // Item 5 comes again at the bound (since is inclusive) and is not delivered twice.
            XCTAssertEqual(ids, ["6", "2"])
            XCTAssertEqual(Array(server.requests.map(\.uri).dropFirst(3)), [
                "/items?since=2024-05-05T10%3A00%3A00Z", "/items?since=2024-05-05T10%3A00%3A00Z&cursor=2",
            ], "since is the largest value of the walk before, on every request of the walk")
            // 09:00+02:00 is 07:00Z, before 07:00:00.5Z.
            XCTAssertEqual(state.incremental?.value?.json.description, #""2024-06-01T07:00:00.5Z""#)
            XCTAssertEqual(state.count, 2)

            // Nothing changed: a third walk delivers nothing.
            let third = try await collection.load()
            XCTAssertEqual(third.items.count, 0)
            XCTAssertFalse(third.state.hasNext)
            XCTAssertEqual(server.requests.last?.uri, "/items?since=2024-06-01T07%3A00%3A00.5Z")
        }
    }

    func testInitialIsSentOnTheFirstWalkAndResetKeepsTheValueUnlessForgotten() async throws {
        let api = ChangingAPI((1...3).map { ($0, "2024-05-0\($0)") })
        try await withServer(api.script) { server, transport in
            let initial = try value(#""2024-05-02""#)
            let options = CollectionOptions(incremental: Incremental(pointer: "/updated_at", param: "since", initial: initial))
            let collection = collection(HTTPSource(url: server.baseURL + "/items"), Paging(strategy: .cursor), options: options, transport: transport)
            let fresh = await collection.state
            XCTAssertEqual(fresh.incremental?.value, initial)
            let first = try await loadAll(collection)
            XCTAssertEqual(first.ids, ["2", "3"])
            XCTAssertEqual(server.requests.first?.uri, "/items?since=2024-05-02")

            // reset forgets the walk, not the value.
            await collection.reset()
            let reset = await collection.state
            XCTAssertEqual(reset.incremental?.value?.json.description, #""2024-05-03""#)
            _ = try await collection.loadNext()
            XCTAssertEqual(server.requests.last?.uri, "/items?since=2024-05-03")

            // forgetIncremental goes back to initial.
            await collection.forgetIncremental()
            let forgotten = await collection.state
            XCTAssertEqual(forgotten.incremental?.value, initial)
            XCTAssertEqual(forgotten.count, 0)
            _ = try await collection.loadNext()
            XCTAssertEqual(server.requests.last?.uri, "/items?since=2024-05-02")
        }
    }

    func testItemsWithoutTheValueAreDeliveredCountedAndLoggedOnce() async throws {
        let api = ChangingAPI([(1, "2024-05-01"), (2, nil), (3, "2024-05-03"), (4, nil), (5, "2024-05-02")])
        try await withServer(api.script) { server, transport in
            let logs = LogLines()
            var logger = Logger(label: "test") { _ in logs }
            logger.logLevel = .trace
            let client = HTTPPageClient(source: HTTPSource(url: server.baseURL + "/items"), collection: "c", transport: transport, retryPolicy: Self.fastRetries)
            let collection = PagedCollection(
                name: "c", client: client, paging: Paging(strategy: .cursor),
                options: CollectionOptions(incremental: Incremental(pointer: "/updated_at", param: "since")), logger: logger)
            var ids: [String] = []
            var withoutValue: [Int] = []
            while true {
                let page = try await collection.loadNext()
                ids += Self.ids(page.items)
                withoutValue.append(page.state.incremental?.withoutValue ?? -1)
                if !page.state.hasNext { break }
            }
            XCTAssertEqual(ids, ["2", "4", "1", "5", "3"], "every item delivered, none failing its page")
            XCTAssertEqual(withoutValue, [2, 2, 2], "counted during the walk, and still after its end")
            let state = await collection.state
            XCTAssertEqual(state.incremental?.value?.json.description, #""2024-05-03""#)
            XCTAssertEqual(logs.lines.count, 1, logs.lines.joined(separator: "\n"))
            XCTAssert(logs.lines.first?.contains("/updated_at") ?? false, logs.lines.joined())
            // A new walk counts afresh, and logs once again.
            let again = try await collection.load()
            XCTAssertEqual(Self.ids(again.items), ["2", "4"], "item 3 is at the value and was delivered: not again")
            XCTAssertEqual(again.state.incremental?.withoutValue, 2)
            XCTAssertEqual(logs.lines.count, 2)
        }
    }

    func testNextPageURLsGetTheValueWhenTheyLackIt() async throws {
        try await withServer({ request in
            switch request.path {
            case "/a": return .json(#"{"items": [{"id": 1, "t": 5}]}"#, headers: [("Link", "</b?page=2>; rel=\"next\"")])
            case "/b": return .json(#"{"items": [{"id": 2, "t": 7}]}"#, headers: [("Link", "</c?since=3>; rel=\"next\"")])
            default: return .json(#"{"items": [{"id": 3, "t": 6}]}"#)
            }
        }) { server, transport in
            let options = CollectionOptions(incremental: Incremental(pointer: "/t", param: "since", initial: try value("4")))
            let collection = collection(HTTPSource(url: server.baseURL + "/a"), Paging(strategy: .link), options: options, transport: transport)
            let result = try await loadAll(collection)
            XCTAssertEqual(result.ids, ["1", "2", "3"])
            XCTAssertEqual(server.requests.map(\.uri), ["/a?since=4", "/b?page=2&since=4", "/c?since=3"])
            let state = await collection.state
            XCTAssertEqual(state.incremental?.value, try value("7"))
        }
    }

    func testAWalkStoppedByALoopGuardKeepsTheValue() async throws {
        try await withServer({ _ in .json(#"{"items": [{"id": 1, "t": 9}], "next_cursor": "same"}"#) }) { server, transport in
            let options = CollectionOptions(incremental: Incremental(pointer: "/t", param: "since"))
            let collection = collection(HTTPSource(url: server.baseURL + "/a"), Paging(strategy: .cursor), options: options, transport: transport)
            _ = try await collection.loadNext()
            let stopped = try await collection.loadNext()
            XCTAssertFalse(stopped.state.hasNext)
            XCTAssertNotNil(stopped.stopReason)
            XCTAssertNil(stopped.state.incremental?.value, "a walk the source did not end sets no value")
            XCTAssertEqual(stopped.state.incremental?.seen, try value("9"))
        }
    }

    func testDecodingReadsTheSameValuesByEitherPath() throws {
        let body = #"{"items": [{"t": "2024-05-01"}, {"t": 3}, {}, {"t": [1]}, {"t": "x", "t": 2.5}], "next_cursor": null}"#
        let paging = Paging(strategy: .cursor)
        var request = PageRequest(cursor: nil, isFirstPage: true, paging: paging, options: CollectionOptions())
        request.incrementalPointer = "/t"
        var page = try UpstreamPage.decode(UpstreamResponse(body: Array(body.utf8)), for: request)
        XCTAssertNotNil(page.pendingCheck, "the scanned path")
        try page.completeChecks()
        let expected = [#""2024-05-01""#, "3", nil, nil, "2.5"]
        XCTAssertEqual(page.marks.map { $0?.json.description }, expected)
        // A page whose items must be read whole (the item array under a pointer the scanner leaves alone).
        let whole = #"[{"t": "2024-05-01"}, {"t": 3}, {}, {"t": [1]}, {"t": "x", "t": 2.5}]"#
        var bare = request
        bare.paging = Paging(strategy: .cursor, items: "")
        let wholePage = try UpstreamPage.decode(UpstreamResponse(body: Array(whole.utf8)), for: bare)
        var checked = wholePage
        try checked.completeChecks()
        XCTAssertEqual(checked.marks.map { $0?.json.description }, expected)
    }
}

/// Keeps every log line (message and metadata) as text.
private final class LogLines: LogHandler, @unchecked Sendable {
    private let stored = NIOLockedValueBox<[String]>([])
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    var lines: [String] { stored.withLockedValue { $0 } }

    func log(event: LogEvent) {
        let line = "\(event.message) \(event.metadata ?? [:])"
        stored.withLockedValue { $0.append(line) }
    }
}
