#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JSONRPC
import Logging

/// A swift-log handler that writes to stderr from its own thread and drops
/// lines when stderr is not keeping up, so logging never blocks the protocol.
public struct StderrLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    private let label: String
    private let sink: LineSink

    public init(label: String, level: Logger.Level, sink: LineSink = .standardError) {
        self.label = label
        self.logLevel = level
        self.sink = sink
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var all = metadata
        if let extra = event.metadata { all.merge(extra) { _, new in new } }
        let fields = all.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined()
        sink.write("nextpage \(event.level): \(event.message)\(fields)\n")
    }

    /// A bounded queue of lines drained to a file descriptor by one thread.
    public final class LineSink: @unchecked Sendable {
        public static let standardError = LineSink(fd: 2)

        private let fd: Int32
        /// Guards `lines`, `started` and `writing`; signalled when lines
        /// arrive (for the drain) and when a batch is out (for `flush`).
        private let condition = Condition()
        private var lines: [String] = []
        private var started = false
        /// A batch taken from `lines` is being written.
        private var writing = false
        /// Lines waiting beyond this many are dropped.
        let capacity = 1024

        init(fd: Int32) {
            self.fd = fd
        }

        func write(_ line: String) {
            let start: Bool = condition.locked {
                let start = !started
                started = true
                if lines.count < capacity { lines.append(line) }
                return start
            }
            condition.broadcast()
            if start { startThread { self.drain() } }
        }

        private func drain() {
            while true {
                let batch: String = condition.locked {
                    while lines.isEmpty { condition.wait() }
                    let batch = lines.joined()
                    lines.removeAll(keepingCapacity: true)
                    writing = true
                    return batch
                }
                var bytes = Array(batch.utf8)
                var offset = 0
                while offset < bytes.count {
                    let n = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 { break }
                    offset += n
                }
                bytes.removeAll()
                condition.locked { writing = false }
                condition.broadcast()
            }
        }

        /// Waits (at most `seconds`: stderr may be a pipe nobody reads) until
        /// every line written so far is out; the process calls it before it
        /// exits, so that its last lines are not lost.
        public func flush(waitingAtMost seconds: Double = 1) {
            let deadline = Condition.deadline(after: seconds)
            condition.locked {
                while !(lines.isEmpty && !writing) && !Condition.isPast(deadline) {
                    condition.wait(until: deadline)
                }
            }
        }
    }
}
