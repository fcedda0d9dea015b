import Jansson
@testable import NextPage
import XCTest

/// The scanned decoding of a page (compact the item array, check it with
/// jansson) gives exactly what parsing the whole page with jansson gives:
/// the same items, cursor, flags and ids, or the same error. Checked over
/// thousands of generated pages, valid and broken, with a fixed seed.
final class PageDecodingDifferentialTests: XCTestCase {
    private var rng = SplitMix64(state: 20_241_123)

    private func space() -> String {
        rng.chance(60) ? "" : rng.pick([" ", "\n", "\t", "  ", "\r\n ", " \n\t "])
    }

    private func string() -> String {
        let pieces = ["a", "é", "😀", "\\n", "\\\"", "\\\\", "\\u00e9", "\\ud83d\\ude00", " ", "]", "}", ",", ":", "\\/", "x y"]
        var text = "\""
        for _ in 0..<rng.below(5) { text += rng.pick(pieces) }
        return text + "\""
    }

    private func scalar() -> String {
        rng.pick([
            "0", "-1", "42", "9223372036854775807", "1.5", "-0.25e-3", "1E+2", "true", "false", "null", string(),
        ])
    }

    private func value(depth: Int) -> String {
        if depth > 3 || rng.chance(40) { return scalar() }
        if rng.chance(50) {
            let members = (0..<rng.below(4)).map { _ in
                "\(space())\(rng.pick(["\"id\"", "\"name\"", "\"id\"", string()]))\(space()):\(space())\(value(depth: depth + 1))\(space())"
            }
            return "{" + members.joined(separator: ",") + space() + "}"
        }
        let elements = (0..<rng.below(4)).map { _ in space() + value(depth: depth + 1) + space() }
        return "[" + elements.joined(separator: ",") + space() + "]"
    }

    private func item() -> String {
        if rng.chance(70) {
            let id = rng.chance(80) ? String(rng.below(50)) : rng.pick(["\"k\(rng.below(9))\"", "null", "1.5", "{}"])
            return "{\(space())\"id\"\(space()):\(space())\(id)\(space()),\"v\":\(space())\(value(depth: 1))}"
        }
        return value(depth: 1)
    }

    /// A page with items at `/items` or `/data/nodes`, a cursor, flags, maybe duplicates and noise.
    private func page(nested: Bool, itemCount: Int? = nil) -> String {
        let items = "[" + (0..<(itemCount ?? rng.below(6))).map { _ in space() + item() + space() }.joined(separator: ",") + space() + "]"
        var members: [String] = []
        let itemsMember = nested ? "\"data\":\(space()){\"nodes\":\(space())\(items)}" : "\"items\":\(space())\(items)"
        members.append(itemsMember)
        if rng.chance(80) { members.append("\"next\":\(space())\(rng.pick(["\"c\(rng.below(99))\"", "null", "\"\"", "7", "[1]"]))") }
        if rng.chance(50) { members.append("\"more\":\(space())\(rng.pick(["true", "false", "1"]))") }
        if rng.chance(40) { members.append("\"total\":\(space())\(rng.pick(["10", "1e300", "\"x\"", "2.5"]))") }
        if rng.chance(10) { members.append(nested ? "\"data\":{\"nodes\":[]}" : "\"items\":\(space())[1]") }
        if rng.chance(20) { members.append("\"noise\":\(space())\(value(depth: 0))") }
        if rng.chance(5) { members.append("\"\\u0069tems\":[\"escaped\"]") }
        members.shuffle(using: &rng)
        var text = space() + "{" + members.map { space() + $0 + space() }.joined(separator: ",") + "}" + space()
        if rng.chance(20) { text = mutate(text) }
        return text
    }

    /// Breaks a page the way real pages break: a byte dropped, changed, or a cut.
    private func mutate(_ text: String) -> String {
        var bytes = Array(text.utf8)
        guard !bytes.isEmpty else { return text }
        let at = rng.below(bytes.count)
        switch rng.below(5) {
        case 0: bytes.remove(at: at)
        case 1: bytes[at] = rng.pick(Array(" ,:[]{}\"\\x1".utf8))
        case 2: bytes.removeSubrange(at...)
        case 3: bytes.insert(rng.pick([0x00, 0x0A, 0xFF, 0xC3]), at: at)
        default: bytes.insert(contentsOf: Array(" 1 2 ".utf8), at: at)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private enum Outcome: Equatable {
        case page(items: [String], ids: [Cursor?], last: Cursor?, next: Cursor?, more: Bool?, total: Int64?)
        case failure(LoadError)
    }

    /// Items compared as values (the scanned path keeps the source's
    /// spelling, such as `1E+2`, where jansson's dump respells it).
    private func normalized(_ items: PageItems) -> [String] {
        items.map { item in (try? item.parsed().compactString) ?? "unparsable: \(item)" }
    }

    private func outcome(_ body: () throws -> UpstreamPage) -> Outcome {
        do {
            let page = try body()
            return .page(items: normalized(page.items), ids: page.ids, last: page.lastItemId, next: page.next,
                         more: page.hasNextFlag, total: page.total)
        } catch let error as LoadError {
            return .failure(error)
        } catch {
            return .failure(.undecodable(PageDecodingFailure(message: "unexpected \(error)")))
        }
    }

    func testScannedDecodingAgreesWithWholePageParsing() throws {
        try compareDecodings(rounds: 6000, minimumScanned: 2500, minimumFailures: 450) { _ in nil }
    }

    /// Pages whose items span several of the checker's runs.
    func testLargePagesCheckedInRunsAgreeWithWholePageParsing() throws {
        try compareDecodings(rounds: 80, minimumScanned: 30, minimumFailures: 8) { [self] _ in 1500 + rng.below(1500) }
        XCTAssertGreaterThan(PageCheck.runBytes, 0)
    }

    private func compareDecodings(rounds: Int, minimumScanned: Int, minimumFailures: Int, itemCount: (Int) -> Int?) throws {
        var scanned = 0
        var failures = 0
        for round in 0..<rounds {
            let nested = round % 3 == 0
            let text = page(nested: nested, itemCount: itemCount(round))
            let strategy: Paging.Strategy = rng.pick([.cursor, .lastId, .nextUrl, .page])
            let paging = Paging(
                strategy: strategy, items: nested ? "/data/nodes" : "/items", next: "/next", id: "/id",
                hasNext: rng.chance(30) ? "/more" : nil, total: rng.chance(20) ? "/total" : nil)
            let wantsIds = rng.chance(30)
            let response = UpstreamResponse(body: Array(text.utf8))
            let options = CollectionOptions(dedupe: wantsIds)
            let request = PageRequest(cursor: .string("c"), isFirstPage: false, paging: paging, options: options)

            let viaDecode = outcome {
                var page = try UpstreamPage.decode(response, for: request)
                try page.completeChecks()
                return page
            }
            let whole = outcome { try UpstreamPage.decodeWhole(response.body, headers: [], paging: paging, wantsIds: wantsIds) }
            XCTAssertEqual(viaDecode, whole, "page \(round): \(text)")
            if UpstreamPage.decodeScanned(response, paging: paging, wantsIds: wantsIds) != nil { scanned += 1 }
            if case .failure = whole { failures += 1 }
        }
        // The comparison means something only if both paths were exercised.
        XCTAssertGreaterThan(scanned, minimumScanned, "pages decoded by scanning")
        XCTAssertGreaterThan(failures, minimumFailures, "broken pages")
    }
}

