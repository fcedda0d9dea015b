import Jansson
@testable import NextPage
import XCTest

/// Pages that once made the scanned decoding and the whole-page decoding
/// disagree (found by the `pages` fuzz target, Fuzz/), kept as they were
/// found and in their smallest form.
final class PageDecodingRegressionTests: XCTestCase {
    private func decodeBothWays(_ body: [UInt8], paging: Paging, file: StaticString = #filePath, line: UInt = #line) -> PageItems? {
        let request = PageRequest(cursor: nil, isFirstPage: true, paging: paging, options: CollectionOptions())
        let response = UpstreamResponse(body: body)
        var usual: Result<PageItems, LoadError>
        do {
            var page = try UpstreamPage.decode(response, for: request)
            try page.completeChecks()
            usual = .success(page.items)
        } catch {
            usual = .failure(error as! LoadError)
        }
        let whole: Result<PageItems, LoadError>
        do {
            whole = .success(try UpstreamPage.decodeWhole(body, headers: [], paging: paging, wantsIds: false).items)
        } catch {
            whole = .failure(error as! LoadError)
        }
        switch (usual, whole) {
        case (.success(let a), .success(let b)):
            // Compared as values: the scanned path keeps the source's spelling.
            XCTAssertEqual(a.map { try? $0.parsed().compactString }, b.map { try? $0.parsed().compactString },
                           file: file, line: line)
            for item in a {
                XCTAssertFalse(item.bytes.contains { $0 < 0x20 }, "forwarded item \(item.bytes) holds a control byte", file: file, line: line)
            }
            return a
        case (.failure(let a), .failure(let b)):
            XCTAssertEqual(a, b, file: file, line: line)
        default:
            XCTFail("scanned: \(usual), whole page: \(whole)", file: file, line: line)
        }
        return nil
    }

    /// A `lastId` collection without a `hasNext` pointer reads a boolean
    /// `/has_more` beside its items; both decoders read it alike, and leave
    /// anything else there alone.
    func testBothDecodersReadLastIdsHasMoreAlike() throws {
        let paging = Paging(strategy: .lastId, items: "/data")
        let request = PageRequest(cursor: nil, isFirstPage: true, paging: paging, options: CollectionOptions())
        let cases: [(String, Bool?)] = [
            (#"{"data": [{"id": "a"}], "has_more": false}"#, false),
            (#"{"has_more": true, "data": [{"id": "a"}]}"#, true),
            (#"{"data": [{"id": "a"}], "has_more": "no"}"#, nil),
            (#"{"data": [{"id": "a"}]}"#, nil),
        ]
        for (body, expected) in cases {
            let response = UpstreamResponse(body: Array(body.utf8))
            let scanned = try XCTUnwrap(UpstreamPage.decodeScanned(response, paging: paging, wantsIds: false), body)
            let whole = try UpstreamPage.decodeWhole(response.body, headers: [], paging: paging, wantsIds: false)
            XCTAssertEqual(scanned.hasNextFlag, expected, body)
            XCTAssertEqual(whole.hasNextFlag, expected, body)
            var page = try UpstreamPage.decode(response, for: request)
            try page.completeChecks()
            XCTAssertEqual(page.hasNextFlag, expected, body)
        }
    }

    /// jansson skips a NUL byte right after a number or a literal (`[3\0]`
    /// parses as `[3]`), so the scanner must not vouch for one: it used to
    /// forward the NUL inside an item, and, when whitespace came before the
    /// NUL, to accept a page jansson rejects once the whitespace is there.
    func testANulOutsideStringsIsLeftToJansson() throws {
        let paging = Paging(strategy: .cursor, items: "/items")
        for body in ["{\"items\":[3\0]}", "{\"items\":[true\0, 1]}", "{\"items\":[{\"n\":3\t\0}]}", "{\"items\":[1,\n\0 2]}"] {
            let bytes = Array(body.utf8)
            XCTAssertNil(bytes.withUnsafeBufferPointer { JSONScanner.compactArray(at: ["items"], in: $0) }, body.debugDescription)
            _ = decodeBothWays(bytes, paging: paging)
        }
        // jansson's reading of the first page: one item, 3, forwarded without the NUL.
        let items = try XCTUnwrap(decodeBothWays(Array("{\"items\":[3\0]}".utf8), paging: paging))
        XCTAssertEqual(items.map(\.description), ["3"])
    }

    /// The input as the fuzz target found it: a `link` page whose items are
    /// the whole body, with a tab and a NUL after a number.
    func testTheLinkPageTheFuzzerFound() {
        let body: [UInt8] = Array(#"[{"[number":3"#.utf8) + [0x09, 0x00] + Array(#"},{"number":2}]"#.utf8)
        XCTAssertNil(decodeBothWays(body, paging: Paging(strategy: .link, items: "", id: "/id")), "not JSON, either way")
    }
}
