import Foundation
import Jansson
import NextPage
@testable import NextPageServer
import XCTest

/// An incremental collection's value in the State and the state file.
final class IncrementalStateFileTests: XCTestCase {
    private var dir = ""

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "nextpage-incremental-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    private func value(_ json: String) throws -> IncrementalValue {
        try XCTUnwrap(IncrementalValue(try JSON.parse(json)))
    }

    func testTheStateShowsTheValueAndTheFileKeepsItWithItsBoundary() throws {
        var state = NextPageState()
        state.hasNext = false
        state.count = 5
        state.pages = 3
        var incremental = IncrementalState(value: try value(#""2024-05-05T10:00:00Z""#))
        incremental.boundary = [0xf71c_5cdb_da7c_a9df, 1]
        incremental.seen = try value("7")
        incremental.seenBoundary = [2]
        incremental.withoutValue = 3
        state.incremental = incremental
        XCTAssertEqual(
            Wire.state("c", state).description,
            #"{"collection":"c","hasNext":false,"isLoading":false,"lastId":null,"count":5,"pages":3,"lastError":null,"incremental":{"value":"2024-05-05T10:00:00Z","seen":7,"withoutValue":3}}"#)
        let bytes = StateStore.encode(["c": state])
        XCTAssertEqual(
            String(decoding: bytes, as: UTF8.self),
            #"{"version":1,"collections":{"c":{"hasNext":false,"lastId":null,"count":5,"pages":3,"lastError":null,"incremental":{"value":"2024-05-05T10:00:00Z","seen":7,"withoutValue":3,"boundary":["0000000000000001","f71c5cdbda7ca9df"],"seenBoundary":["0000000000000002"]}}}}"# + "\n")
        let decoded = try StateStore.decode(bytes, path: "s.json")
        XCTAssertEqual(decoded["c"]?.incremental?.value?.json, incremental.value?.json)
        XCTAssertEqual(decoded["c"]?.incremental?.boundary, incremental.boundary)
        XCTAssertEqual(decoded["c"]?.incremental?.seenBoundary, incremental.seenBoundary)
        XCTAssertEqual(decoded["c"]?.incremental?.withoutValue, 3)
        XCTAssertEqual(decoded["c"]?.incremental?.seen, try value("7"))
    }

    func testABadIncrementalEntryNamesTheField() {
        for (entry, field, expected) in [
            (#"[]"#, "collections.c.incremental", "an object"),
            (#"{"value": true}"#, "collections.c.incremental.value", "a string, a number or null"),
            (#"{"seen": [1]}"#, "collections.c.incremental.seen", "a string, a number or null"),
            (#"{"withoutValue": -1}"#, "collections.c.incremental.withoutValue", "an integer from 0 to 9007199254740991"),
            (#"{"boundary": ["xyz"]}"#, "collections.c.incremental.boundary", "digests of 16 hex digits"),
            (#"{"seenBoundary": 3}"#, "collections.c.incremental.seenBoundary", "an array of at most 1000 digests"),
        ] {
            let text = #"{"version": 1, "collections": {"c": {"hasNext": true, "lastId": null, "count": 0, "pages": 0, "lastError": null, "incremental": \#(entry)}}}"#
            XCTAssertThrowsError(try StateStore.decode(Array(text.utf8), path: "s.json"), entry) { error in
                XCTAssertEqual((error as? StateFileError)?.reason, "\(field): expected \(expected) (fix the file, or delete it to start over)")
            }
        }
    }

    func testARestoredCollectionSendsTheSavedValueAndADefinitionWithoutIncrementalDropsIt() async throws {
        let options = CollectionOptions(incremental: Incremental(pointer: "/t", param: "since", initial: try value("1")))
        let collection = PagedCollection(
            name: "c", client: UnavailableClient(reason: "offline"), paging: Paging(strategy: .cursor), options: options)
        let fresh = await collection.state
        XCTAssertEqual(fresh.incremental?.value, try value("1"))
        var saved = NextPageState()
        saved.incremental = IncrementalState(value: try value("40"))
        await collection.restore(saved)
        let restored = await collection.state
        XCTAssertEqual(restored.incremental?.value, try value("40"))
        // A state file from before the collection was incremental starts from initial.
        await collection.restore(NextPageState())
        let older = await collection.state
        XCTAssertEqual(older.incremental?.value, try value("1"))
        let plain = PagedCollection(name: "p", client: UnavailableClient(reason: "offline"), paging: Paging(strategy: .cursor))
        await plain.restore(saved)
        let plainState = await plain.state
        XCTAssertNil(plainState.incremental)
        XCTAssertFalse(Wire.state("p", plainState).description.contains("incremental"))
    }
}
