#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Jansson

/// The single writer of protocol output: messages are queued by any task and
/// written, whole and in queue order, by one thread, so no two replies ever
/// interleave on the stream.
public final class OutputWriter: @unchecked Sendable {
    private let fd: Int32
    private let condition = Condition()
    // Guarded by `condition`.
    private var queue: [[UInt8]] = []
    private var pending = 0
    private var writing = false
    private var broken = false
    private var framing: Framing = .ndjson
    private let onBrokenPipe: @Sendable () -> Void

    /// Writes to `fd`; `onBrokenPipe` runs (on the writer thread) when the
    /// reader of `fd` is gone.
    public init(fd: Int32, onBrokenPipe: @escaping @Sendable () -> Void) {
        self.fd = fd
        self.onBrokenPipe = onBrokenPipe
        startThread { [self] in run() }
    }

    /// Sets the framing used for every message queued from now on.
    public func setFraming(_ framing: Framing) {
        condition.locked { self.framing = framing }
    }

    /// Queues one message; returns at once.
    public func send(_ message: RawJSON) {
        condition.locked {
            guard !broken else { return }
            let framed = MessageFramer.frame(message.bytes, as: framing)
            pending += framed.count
            queue.append(framed)
            condition.broadcast()
        }
    }

    /// Bytes queued and not yet written.
    public var pendingBytes: Int { condition.locked { pending } }

    /// Blocks the calling thread while more than `limit` bytes wait to be written.
    public func waitForRoom(limit: Int) {
        condition.locked {
            while pending > limit && !broken { condition.wait() }
        }
    }

    /// Blocks until everything queued has been written (or the stream broke).
    public func flush() {
        condition.locked {
            while (pending > 0 || writing) && !broken { condition.wait() }
        }
    }

    private func run() {
        while true {
            var batch: [UInt8] = []
            condition.locked {
                while queue.isEmpty { condition.wait() }
                // Write several small messages with one system call.
                var taken = 0
                for message in queue {
                    if taken > 0 && batch.count + message.count > 1 << 20 { break }
                    batch.append(contentsOf: message)
                    taken += 1
                }
                queue.removeFirst(taken)
                writing = true
            }
            let ok = writeAll(batch)
            condition.locked {
                writing = false
                pending -= batch.count
                if !ok {
                    broken = true
                    queue = []
                    pending = 0
                }
                condition.broadcast()
            }
            if !ok {
                onBrokenPipe()
                return
            }
        }
    }

    private func writeAll(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    if errno == EAGAIN {
                        // A non-blocking descriptor inherited from the parent: wait until writable.
                        var waiter = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                        _ = poll(&waiter, 1, -1)
                        continue
                    }
                    return false
                }
                offset += n
            }
            return true
        }
    }
}
