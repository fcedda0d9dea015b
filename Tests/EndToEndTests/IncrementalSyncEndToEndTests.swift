import Foundation
import XCTest

/// Incremental sync over the real binary: `nextpage all --state` run again
/// and again against a server on 127.0.0.1 whose data changes between runs,
/// as a cron job would. Each run is checked for the items printed, the
/// requests the server received (and the `since` they sent), and the state
/// file afterwards.
final class IncrementalSyncEndToEndTests: EndToEndTestCase {
    /// Items with `updated_at`, sorted by it, two to a page by `cursor`;
    /// `since` is inclusive, as GitHub's is.
    final class Data: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [(id: Int, updatedAt: String?)]

        init(_ items: [(id: Int, updatedAt: String?)]) {
            self.items = items
        }

        func change(_ body: (inout [(id: Int, updatedAt: String?)]) -> Void) {
            lock.lock(); defer { lock.unlock() }
            body(&items)
        }

        func page(_ target: String) -> HTTPFault {
            lock.lock(); defer { lock.unlock() }
            let query = URLComponents(string: "http://h" + target)?.queryItems ?? []
            let since = query.first { $0.name == "since" }?.value
            let all = items.filter { since == nil || ($0.updatedAt.map { $0 >= since! } ?? true) }
                .sorted { ($0.updatedAt ?? "") < ($1.updatedAt ?? "") }
            let start = Int(query.first { $0.name == "cursor" }?.value ?? "0") ?? 0
            let page = all.dropFirst(start).prefix(2).map { item in
                item.updatedAt.map { #"{"id":\#(item.id),"updated_at":"\#($0)"}"# } ?? #"{"id":\#(item.id)}"#
            }
            let next = start + 2 < all.count ? #""\#(start + 2)""# : "null"
            return .json(#"{"items": [\#(page.joined(separator: ","))], "next_cursor": \#(next)}"#)
        }
    }

    private func start(_ data: Data, incremental: String = #"{"pointer": "/updated_at", "param": "since"}"#) throws -> (FaultyHTTPServer, String) {
        let server = try FaultyHTTPServer { target in data.page(target) }
        addTeardownBlock { server.stop() }
        let directory = try temporaryDirectory()
        try writeFile(directory + "/nextpage.json", #"""
            {"collections": {"c": {"source": {"type": "http", "url": "\#(server.baseURL)/items"},
                                   "paging": {"strategy": "cursor"}, "incremental": \#(incremental)}}}
            """#)
        return (server, directory)
    }

    private func ids(_ result: CommandResult) throws -> [Int64] {
        try result.lines.map { try XCTUnwrap(JSONValue.parse($0)["id"]?.intValue) }
    }

    private func stateFile(_ directory: String) throws -> JSONValue {
        try JSONValue.parse(String(contentsOfFile: directory + "/s.json", encoding: .utf8))
    }

    func testEachRunOfAllPrintsOnlyWhatChangedSinceTheLastOne() throws {
        let data = Data((1...5).map { ($0, "2024-05-0\($0)T10:00:00Z") })
        let (server, directory) = try start(data)

        let first = try runNextpage(["all", "c", "--state", "s.json"], in: directory)
        XCTAssertEqual(first.status, 0, first.stderr)
        XCTAssertEqual(try ids(first), [1, 2, 3, 4, 5])
        XCTAssertEqual(server.requests, ["/items", "/items?cursor=2", "/items?cursor=4"])
        try expectMatch(try stateFile(directory), #"""
            {"version":1,"collections":{"c":{"hasNext":false,"lastId":null,"count":5,"pages":3,"lastError":null,
             "incremental":{"value":"2024-05-05T10:00:00Z","seen":null,"boundary":["<string>"]}}}}
            """#, "after the first run")

        // Between runs: item 2 changes (at 09:00+02:00, that is 07:00Z) and item 6 is added (07:00:00.5Z).
        data.change { items in
            items[1].updatedAt = "2024-06-01T09:00:00+02:00"
            items.append((6, "2024-06-01T07:00:00.5Z"))
        }
        let second = try runNextpage(["all", "c", "--state", "s.json"], in: directory)
        XCTAssertEqual(second.status, 0, second.stderr)
        XCTAssertEqual(try ids(second), [6, 2], "only what changed; item 5, sent again at the bound, not twice")
        XCTAssertEqual(Array(server.requests.dropFirst(3)), [
            "/items?since=2024-05-05T10%3A00%3A00Z", "/items?since=2024-05-05T10%3A00%3A00Z&cursor=2",
        ], "since=<the largest value of the first run> on every request")
        try expectMatch(try stateFile(directory), #"""
            {"version":1,"collections":{"c":{"hasNext":false,"lastId":null,"count":2,"pages":2,"lastError":null,
             "incremental":{"value":"2024-06-01T07:00:00.5Z","seen":null,"boundary":["<string>"]}}}}
            """#, "after the second run")

        // Nothing changed: nothing printed, one request.
        let third = try runNextpage(["all", "c", "--state", "s.json"], in: directory)
        XCTAssertEqual(third.status, 0, third.stderr)
        XCTAssertEqual(third.stdout, "")
        XCTAssertEqual(Array(server.requests.dropFirst(5)), ["/items?since=2024-06-01T07%3A00%3A00.5Z"])
    }

    func testNextStartsANewWalkAtTheEndAndALoopStopsWhenNothingIsNew() throws {
        let data = Data([(1, "2024-05-01"), (2, "2024-05-02")])
        let (server, directory) = try start(data)
        let first = try runNextpage(["next", "c", "--state", "s.json"], in: directory)
        XCTAssertEqual(first.status, 0, first.stderr)
        try expectMatch(try JSONValue.parse(first.stdout), #"{"collection":"c","items":[{"id":1,"updated_at":"2024-05-01"},{"id":2,"updated_at":"2024-05-02"}],"page":1,"hasNext":false,"lastId":null,"count":2}"#)
        let nothing = try runNextpage(["next", "c", "--state", "s.json"], in: directory)
        XCTAssertEqual(nothing.status, 1, "at the end, and the new walk found nothing new: \(nothing.stderr)")
        try expectMatch(try JSONValue.parse(nothing.stdout), #"{"collection":"c","items":[],"page":1,"hasNext":false,"lastId":null,"count":0}"#)
        data.change { $0.append((3, "2024-05-03")) }
        let more = try runNextpage(["next", "c", "--state", "s.json"], in: directory)
        XCTAssertEqual(more.status, 0, more.stderr)
        try expectMatch(try JSONValue.parse(more.stdout), #"{"collection":"c","items":[{"id":3,"updated_at":"2024-05-03"}],"page":1,"hasNext":false,"lastId":null,"count":1}"#)
        XCTAssertEqual(server.requests, ["/items", "/items?since=2024-05-02", "/items?since=2024-05-02"])
    }

    func testResetKeepsTheValueAndForgetIncrementalDropsIt() throws {
        let data = Data((1...3).map { ($0, "2024-05-0\($0)") })
        let (server, directory) = try start(data, incremental: #"{"pointer": "/updated_at", "param": "since", "initial": "2024-05-02"}"#)
        XCTAssertEqual(try ids(try runNextpage(["all", "c", "--state", "s.json"], in: directory)), [2, 3])
        XCTAssertEqual(server.requests, ["/items?since=2024-05-02"], "initial on the first walk")

        let reset = try runNextpage(["reset", "c", "--state", "s.json"], in: directory)
        XCTAssertEqual(reset.status, 0, reset.stderr)
        try expectMatch(try JSONValue.parse(reset.stdout), #"""
            {"collection":"c","hasNext":true,"isLoading":false,"lastId":null,"count":0,"pages":0,"lastError":null,
             "incremental":{"value":"2024-05-03","seen":null,"withoutValue":0}}
            """#)
        XCTAssertEqual(try runNextpage(["all", "c", "--state", "s.json"], in: directory).stdout, "")
        XCTAssertEqual(server.requests.last, "/items?since=2024-05-03")

        let forget = try runNextpage(["reset", "c", "--state", "s.json", "--forget-incremental"], in: directory)
        XCTAssertEqual(forget.status, 0, forget.stderr)
        try expectMatch(try JSONValue.parse(forget.stdout), #"""
            {"collection":"c","hasNext":true,"isLoading":false,"lastId":null,"count":0,"pages":0,"lastError":null,
             "incremental":{"value":"2024-05-02","seen":null,"withoutValue":0}}
            """#)
        XCTAssertEqual(try ids(try runNextpage(["all", "c", "--state", "s.json"], in: directory)), [2, 3])
        XCTAssertEqual(server.requests.last, "/items?since=2024-05-02")
        XCTAssertEqual(server.requests.count, 3)
    }

    func testItemsWithoutTheValueAreDeliveredCountedAndLoggedOnce() throws {
        let data = Data([(1, "2024-05-01"), (2, nil), (3, "2024-05-03"), (4, nil), (5, nil)])
        let (_, directory) = try start(data)
        let all = try runNextpage(["all", "c", "--state", "s.json"], in: directory)
        XCTAssertEqual(all.status, 0, all.stderr)
        XCTAssertEqual(try ids(all), [2, 4, 5, 1, 3], "every item printed; none fails its page")
        let warnings = all.stderr.split(separator: "\n").filter { $0.contains("items without an incremental value") }
        XCTAssertEqual(warnings.count, 1, all.stderr)
        XCTAssert(warnings.first?.contains("/updated_at") ?? false, all.stderr)
        try expectMatch(try stateFile(directory), #"""
            {"version":1,"collections":{"c":{"hasNext":false,"lastId":null,"count":5,"pages":3,"lastError":null,
             "incremental":{"value":"2024-05-03","seen":null,"withoutValue":3,"boundary":["<string>"]}}}}
            """#)
    }
}
