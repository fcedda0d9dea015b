#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch

/// Runs `body`, which may block for as long as someone else decides (a read
/// of a FIFO that waits for its writer, a write to a pipe nobody drains), on
/// a thread of its own, and returns what it returns.
///
/// Never on Dispatch's global queues: on Linux the Swift concurrency pool
/// runs on the same worker threads, and Dispatch adds a worker only about
/// once a second while others are blocked, so a few blocked reads would hold
/// up every request of the server. A thread of its own ends with `body`.
/// Should no thread be had (the system's limit), it falls back to Dispatch.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let work: @Sendable () -> Void = { continuation.resume(returning: body()) }
        if !startThread(work) {
            DispatchQueue.global().async(execute: work)
        }
    }
}

/// Starts a detached POSIX thread running `work`; false when none could be made.
private func startThread(_ work: @escaping @Sendable () -> Void) -> Bool {
    final class Box: @unchecked Sendable {
        let work: @Sendable () -> Void
        init(_ work: @escaping @Sendable () -> Void) { self.work = work }
    }
    let box = Unmanaged.passRetained(Box(work))
    var thread = pthread_t()
    let result = pthread_create(&thread, nil, { raw in
        let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
        box.work()
        return nil
    }, box.toOpaque())
    guard result == 0 else {
        box.release()
        return false
    }
    pthread_detach(thread)
    return true
}
