import Foundation
@testable import NextPage
import XCTest

/// A page's check gives way to other tasks between its runs of items
/// (`PageCheck.runGivingWay`), so that a long check does not keep a fetch
/// started meanwhile from sending its request, and it finds what `run()`
/// finds. The order is observed on an executor of one thread that starts
/// only once both tasks are queued: no timing is involved.
final class PageCheckGivingWayTests: XCTestCase {
    private let paging = Paging(strategy: .cursor, items: "/items", next: "/next", id: "/id")

    /// A page of `count` items of about 600 bytes each (`UpstreamPage`'s runs are 64 KiB).
    private func page(count: Int, itemAt: (Int) -> String = { #"{"id": \#($0), "text": "\#(String(repeating: "x", count: 580))"}"# }) -> String {
        #"{"items": [\#((0..<count).map(itemAt).joined(separator: ", "))], "next": "n"}"#
    }

    private func pendingCheck(_ page: String, wantsIds: Bool = true) throws -> PageCheck {
        let request = PageRequest(
            cursor: .string("c"), isFirstPage: false, paging: paging, options: CollectionOptions(dedupe: wantsIds))
        let decoded = try UpstreamPage.decode(UpstreamResponse(body: Array(page.utf8)), for: request)
        return try XCTUnwrap(decoded.pendingCheck, "the page takes the scanned path")
    }

    /// What ran on a paused one-thread executor, in order: the check of
    /// `check` and a task queued right after it that only says it ran.
    private func order(checking check: PageCheck) async throws -> [String] {
        let executor = PausedExecutor()
        let log = Log()
        let checking = Task(executorPreference: executor) {
            _ = try await check.runGivingWay()
            log.append("checked")
        }
        let other = Task(executorPreference: executor) { log.append("other task") }
        executor.start()
        try await checking.value
        await other.value
        executor.stop()
        return log.entries
    }

    func testAPageOfSeveralRunsLetsATaskQueuedAfterItRunBeforeItsCheckEnds() async throws {
        let check = try pendingCheck(page(count: 300))
        let ran = try await order(checking: check)
        XCTAssertEqual(ran, ["other task", "checked"])
    }

    func testAPageOfOneRunIsCheckedWithoutGivingWay() async throws {
        let check = try pendingCheck(page(count: 20))
        let ran = try await order(checking: check)
        XCTAssertEqual(ran, ["checked", "other task"])
    }

    func testGivingWayFindsWhatRunFinds() async throws {
        // Several runs with ids; an id of the wrong kind in a late run; a
        // repeated key in a late run (the items are then read again whole).
        let plain = try pendingCheck(page(count: 300))
        let expected = try plain.run()
        let outcome = try await plain.runGivingWay()
        XCTAssertEqual(outcome.ids, expected.ids)
        XCTAssertEqual(outcome.ids, (0..<300).map { .integer(Int64($0)) })
        XCTAssertNil(outcome.items)

        let badId = try pendingCheck(page(count: 300) { index in
            index == 250 ? #"{"id": [\#(index)], "pad": "\#(String(repeating: "y", count: 580))"}"# : #"{"id": \#(index), "pad": "\#(String(repeating: "y", count: 580))"}"#
        })
        XCTAssertThrowsError(try badId.run())
        do {
            _ = try await badId.runGivingWay()
            XCTFail("an id of the wrong kind fails the check")
        } catch let error as LoadError {
            XCTAssertTrue("\(error)".contains("/id"), "\(error)")
        }

        let repeated = try pendingCheck(page(count: 300) { index in
            index == 280 ? #"{"id": \#(index), "v": 1, "v": 2}"# : #"{"id": \#(index), "pad": "\#(String(repeating: "z", count: 580))"}"#
        })
        let whole = try repeated.run()
        let givingWay = try await repeated.runGivingWay()
        XCTAssertEqual(givingWay.items?.map(\.description), whole.items?.map(\.description))
        XCTAssertEqual(givingWay.items?[280].description, #"{"id":280,"v":2}"#)
    }
}

/// Appends from any task; read once the tasks are done.
private final class Log: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []

    func append(_ line: String) {
        lock.withLock { lines.append(line) }
    }

    var entries: [String] { lock.withLock { lines } }
}

/// A task executor of one thread that holds the jobs enqueued before
/// `start()` and then runs every job in the order it was enqueued.
private final class PausedExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var stopped = false

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.withLock {
            jobs.append(job)
            condition.signal()
        }
    }

    func start() {
        let thread = Thread { [self] in
            while let job = next() { job.runSynchronously(on: asUnownedTaskExecutor()) }
        }
        thread.start()
    }

    func stop() {
        condition.withLock {
            stopped = true
            condition.signal()
        }
    }

    private func next() -> UnownedJob? {
        condition.withLock {
            while jobs.isEmpty && !stopped { condition.wait() }
            return jobs.isEmpty ? nil : jobs.removeFirst()
        }
    }
}
