#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A mutex with a condition variable, for threads that block (the
/// connection's two I/O threads, a transcript replay's pipe readers).
public final class Condition: @unchecked Sendable {
    private let lock = Lock()
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var mutex: UnsafeMutablePointer<pthread_mutex_t> { lock.mutex }

    public init() {
        // Deadlines count on the monotonic clock: a change of the wall clock neither stretches nor cuts a wait.
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(cond, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    /// The deadline `seconds` from now (at most about 30 years), for `wait(until:)`.
    public static func deadline(after seconds: Double) -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let wait = seconds.isNaN ? 0 : min(max(seconds, 0), 1e9)
        var deadline = timespec(tv_sec: now.tv_sec + Int(wait), tv_nsec: now.tv_nsec + Int((wait - wait.rounded(.down)) * 1e9))
        if deadline.tv_nsec >= 1_000_000_000 {
            deadline.tv_sec += 1
            deadline.tv_nsec -= 1_000_000_000
        }
        return deadline
    }

    /// Whether `deadline` (from `deadline(after:)`) has passed.
    public static func isPast(_ deadline: timespec) -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return now.tv_sec > deadline.tv_sec || (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec)
    }

    deinit {
        pthread_cond_destroy(cond)
        cond.deallocate()
    }

    /// Runs `body` holding the mutex.
    public func locked<T>(_ body: () throws -> T) rethrows -> T { try lock.locked(body) }

    /// Waits for a signal; call only while holding the mutex (inside `locked`).
    public func wait() { pthread_cond_wait(cond, mutex) }

    /// Waits for a signal or until `deadline` (from `deadline(after:)`); call inside `locked`.
    public func wait(until deadline: timespec) {
        var deadline = deadline
        pthread_cond_timedwait(cond, mutex, &deadline)
    }

    /// Wakes every waiter; call inside `locked` or right after it (the
    /// change the waiters look for made inside). After it spares a waiter
    /// from waking only to wait for the mutex.
    public func broadcast() { pthread_cond_broadcast(cond) }
}

/// A mutex alone, for state that is held only briefly (a request's cancel
/// actions): cheaper to make than a `Condition`, which adds a condition
/// variable to one. A pthread mutex, so that ThreadSanitizer sees it.
public final class Lock: @unchecked Sendable {
    fileprivate let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    public init() { pthread_mutex_init(mutex, nil) }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` holding the mutex.
    public func locked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// Starts a detached POSIX thread running `body`.
public func startThread(_ body: @escaping @Sendable () -> Void) {
    final class Box: @unchecked Sendable { let body: @Sendable () -> Void; init(_ body: @escaping @Sendable () -> Void) { self.body = body } }
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let result = pthread_create(&thread, nil, { raw in
        let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
        box.body()
        return nil
    }, box)
    precondition(result == 0, "pthread_create failed: \(result)")
    pthread_detach(thread)
}
