import Jansson
import NextPage
import XCTest

/// One scripted answer of `ScriptedClient`.
enum Scripted: Sendable {
    case response(UpstreamResponse)
    case failure(LoadError)

    /// A page `{"items": [{"id": N}, ...], "next_cursor": next}` (the `cursor` strategy's defaults).
    static func page(_ ids: [Int], next: String?) -> Scripted {
        .response(UpstreamResponse(body: scriptedPageBody(ids, next: next.map(RawJSON.string) ?? .null)))
    }

    /// A page with the given ids and extra top-level members.
    static func page(_ ids: [Int], _ extra: KeyValuePairs<String, RawJSON?> = [:]) -> Scripted {
        var members: [(String, RawJSON?)] = [("items", .array(ids.map(scriptedItem)))]
        members += extra.map { ($0.key, $0.value) }
        return .response(UpstreamResponse(body: RawJSON.object(members).bytes))
    }

    /// A page whose body is the given text.
    static func text(_ body: String) -> Scripted {
        .response(UpstreamResponse(body: Array(body.utf8)))
    }
}

func scriptedItem(_ id: Int) -> RawJSON { .object(["id": .integer(id), "name": .string("item \(id)")]) }

func scriptedPageBody(_ ids: [Int], next: RawJSON) -> [UInt8] {
    RawJSON.object(["items": .array(ids.map(scriptedItem)), "next_cursor": next]).bytes
}

/// The `id` of each delivered item (-1 when an item has none).
func itemIds<C: Collection>(_ items: C) -> [Int] where C.Element == RawJSON {
    items.map { raw in
        guard let parsed = try? raw.parsed(), let id = parsed.pointer("/id")?.integer else { return -1 }
        return Int(id)
    }
}

/// A `Client` test double: answers fetches from a script, in order, records
/// every request, and can hold chosen fetches open until the test releases
/// them. Tests learn that a fetch has started (or finished) by awaiting
/// `waitForStart`/`waitForFinish`, which resume from the double itself: no
/// sleeps, no timing.
actor ScriptedClient: Client {
    struct Call: Sendable, Equatable {
        var cursor: Cursor?
        var isFirstPage: Bool
        var pageSize: Int?
    }

    private let script: [Scripted]
    private let held: Set<Int>
    private var gates: [Int: CheckedContinuation<Void, Never>] = [:]
    private var released: Set<Int> = []
    private var startWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    private var finishWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

    /// Every request, in the order the fetches started.
    private(set) var calls: [Call] = []
    /// How many fetches have returned or thrown.
    private(set) var finished = 0

    /// Whether the double presents itself as a source whose reads have no
    /// effects (a file source), which lets collections read ahead.
    nonisolated let fetchesHaveNoEffects: Bool

    /// `hold` lists the (0-based) fetches that wait for `release` before answering.
    init(_ script: [Scripted], hold: Set<Int> = [], noEffects: Bool = false) {
        self.script = script
        self.held = hold
        self.fetchesHaveNoEffects = noEffects
    }

    var cursors: [Cursor?] { calls.map(\.cursor) }

    func fetch<R: Request>(_ request: R) async throws -> UpstreamResponse {
        let index = calls.count
        calls.append(Call(cursor: request.cursor, isFirstPage: request.isFirstPage, pageSize: request.pageSize))
        resume(&startWaiters, reached: calls.count)
        if held.contains(index), !released.contains(index) {
            await withCheckedContinuation { gates[index] = $0 }
        }
        defer {
            finished += 1
            resume(&finishWaiters, reached: finished)
        }
        guard index < script.count else {
            throw LoadError.upstream(UpstreamFailure(retryable: false, message: "script exhausted at fetch \(index)"))
        }
        switch script[index] {
        case .response(let response): return response
        case .failure(let error): throw error
        }
    }

    /// Lets held fetch `index` answer (now, or as soon as it starts).
    func release(_ index: Int) {
        released.insert(index)
        gates.removeValue(forKey: index)?.resume()
    }

    /// Returns once `count` fetches have started.
    func waitForStart(_ count: Int) async {
        if calls.count >= count { return }
        await withCheckedContinuation { startWaiters.append((count, $0)) }
    }

    /// Returns once `count` fetches have returned or thrown.
    func waitForFinish(_ count: Int) async {
        if finished >= count { return }
        await withCheckedContinuation { finishWaiters.append((count, $0)) }
    }

    private func resume(_ waiters: inout [(count: Int, continuation: CheckedContinuation<Void, Never>)], reached: Int) {
        let ready = waiters.filter { $0.count <= reached }
        waiters.removeAll { $0.count <= reached }
        for waiter in ready { waiter.continuation.resume() }
    }
}

/// Awaits a task that must end with `LoadError.cancelled`.
func assertCancelled(_ task: Task<PageResult, any Error>, _ message: String = "",
                     file: StaticString = #filePath, line: UInt = #line) async {
    do {
        let result = try await task.value
        XCTFail("expected LoadError.cancelled, got a page with items \(itemIds(result.items)) \(message)", file: file, line: line)
    } catch let error as LoadError {
        XCTAssertEqual(error, .cancelled, message, file: file, line: line)
    } catch {
        XCTFail("expected LoadError.cancelled, got \(error) \(message)", file: file, line: line)
    }
}

/// Runs `body`, which must throw a `LoadError`, and returns it.
func expectLoadError<T>(_ body: () async throws -> T, file: StaticString = #filePath, line: UInt = #line) async -> LoadError? {
    do {
        let value = try await body()
        XCTFail("expected a LoadError, got \(value)", file: file, line: line)
        return nil
    } catch let error as LoadError {
        return error
    } catch {
        XCTFail("expected a LoadError, got \(error)", file: file, line: line)
        return nil
    }
}
