import NextPage
import XCTest

final class NearestNameTests: XCTestCase {
    private let strategies = ["cursor", "lastId", "page", "offset", "link", "nextUrl", "auto"]
    private let collectionKeys = [
        "concurrency", "dedupe", "incremental", "maxEmptyPages", "maxItems", "onRepeatedCursor", "pageSize", "pageSizeParam",
        "paging", "prefetch", "source",
    ]

    func testCaseAndSeparatorsFirstThenTheSmallestEditDistance() {
        XCTAssertEqual(NearestName.suggestion(for: "curser", among: strategies), "cursor")
        XCTAssertEqual(NearestName.suggestion(for: "pagesize", among: collectionKeys), "pageSize")
        XCTAssertEqual(NearestName.suggestion(for: "page_size", among: collectionKeys), "pageSize")
        XCTAssertEqual(NearestName.suggestion(for: "LastID", among: strategies), "lastId")
        // A transposition is one edit.
        XCTAssertEqual(NearestName.suggestion(for: "nextUlr", among: strategies), "nextUrl")
        XCTAssertEqual(NearestName.suggestion(for: "maxitem", among: collectionKeys), "maxItems")
        XCTAssertEqual(NearestName.suggestion(for: "prefech", among: collectionKeys), "prefetch")
        // A name cut short or run on, when only one fits.
        XCTAssertEqual(NearestName.suggestion(for: "refresh", among: ["refreshToken", "clientId"]), "refreshToken")
        XCTAssertEqual(NearestName.suggestion(for: "timeoutSeconds", among: ["timeout", "retries"]), "timeout")
        XCTAssertNil(NearestName.suggestion(for: "maxI", among: ["maxItems", "maxIdle"]))
    }

    func testNothingIsSuggestedForAFarOrValidWord() {
        XCTAssertNil(NearestName.suggestion(for: "bananas", among: strategies))
        XCTAssertNil(NearestName.suggestion(for: "x", among: strategies))
        XCTAssertNil(NearestName.suggestion(for: "cursor", among: strategies))
        XCTAssertNil(NearestName.suggestion(for: "", among: strategies))
        // Three edits away from a four-letter name is another word.
        XCTAssertNil(NearestName.suggestion(for: "pool", among: ["page"]))
    }

    func testDistanceCountsTranspositionsAsOneEdit() {
        func distance(_ a: String, _ b: String) -> Int { NearestName.distance(Array(a), Array(b)) }
        XCTAssertEqual(distance("", "abc"), 3)
        XCTAssertEqual(distance("abc", "abc"), 0)
        XCTAssertEqual(distance("ab", "ba"), 1)
        XCTAssertEqual(distance("kitten", "sitting"), 3)
        XCTAssertEqual(distance("ca", "abc"), 3)
    }
}
