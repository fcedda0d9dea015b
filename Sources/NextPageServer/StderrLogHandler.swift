#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
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
        private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        private var lines: [String] = []
        private var started = false
        /// A batch taken from `lines` is being written.
        private var writing = false
        /// Lines waiting beyond this many are dropped.
        let capacity = 1024

        init(fd: Int32) {
            self.fd = fd
            pthread_mutex_init(mutex, nil)
            pthread_cond_init(cond, nil)
        }

        func write(_ line: String) {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            if !started {
                started = true
                let box = Unmanaged.passRetained(self).toOpaque()
                var thread = pthread_t()
                pthread_create(&thread, nil, { raw in
                    Unmanaged<LineSink>.fromOpaque(raw!).takeRetainedValue().drain()
                    return nil
                }, box)
                pthread_detach(thread)
            }
            guard lines.count < capacity else { return }
            lines.append(line)
            pthread_cond_signal(cond)
        }

        private func drain() {
            while true {
                pthread_mutex_lock(mutex)
                while lines.isEmpty { pthread_cond_wait(cond, mutex) }
                let batch = lines.joined()
                lines.removeAll(keepingCapacity: true)
                writing = true
                pthread_mutex_unlock(mutex)
                var bytes = Array(batch.utf8)
                var offset = 0
                while offset < bytes.count {
                    let n = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 { break }
                    offset += n
                }
                bytes.removeAll()
                pthread_mutex_lock(mutex)
                writing = false
                pthread_mutex_unlock(mutex)
            }
        }

        /// Waits (at most `seconds`: stderr may be a pipe nobody reads) until
        /// every line written so far is out; the process calls it before it
        /// exits, so that its last lines are not lost.
        public func flush(waitingAtMost seconds: Double = 1) {
            let deadline = DispatchTime.now() + seconds
            while DispatchTime.now() < deadline {
                pthread_mutex_lock(mutex)
                let done = lines.isEmpty && !writing
                pthread_mutex_unlock(mutex)
                if done { return }
                usleep(1_000)
            }
        }
    }
}
