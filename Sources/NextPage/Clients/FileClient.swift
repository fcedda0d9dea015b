#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch

/// Reads hand-written pages from a directory (the seeds' `LocalFileClient`).
///
/// The first page is `dir/first.json`; the page at cursor `c` is
/// `dir/<c percent-encoded>.json`, where every byte outside `A-Z a-z 0-9 - _`
/// is encoded, so no cursor can name a file outside `dir`.
public struct FileClient: Client {
    /// The directory holding the pages.
    public let directory: String

    public init(directory: String) {
        self.directory = directory
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
        var read = Self.readRegularFile(path)
        if read == nil {
            // Not a regular file (a FIFO, a device): its reads may block, so
            // they run on a Dispatch thread, never in the concurrency pool.
            read = await withCheckedContinuation { continuation in
                DispatchQueue.global().async { continuation.resume(returning: Self.readFile(path)) }
            }
        }
        switch read! {
        case .success(let body):
            if Task.isCancelled { throw LoadError.cancelled }
            return UpstreamResponse(body: body)
        case .failure(let error):
            let reason = String(cString: strerror(error.code))
            throw LoadError.upstream(UpstreamFailure(
                retryable: false, message: "cannot read page file '\(name)' in '\(directory)': \(reason)"))
        }
    }

    /// Reads `path` at once when it is a regular file (reads from the page
    /// cache or the disk, which do not wait on anyone); `nil` for anything else.
    static func readRegularFile(_ path: String) -> Result<[UInt8], SystemError>? {
        // O_NONBLOCK: opening a FIFO must not wait for a writer here.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return .failure(SystemError(code: errno)) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .failure(SystemError(code: errno)) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return readAll(fd, size: Int(info.st_size), regularFile: true)
    }

    /// Reads a whole file with one `read` loop into memory (blocking).
    static func readFile(_ path: String) -> Result<[UInt8], SystemError> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(SystemError(code: errno)) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .failure(SystemError(code: errno)) }
        guard (info.st_mode & S_IFMT) != S_IFDIR else { return .failure(SystemError(code: EISDIR)) }
        return readAll(fd, size: Int(info.st_size), regularFile: (info.st_mode & S_IFMT) == S_IFREG)
    }

    /// Reads `fd` to its end. The size fstat gave is a hint: a FIFO reports
    /// 0 and a file may grow; either is read to its end.
    private static func readAll(_ fd: Int32, size: Int, regularFile: Bool) -> Result<[UInt8], SystemError> {
        var capacity = max(size + 1, 4096)
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
                capacity *= 2
            }
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if n < 0 {
                if errno == EINTR { continue }
                return .failure(SystemError(code: errno))
            }
            if n == 0 { break }
            filled += n
            // A regular file that held at least what fstat said, read short of
            // the room there was, was read to its end: no read of 0 bytes is
            // needed to learn it. (Files reporting size 0, as in /proc, are
            // read until a read returns 0.)
            if regularFile && size > 0 && filled >= size && filled < bytes.count { break }
        }
        bytes.removeSubrange(filled...)
        return .success(bytes)
    }
}

/// An `errno` value.
struct SystemError: Error {
    let code: Int32
}
