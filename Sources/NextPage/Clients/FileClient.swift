#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads hand-written pages from a directory (the seeds' `LocalFileClient`).
///
/// The first page is `dir/first.json`; the page at cursor `c` is
/// `dir/<c percent-encoded>.json`, where every byte outside `A-Z a-z 0-9 - _`
/// is encoded, so no cursor can name a file outside `dir`.
public struct FileClient: Client {
    /// The directory holding the pages.
    public let directory: String
    /// Largest page file read, in bytes: a larger file, or a FIFO or device
    /// that keeps giving more, fails the fetch (read no further than that).
    public let maxBodyBytes: Int

    public static let defaultMaxBodyBytes = HTTPSource.defaultMaxBodyBytes

    public init(directory: String, maxBodyBytes: Int = FileClient.defaultMaxBodyBytes) {
        self.directory = directory
        self.maxBodyBytes = max(1, maxBodyBytes)
    }

    /// The file name (without directory) of the page a request names.
    public static func fileName<R: Request>(for request: R) -> String {
        guard !request.isFirstPage, let cursor = request.cursor else { return "first.json" }
        return encode(cursor: cursor.text) + ".json"
    }

    /// Percent-encodes a cursor byte by byte outside `A-Z a-z 0-9 - _`.
    /// The result never contains `/` and never starts with `.`.
    public static func encode(cursor: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(cursor.utf8.count)
        for byte in cursor.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                out.append(byte)
            default:
                out.append(contentsOf: [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Page files are only read. (A FIFO standing in for a page is consumed
    /// by a read, even one made ahead of time.)
    public var fetchesHaveNoEffects: Bool { true }

    public func fetch<R: Request>(_ request: R) async throws -> UpstreamResponse {
        if Task.isCancelled { throw LoadError.cancelled }
        let name = Self.fileName(for: request)
        let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
        let read: Result<[UInt8], SystemError>
        let limit = maxBodyBytes
        switch Self.openPage(path, limit: limit) {
        case .read(let result):
            read = result
        case .stream(let fd):
            // A FIFO or a device: its reads may wait for a writer, so they run
            // on a thread of their own, never in the concurrency pool. Cancelling
            // the fetch stops the wait and closes the page, so an abandoned
            // read neither holds a thread nor takes what a writer sends later.
            guard let stop = StopSignal() else {
                let code = errno
                close(fd)
                read = .failure(SystemError(code: code))
                break
            }
            read = await withTaskCancellationHandler {
                await onOwnThread { Self.readStream(fd, stop: stop, limit: limit) }
            } onCancel: {
                stop.signal()
            }
        }
        if Task.isCancelled { throw LoadError.cancelled }
        switch read {
        case .success(let body):
            return UpstreamResponse(body: body)
        case .failure(let error) where error.code == SystemError.tooLarge:
            throw LoadError.upstream(UpstreamFailure(
                retryable: false, message: "page file '\(name)' in '\(directory)' is larger than maxBodyBytes (\(limit) bytes)"))
        case .failure(let error):
            let reason = String(cString: strerror(error.code))
            throw LoadError.upstream(UpstreamFailure(
                retryable: false, message: "cannot read page file '\(name)' in '\(directory)': \(reason)"))
        }
    }

    /// A page file once opened: read already (a regular file, or an error),
    /// or a descriptor still to be read (a FIFO or a device).
    enum OpenedPage {
        case read(Result<[UInt8], SystemError>)
        /// Open for reading, `O_NONBLOCK`; `readStream` reads and closes it.
        case stream(Int32)
    }

    /// Opens `path` once and reads it at once when it is a regular file (reads
    /// from the page cache or the disk, which do not wait on anyone). Anything
    /// else is handed back open: the same descriptor is then read, so a writer
    /// that opens a FIFO right after this open writes to the reader that will
    /// read it.
    static func openPage(_ path: String, limit: Int = .max) -> OpenedPage {
        // O_NONBLOCK: opening a FIFO must not wait for a writer here.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return .read(.failure(SystemError(code: errno))) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            close(fd)
            return .read(.failure(SystemError(code: code)))
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG:
            defer { close(fd) }
            return .read(readAll(fd, size: Int(info.st_size), limit: limit))
        case S_IFDIR:
            close(fd)
            return .read(.failure(SystemError(code: EISDIR)))
        default:
            return .stream(fd)
        }
    }

    /// Reads a FIFO or device opened with `O_NONBLOCK` to its end and closes
    /// it. Blocks (in `poll`) until a writer has written and closed, or `stop`
    /// is signalled (then fails with `ECANCELED`): run it off the
    /// concurrency pool. Fails with `SystemError.tooLarge` once more than
    /// `limit` bytes came.
    ///
    /// A FIFO's `read` returns 0 both at its end and before any writer came,
    /// so every wait is a `poll` first: it reports a hang-up only once a writer
    /// has come and gone since the open.
    static func readStream(_ fd: Int32, stop: StopSignal? = nil, limit: Int = .max) -> Result<[UInt8], SystemError> {
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            var wanted = [
                pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                pollfd(fd: stop?.readEnd ?? -1, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&wanted, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return .failure(SystemError(code: errno))
            }
            if wanted[1].revents != 0 { return .failure(SystemError(code: ECANCELED)) }
            // One read per wait, so that `stop` is seen even while a writer
            // (or a device that never ends) keeps the descriptor readable.
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n > 0 {
                guard n <= limit - bytes.count else { return .failure(SystemError(code: SystemError.tooLarge)) }
                bytes.append(contentsOf: chunk[0..<n])
                continue
            }
            if n == 0 { return .success(bytes) }
            if errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK { continue }
            return .failure(SystemError(code: errno))
        }
    }

    /// Reads a whole file into memory, as a page is read (blocking: a FIFO
    /// until its writer has written and left).
    static func readFile(_ path: String, limit: Int = .max) -> Result<[UInt8], SystemError> {
        switch openPage(path, limit: limit) {
        case .read(let result): return result
        case .stream(let fd): return readStream(fd, limit: limit)
        }
    }

    /// Reads the regular file `fd` to its end. The size fstat gave is a
    /// hint: a file may grow, and is read to its end, unless it holds more
    /// than `limit` bytes (`SystemError.tooLarge`; a file larger than that
    /// to begin with is not read at all).
    private static func readAll(_ fd: Int32, size: Int, limit: Int) -> Result<[UInt8], SystemError> {
        guard size <= limit else { return .failure(SystemError(code: SystemError.tooLarge)) }
        // Room for one byte beyond the limit, which tells a file over it.
        let most = limit < Int.max ? limit + 1 : limit
        var capacity = min(max(size + 1, 4096), most)
        var bytes = [UInt8]()
        var filled = 0
        while true {
            if filled == bytes.count {
                // Grow without zero-filling: only bytes that were read are kept.
                let grown = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
                    bytes.withUnsafeBufferPointer { old in
                        if let base = old.baseAddress { buffer.baseAddress!.update(from: base, count: filled) }
                    }
                    count = capacity
                }
                bytes = grown
                capacity = capacity > most / 2 ? most : capacity * 2
            }
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if n < 0 {
                if errno == EINTR { continue }
                return .failure(SystemError(code: errno))
            }
            if n == 0 { break }
            filled += n
            if filled > limit { return .failure(SystemError(code: SystemError.tooLarge)) }
            // A file that held at least what fstat said, read short of the
            // room there was, was read to its end: no read of 0 bytes is
            // needed to learn it. (Files reporting size 0, as in /proc, are
            // read until a read returns 0.)
            if size > 0 && filled >= size && filled < bytes.count { break }
        }
        bytes.removeSubrange(filled...)
        return .success(bytes)
    }
}

/// An `errno` value.
struct SystemError: Error {
    let code: Int32

    /// A page file over the limit (`EFBIG`, "file too large", which reading never reports).
    static let tooLarge = EFBIG
}

/// A one-way signal a thread blocked in `poll` can wait for beside its own
/// descriptor: the read end of a pipe, readable once `signal()` was called.
final class StopSignal: Sendable {
    let readEnd: Int32
    private let writeEnd: Int32

    /// `nil` when no pipe could be made (`errno` says why).
    init?() {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    /// Makes the read end readable (again calling it changes nothing).
    func signal() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }
}
