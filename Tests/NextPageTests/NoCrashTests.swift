import Foundation
import Jansson
import NextPage
import XCTest

/// Inputs that must not crash the process (docs/methods.md, Errors: "No input makes the
/// process crash"). Each probe in `CrashProbes` runs in a child copy of this
/// test binary, so a trap fails one test here instead of ending the whole run.
final class NoCrashTests: XCTestCase {
    static let probeVariable = "NEXTPAGE_UNIT_CRASH_PROBE"

    /// Runs `CrashProbes/<name>` in a child process; returns how it ended and what it printed.
    private func runProbe(_ name: String) throws -> (exited: Bool, status: Int32, output: String) {
        let outcome = try ChildTestProcess.run("NextPageTests.CrashProbes/\(name)", variable: Self.probeVariable)
        return (outcome.exited, outcome.status, outcome.output)
    }

    private func assertProbeSurvives(_ name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let result = try runProbe(name)
        let lines = result.output.split(separator: "\n")
        var fatal = lines.filter { $0.contains("Fatal error") || $0.contains("error:") }.joined(separator: "\n")
        if fatal.isEmpty { fatal = "(no message, as with an integer overflow trap)\n" + lines.suffix(4).joined(separator: "\n") }
        guard result.exited else {
            return XCTFail("probe \(name) crashed (signal \(result.status)):\n\(fatal)", file: file, line: line)
        }
        XCTAssertEqual(result.status, 0, "probe \(name) failed:\n\(fatal)", file: file, line: line)
        XCTAssertTrue(lines.contains { $0.contains("Executed 1 test") }, "probe \(name) did not run:\n\(result.output)", file: file, line: line)
    }

    /// A page whose `total` is a real beyond Int64 (`1e300`) is an error or a huge total, not a crash.
    func testHugeRealTotalDoesNotCrash() throws {
        try assertProbeSurvives("testHugeRealTotal")
    }

    /// `load` with `lastId` = Int64.max on a `page` collection, answered with a page, is not a crash.
    func testPageNumberAfterInt64MaxDoesNotCrash() throws {
        try assertProbeSurvives("testPageNumberAfterInt64Max")
    }

    /// An `offset` cursor near Int64.max plus the items of a page is not a crash.
    func testOffsetNearInt64MaxDoesNotCrash() throws {
        try assertProbeSurvives("testOffsetNearInt64Max")
    }
}

/// The probes themselves; they run only in the child process `NoCrashTests` starts.
final class CrashProbes: XCTestCase {
    override func setUpWithError() throws {
        try XCTSkipUnless(ProcessInfo.processInfo.environment[NoCrashTests.probeVariable] == "1",
                          "runs only in the child process that NoCrashTests starts")
    }

    func testHugeRealTotal() {
        let paging = Paging(strategy: .page, total: "/total")
        for total in ["1e300", "-1e300", "9223372036854775808.0", "1e19"] {
            let body = #"{"items": [1], "total": \#(total)}"#
            let request = PageRequest(cursor: .integer(1), isFirstPage: false, paging: paging, options: CollectionOptions())
            do {
                let page = try UpstreamPage.decode(UpstreamResponse(body: Array(body.utf8)), for: request)
                _ = PageNumberStrategy().advance(after: page, request: request, loadedBefore: LoadedBefore())
            } catch LoadError.undecodable(let failure) {
                XCTAssertEqual(failure.pointer, "/total", total)
            } catch {
                XCTFail("unexpected \(error) for total \(total)")
            }
        }
    }

    func testPageNumberAfterInt64Max() async throws {
        let client = ScriptedClient([.page([1, 2])])
        let collection = PagedCollection(name: "p", client: client, paging: Paging(strategy: .page))
        do {
            let result = try await collection.load(lastId: .integer(Int64.max))
            XCTAssertEqual(itemIds(result.items), [1, 2])
        } catch is LoadError {
            // An error reply is fine; a crash is not.
        }
        let cursors = await client.cursors
        XCTAssertEqual(cursors, [.integer(Int64.max)])
    }

    func testOffsetNearInt64Max() {
        let paging = Paging(strategy: .offset)
        let request = PageRequest(cursor: .integer(Int64.max - 1), isFirstPage: false, paging: paging, options: CollectionOptions())
        let page = UpstreamPage(items: [.integer(1), .integer(2), .integer(3)])
        let advance = OffsetStrategy().advance(after: page, request: request, loadedBefore: LoadedBefore())
        XCTAssertNotEqual(advance.next, .integer(Int64.max - 1), "never the same cursor again")
    }
}
