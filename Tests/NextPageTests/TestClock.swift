import NIOConcurrencyHelpers
import NextPage

/// A clock the test controls: its time moves only when a wait moves it on
/// (at once, by the wait) or the test calls `advance`. Every wait is noted,
/// so tests check the waits a source made without ever waiting or timing.
///
/// With `holdsWaits`, a wait suspends until `releaseWaits` (or until its
/// task is cancelled: it then throws, as the system clock does), so a test
/// can act while a source is waiting; `waitForWaiters` resumes from the
/// clock itself, not from a sleep.
final class TestClock: UpstreamClock {
    private struct State {
        var now: Double
        var waits: [Double] = []
        var holdsWaits = false
        var held: [Int: (seconds: Double, continuation: CheckedContinuation<Void, any Error>)] = [:]
        var nextHeld = 0
        var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state: NIOLockedValueBox<State>

    /// A clock at `now` (Unix seconds; by default a fixed time in 2027).
    init(now: Double = 1_800_000_000, holdsWaits: Bool = false) {
        state = NIOLockedValueBox(State(now: now, holdsWaits: holdsWaits))
    }

    func now() -> Double { state.withLockedValue { $0.now } }

    /// Every wait asked for, in order, in seconds.
    var waits: [Double] { state.withLockedValue { $0.waits } }

    /// Moves the time on by `seconds`.
    func advance(by seconds: Double) {
        state.withLockedValue { $0.now += seconds }
    }

    func sleep(seconds: Double) async throws {
        if Task.isCancelled { throw CancellationError() }
        let id = state.withLockedValue { state -> Int? in
            state.waits.append(seconds)
            guard state.holdsWaits else {
                state.now += max(0, seconds)
                return nil
            }
            state.nextHeld += 1
            return state.nextHeld
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (cancelled, ready) = state.withLockedValue { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                    if Task.isCancelled { return (true, []) }
                    state.held[id] = (seconds, continuation)
                    let count = state.held.count
                    let ready = state.watchers.filter { $0.count <= count }.map(\.continuation)
                    state.watchers.removeAll { $0.count <= count }
                    return (false, ready)
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
                for watcher in ready { watcher.resume() }
            }
        } onCancel: {
            let held = state.withLockedValue { $0.held.removeValue(forKey: id) }
            held?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Returns once at least `count` waits are held.
    func waitForWaiters(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLockedValue { state -> Bool in
                if state.held.count >= count { return true }
                state.watchers.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Ends every held wait (moving the time on by the longest) and stops holding.
    func releaseWaits() {
        let held = state.withLockedValue { state -> [(seconds: Double, continuation: CheckedContinuation<Void, any Error>)] in
            state.holdsWaits = false
            let held = Array(state.held.values)
            state.held = [:]
            state.now += held.map(\.seconds).max() ?? 0
            return held
        }
        for wait in held { wait.continuation.resume() }
    }
}
