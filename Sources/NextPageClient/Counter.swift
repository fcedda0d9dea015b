/// A thread-safe counter (progress tokens).
final class Counter: Sendable {
    private let value = Locked(0)

    func next() -> Int {
        value.withLock {
            $0 += 1
            return $0
        }
    }
}
