#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JSONRPC
import Logging

/// A swift-log handler that writes to stderr from its own thread and drops
/// lines when stderr is not keeping up, so logging never blocks the protocol.
///
/// Log lines also go to `LogForwarding.shared` when a peer asked for them
/// (MCP's `logging/setLevel`), at that peer's level, which may be below the
/// level stderr gets.
public struct StderrLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    /// The level stderr gets (`--log-level`).
    private var stderrLevel: Logger.Level
    private let label: String
    private let sink: LineSink
    private let forwarding: LogForwarding

    public init(label: String, level: Logger.Level, sink: LineSink = .standardError, forwarding: LogForwarding = .shared) {
        self.label = label
        self.stderrLevel = level
        self.sink = sink
        self.forwarding = forwarding
    }

    /// The lowest level anyone wants: stderr's, or a peer's below it.
    public var logLevel: Logger.Level {
        get { forwarding.level.map { min($0, stderrLevel) } ?? stderrLevel }
        set { stderrLevel = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var all = metadata
        if let extra = event.metadata { all.merge(extra) { _, new in new } }
        let sorted = all.sorted { $0.key < $1.key }
        if event.level >= stderrLevel {
            let fields = sorted.map { " \($0.key)=\($0.value)" }.joined()
            sink.write("nextpage \(event.level): \(event.message)\(fields)\n")
        }
        forwarding.forward(level: event.level, message: "\(event.message)", metadata: sorted.map { ($0.key, "\($0.value)") })
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

/// Where log lines go besides stderr: one receiver (the MCP session that
/// asked with `logging/setLevel`) and the level it wants. The receiver must
/// not log, and must not block: it is called on the thread that logs.
public final class LogForwarding: @unchecked Sendable {
    public static let shared = LogForwarding()

    public typealias Receiver = @Sendable (_ level: Logger.Level, _ message: String, _ metadata: [(String, String)]) -> Void

    private let lock = Lock()
    // Guarded by `lock`.
    private var receiver: (level: Logger.Level, send: Receiver)?

    public init() {}

    /// The level the receiver wants, if there is one.
    public var level: Logger.Level? { lock.locked { receiver?.level } }

    /// Sends lines at `level` and above to `send` from now on (replacing any earlier receiver).
    public func start(level: Logger.Level, _ send: @escaping Receiver) {
        lock.locked { receiver = (level, send) }
    }

    /// Sends no more lines anywhere but stderr.
    public func stop() {
        lock.locked { receiver = nil }
    }

    func forward(level: Logger.Level, message: String, metadata: [(String, String)]) {
        guard let receiver = lock.locked({ receiver }), level >= receiver.level else { return }
        receiver.send(level, message, metadata)
    }
}
