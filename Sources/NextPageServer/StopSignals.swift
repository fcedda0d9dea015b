#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Synchronization

/// SIGTERM, SIGINT and SIGHUP, which stop the server (it drains, then exits 0).
///
/// They are handled by Dispatch signal sources, which Dispatch registers
/// later, on its own thread. Until it has (and before the sources exist) a
/// stop signal must neither kill the server nor be lost: `catchEarly()`
/// counts such signals, and `armed(_:)` waits until Dispatch's handlers are
/// in place, then reports how many came before.
///
/// (On Linux, Dispatch receives a signal through a `signalfd` once its own
/// handler is installed. A signal that arrives while the disposition is
/// `SIG_IGN` is discarded by the kernel: a server that ignored the signals
/// until then could miss a SIGTERM sent right after its first reply, and
/// never stop.)
enum StopSignals {
    static let numbers: [Int32] = [SIGTERM, SIGINT, SIGHUP]

    /// Stop signals received before Dispatch's handlers were in place.
    private static let early = Atomic<Int>(0)

    /// The handler of the early window: counts (async-signal-safe).
    private static let earlyHandler: @convention(c) (Int32) -> Void = { _ in
        StopSignals.early.add(1, ordering: .relaxed)
    }

    /// Installs the counting handler for the stop signals; call it first.
    static func catchEarly() {
        for number in numbers {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = earlyHandler
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            sigaction(number, &action, nil)
        }
    }

    /// The handler address now installed for `number` (0 is `SIG_DFL`, 1 `SIG_IGN`).
    private static func installedHandler(_ number: Int32) -> UInt {
        var current = sigaction()
        sigaction(number, nil, &current)
        return unsafeBitCast(current.__sigaction_handler.sa_handler, to: UInt.self)
    }

    /// Waits (at most `seconds`) until every stop signal has a handler
    /// other than the early one, `SIG_DFL` and `SIG_IGN`: the Dispatch
    /// sources made for them are registered. Returns the stop signals that
    /// came before, and whether the sources were seen registered.
    static func armed(waitingAtMost seconds: Double = 5) async -> (earlier: Int, registered: Bool) {
        let ours = unsafeBitCast(earlyHandler, to: UInt.self)
        let deadline = DispatchTime.now() + seconds
        var registered = false
        while true {
            registered = numbers.allSatisfy { number in
                let handler = installedHandler(number)
                return handler > 1 && handler != ours
            }
            if registered || DispatchTime.now() >= deadline { break }
            try? await Task.sleep(for: .microseconds(100))
        }
        return (early.load(ordering: .relaxed), registered)
    }
}
