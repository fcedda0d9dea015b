import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where the `nextpage` binary is: `$NEXTPAGE_BIN`, else next to the test
/// bundle (`.build/<config>/nextpagePackageTests.xctest` sits beside it).
func nextpageBinary() throws -> String {
    if let path = ProcessInfo.processInfo.environment["NEXTPAGE_BIN"], !path.isEmpty { return path }
    let testBinary = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
    var folder = testBinary.deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = folder.appendingPathComponent("nextpage").path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        folder = folder.deletingLastPathComponent()
    }
    throw NSError(domain: "NextPageClientTests", code: 1, userInfo: [NSLocalizedDescriptionKey: "nextpage binary not found; set NEXTPAGE_BIN"])
}

/// Collection "c" over file pages whose first page is a FIFO: the server's
/// read of it waits until the test gives the page, so a call stays in flight
/// for as long as the test likes.
final class BlockedPage: @unchecked Sendable {
    let path: String
    let arguments: [String]
    private var holder: Int32 = -1

    init(_ folder: String) throws {
        let pages = folder + "/pages"
        try FileManager.default.createDirectory(atPath: pages, withIntermediateDirectories: true)
        try #"{"items": [{"id": 3}], "next_cursor": null}"#.write(toFile: pages + "/p2.json", atomically: true, encoding: .utf8)
        path = pages + "/first.json"
        guard mkfifo(path, 0o644) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        try #"""
            {"collections": {"c": {"source": {"type": "file", "dir": "pages"},
                                   "paging": {"strategy": "cursor", "items": "/items", "next": "/next_cursor"}}}}
            """#.write(toFile: folder + "/blocked.json", atomically: true, encoding: .utf8)
        arguments = ["--config", folder + "/blocked.json"]
    }

    deinit {
        if holder >= 0 { close(holder) }
    }

    /// Returns once the server has opened the page to read it (the fetch is
    /// in flight); the open blocks a thread of its own, not the test's.
    func waitForReader() async {
        let path = self.path
        let fd: Int32 = await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: open(path, O_WRONLY | O_CLOEXEC)) }.start()
        }
        holder = fd
    }

    /// Puts a regular first page in place of the FIFO; a read still waiting
    /// ends (an open still waiting finds this writer, then end of file).
    func release() throws {
        let writer = holder >= 0 ? holder : open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        holder = -1
        defer { if writer >= 0 { close(writer) } }
        try #"{"items": [{"id": 1}, {"id": 2}], "next_cursor": "p2"}"#.write(toFile: path + ".tmp", atomically: false, encoding: .utf8)
        guard rename(path + ".tmp", path) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }
}
