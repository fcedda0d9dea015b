import Jansson
import JSONRPC
import NextPage
@testable import NextPageServer
import XCTest

final class DemoTests: XCTestCase {
    func testDemoHasTenPagesOf250DistinctIds() throws {
        XCTAssertEqual(Demo.pages.count, 10)
        XCTAssertNotNil(Demo.pages["first.json"])
        var allIds: [Int64] = []
        for (name, body) in Demo.pages {
            let page = try JSON.parse(body)
            let items = try XCTUnwrap(page.pointer("/items"), name)
            XCTAssertEqual(items.count, 25, name)
            allIds += items.elements.compactMap { $0["id"]?.integer }
            XCTAssertNotNil(page.pointer("/next_cursor"), name)
        }
        XCTAssertEqual(allIds.count, 250)
        XCTAssertEqual(Set(allIds).count, 250)
        XCTAssertEqual(Set(allIds), Set(1...250))
    }

    func testWalkingTheDemoYieldsIdsOneTo250InOrderAndEnds() async throws {
        let collection = Demo.definition.makeCollection(name: Demo.name)
        var all: [Int] = []
        var pages: [Int] = []
        var last: PageResult?
        for _ in 0..<11 {
            let state = await collection.state
            guard state.hasNext else { break }
            let result = try await collection.loadNext()
            XCTAssertTrue(result.landed)
            all += result.items.map { raw in Int((try? raw.parsed().pointer("/id")?.integer) ?? -1) }
            pages.append(result.page)
            last = result
        }
        XCTAssertEqual(all, Array(1...250))
        XCTAssertEqual(pages, Array(1...10))
        XCTAssertEqual(last?.state.hasNext, false)
        XCTAssertNil(last?.state.lastId)
        XCTAssertEqual(last?.state.count, 250)
        XCTAssertNil(last?.state.lastError)

        let after = try await collection.loadNext()
        XCTAssertFalse(after.landed)
        XCTAssertEqual(after.items, [])
        let kept = await collection.items(offset: 240, limit: 100)
        XCTAssertEqual(kept.offset, 240)
        XCTAssertEqual(kept.items.count, 10)
        XCTAssertEqual(kept.count, 250)
    }
}

final class WireTests: XCTestCase {
    func testStateShape() throws {
        var state = NextPageState()
        state.lastId = .string("c2")
        state.count = 45
        state.pages = 3
        state.lastError = "boom"
        let json = try Wire.state("friends", state).parsed()
        XCTAssertEqual(json.members.map(\.key), ["collection", "hasNext", "isLoading", "lastId", "count", "pages", "lastError"])
        XCTAssertEqual(json["collection"]?.string, "friends")
        XCTAssertEqual(json["hasNext"]?.bool, true)
        XCTAssertEqual(json["isLoading"]?.bool, false)
        XCTAssertEqual(json["lastId"]?.string, "c2")
        XCTAssertEqual(json["count"]?.integer, 45)
        XCTAssertEqual(json["pages"]?.integer, 3)
        XCTAssertEqual(json["lastError"]?.string, "boom")

        let fresh = try Wire.state("f", NextPageState()).parsed()
        XCTAssertEqual(fresh["lastId"]?.isNull, true)
        XCTAssertEqual(fresh["lastError"]?.isNull, true)
    }

    func testPageShape() throws {
        var state = NextPageState()
        state.lastId = .integer(99)
        state.count = 2
        state.pages = 1
        let result = PageResult(items: [.object(["id": .integer(1)]), .object(["id": .integer(2)])], page: 1, state: state)
        let json = try Wire.page("friends", result).parsed()
        XCTAssertEqual(json["collection"]?.string, "friends")
        XCTAssertEqual(json["items"]?.compactString, #"[{"id":1},{"id":2}]"#)
        XCTAssertEqual(json["page"]?.integer, 1)
        XCTAssertEqual(json["hasNext"]?.bool, true)
        XCTAssertEqual(json["lastId"]?.integer, 99)
        XCTAssertEqual(json["count"]?.integer, 2)
        XCTAssertNil(json["skipped"], "skipped appears only on skipped replies")

        let skipped = try Wire.page("f", PageResult(items: [], page: 0, state: NextPageState(), skipped: true, landed: false)).parsed()
        XCTAssertEqual(skipped["skipped"]?.bool, true)
        XCTAssertEqual(skipped["items"]?.count, 0)
    }

    func testLoadErrorsMapToSpecCodes() throws {
        let upstream = Wire.error(.upstream(UpstreamFailure(status: 503, attempts: 3, retryable: true, message: "HTTP 503")), collection: "c")
        XCTAssertEqual(upstream.code, -32002)
        let data = try XCTUnwrap(upstream.data).parsed()
        XCTAssertEqual(data["collection"]?.string, "c")
        XCTAssertEqual(data["status"]?.integer, 503)
        XCTAssertEqual(data["attempts"]?.integer, 3)
        XCTAssertEqual(data["retryable"]?.bool, true)
        XCTAssertEqual(data["message"]?.string, "HTTP 503")

        let noStatus = try XCTUnwrap(Wire.error(.upstream(UpstreamFailure(retryable: false, message: "x")), collection: "c").data).parsed()
        XCTAssertNil(noStatus["status"])

        let undecodable = Wire.error(.undecodable(PageDecodingFailure(pointer: "/items", line: 2, column: 5, message: "bad")), collection: "c")
        XCTAssertEqual(undecodable.code, -32003)
        let undecodableData = try XCTUnwrap(undecodable.data).parsed()
        XCTAssertEqual(undecodableData["pointer"]?.string, "/items")
        XCTAssertEqual(undecodableData["line"]?.integer, 2)
        XCTAssertEqual(undecodableData["column"]?.integer, 5)
        XCTAssertEqual(undecodableData["collection"]?.string, "c")

        XCTAssertEqual(Wire.error(.cancelled, collection: "c").code, -32800)
    }

    func testUnknownCollectionAndInvalidDefinition() throws {
        let unknown = Wire.unknownCollection("nope", known: ["b", "a"])
        XCTAssertEqual(unknown.code, -32001)
        let data = try XCTUnwrap(unknown.data).parsed()
        XCTAssertEqual(data["collection"]?.string, "nope")
        XCTAssertEqual(data["known"]?.compactString, #"["a","b"]"#)

        let invalid = Wire.invalidDefinition(DefinitionError(field: "paging.strategy", expected: "one of cursor"))
        XCTAssertEqual(invalid.code, -32004)
        let invalidData = try XCTUnwrap(invalid.data).parsed()
        XCTAssertEqual(invalidData["field"]?.string, "paging.strategy")
        XCTAssertEqual(invalidData["expected"]?.string, "one of cursor")
    }
}
