import NextPage
import XCTest

/// RFC 8288 `Link` header parsing.
final class LinkHeaderTests: XCTestCase {
    private func next(_ values: [String]) -> String? {
        LinkHeader.parse(values).first { $0.relations.contains("next") }?.target
    }

    func testGitHubHeader() {
        let header = #"<https://api.github.com/repositories/1000/issues?per_page=3&page=2>; rel="next", <https://api.github.com/repositories/1000/issues?per_page=3&page=5>; rel="last""#
        let links = LinkHeader.parse([header])
        XCTAssertEqual(links.count, 2)
        XCTAssertEqual(links.map(\.target), [
            "https://api.github.com/repositories/1000/issues?per_page=3&page=2",
            "https://api.github.com/repositories/1000/issues?per_page=3&page=5",
        ])
        XCTAssertEqual(links.map(\.relations), [["next"], ["last"]])
        XCTAssertEqual(links.first?.parameters.map(\.name), ["rel"])
        XCTAssertEqual(links.first?.parameters.map(\.value), ["next"])
        XCTAssertEqual(next([header]), "https://api.github.com/repositories/1000/issues?per_page=3&page=2")
    }

    func testSeveralHeaders() {
        let links = LinkHeader.parse([#"<https://x/1>; rel="prev""#, #"<https://x/3>; rel="next""#, ""])
        XCTAssertEqual(links.map(\.target), ["https://x/1", "https://x/3"])
        XCTAssertEqual(next([#"<https://x/1>; rel="prev""#, #"<https://x/3>; rel="next""#]), "https://x/3")
    }

    func testUnquotedRel() {
        XCTAssertEqual(next(["<https://x/2>; rel=next"]), "https://x/2")
        XCTAssertEqual(next(["<https://x/2>;rel=next,<https://x/9>;rel=last"]), "https://x/2")
    }

    func testSeveralRelValues() {
        let links = LinkHeader.parse([#"<https://x/2>; rel="next last""#])
        XCTAssertEqual(links.first?.relations, ["next", "last"])
        XCTAssertEqual(next([#"<https://x/2>; rel="last next""#]), "https://x/2")
        XCTAssertEqual(next([#"<https://x/2>; rel="  Next   "#]), nil, "an unclosed quoted string is malformed")
    }

    func testRelIsCaseInsensitiveAndParameterNamesAreLowercased() {
        let links = LinkHeader.parse([#"<https://x/2>; REL="NEXT"; Title=x"#])
        XCTAssertEqual(links.first?.relations, ["next"])
        XCTAssertEqual(links.first?.parameters.map(\.name), ["rel", "title"])
        XCTAssertEqual(links.first?.parameters.map(\.value), ["NEXT", "x"])
    }

    func testParametersInAnyOrder() {
        let header = #"<https://x/2>; title="x, y"; rel=next"#
        let links = LinkHeader.parse([header])
        XCTAssertEqual(links.count, 1)
        XCTAssertEqual(links.first?.target, "https://x/2")
        XCTAssertEqual(links.first?.relations, ["next"])
        XCTAssertEqual(links.first?.parameters.map(\.name), ["title", "rel"])
        XCTAssertEqual(links.first?.parameters.map(\.value), ["x, y", "next"])
        XCTAssertEqual(next([#"<https://x/3>; type="text/html"; title="p; q"; rel="next""#]), "https://x/3")
    }

    func testCommasInsideQuotedStrings() {
        let header = #"<https://x/1>; rel="prev"; title="a, <b>; rel=next, c", <https://x/3>; rel="next""#
        let links = LinkHeader.parse([header])
        XCTAssertEqual(links.map(\.target), ["https://x/1", "https://x/3"])
        XCTAssertEqual(links.first?.parameters.last?.value, "a, <b>; rel=next, c")
        XCTAssertEqual(next([header]), "https://x/3")
        // An escaped quote does not end the string.
        let escaped = #"<https://x/1>; title="say \"hi, there\""; rel=prev, <https://x/4>; rel=next"#
        XCTAssertEqual(LinkHeader.parse([escaped]).first?.parameters.first?.value, #"say "hi, there""#)
        XCTAssertEqual(next([escaped]), "https://x/4")
    }

    func testCommasInsideTargets() {
        let header = #"<https://x/items?ids=1,2,3&page=2>; rel="next", <https://x/items?ids=1,2,3&page=9>; rel="last""#
        let links = LinkHeader.parse([header])
        XCTAssertEqual(links.map(\.target), ["https://x/items?ids=1,2,3&page=2", "https://x/items?ids=1,2,3&page=9"])
        XCTAssertEqual(next([header]), "https://x/items?ids=1,2,3&page=2")
    }

    func testNoNext() {
        XCTAssertNil(next([#"<https://x/1>; rel="prev", <https://x/1>; rel="first""#]))
        XCTAssertNil(next([]))
        XCTAssertNil(next([""]))
        XCTAssertNil(next(["<https://x/2>"]), "a link without rel")
        XCTAssertNil(next([#"<https://x/2>; rel="nextpage""#]), "relation types are whole words")
    }

    func testOnlyTheFirstRelCounts() {
        XCTAssertEqual(LinkHeader.parse(["<https://x/2>; rel=prev; rel=next"]).first?.relations, ["prev"])
    }

    func testWhitespaceAroundParameters() {
        XCTAssertEqual(next([" <https://x/2> ; rel = \"next\" , <https://x/3> ;\trel=last "]), "https://x/2")
    }

    func testMalformedLinksAreSkipped() {
        let links = LinkHeader.parse([#"garbage, <https://x/2>; rel="next", <unterminated; rel=last"#])
        XCTAssertEqual(links.map(\.target), ["https://x/2"])
        XCTAssertEqual(next([#"https://x/1; rel="next", <https://x/5>; rel="next""#]), "https://x/5")
    }
}
