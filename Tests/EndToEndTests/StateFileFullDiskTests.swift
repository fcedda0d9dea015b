import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `--state F` on a disk that fills up: the write of the new state fails,
/// the previous file stays whole and readable, no partial temporary file is
/// left, and the server keeps serving. The failure is logged on stderr
/// (once) and shows as the collection's `lastError`; the page itself is
/// delivered. Once there is room again, the next change is saved.
///
/// A real full disk needs a small filesystem: a 64 kB tmpfs, which only
/// root (with CAP_SYS_ADMIN) can mount; without it that test is skipped.
/// The same failure without privileges: a file size limit (RLIMIT_FSIZE,
/// set by `prlimit`), which makes the write fail with EFBIG.
final class StateFileFullDiskTests: EndToEndTestCase {
    /// Three pages: `first` (cursor c2), `c2` (cursor `third`), `third` (the end).
    private func writePages(_ directory: String, third: String = "c3") throws {
        try writeFile(directory + "/pages/first.json", #"{"items": [1, 2], "next_cursor": "c2"}"#)
        try writeFile(directory + "/pages/c2.json", #"{"items": [3], "next_cursor": "\#(third)"}"#)
        try writeFile(directory + "/pages/\(third).json", #"{"items": [4], "next_cursor": null}"#)
        try writeFile(directory + "/nextpage.json", fileConfig(paging: #"{"strategy": "cursor"}"#))
    }

    private func saved(_ path: String) throws -> JSONValue {
        try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: path)))
    }

    private static let afterPageOne = #"{"version":1,"collections":{"c":{"hasNext":true,"lastId":"c2","count":2,"pages":1,"lastError":null}}}"#

    /// Runs `command`; returns its exit status.
    @discardableResult
    private func run(_ command: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    func testFullDiskKeepsThePreviousStateFile() throws {
        guard getuid() == 0 else { throw XCTSkip("mounting a small tmpfs needs root") }
        let directory = try temporaryDirectory()
        let disk = directory + "/disk"
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        guard try run(["/bin/mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", disk]) == 0 else {
            throw XCTSkip("cannot mount a tmpfs here (no CAP_SYS_ADMIN?)")
        }
        // Runs after the server is killed (teardown blocks run last-added first).
        addTeardownBlock { [self] in _ = try? run(["/bin/umount", "-l", disk]) }
        try writePages(directory)
        let server = try startServer(arguments: ["--state", "disk/run.state"], in: directory)
        try expectMatch(server.reply(request(server, 1, "loadNext")), rpcResult(1, #"{"collection":"c","items":[1,2],"page":1,"hasNext":true,"lastId":"c2","count":2}"#))
        try expectMatch(saved(disk + "/run.state"), Self.afterPageOne)

        // Fill the disk.
        let filler = open(disk + "/filler", O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        XCTAssertGreaterThanOrEqual(filler, 0)
        let block = [UInt8](repeating: 0, count: 4096)
        while block.withUnsafeBytes({ write(filler, $0.baseAddress!, $0.count) }) > 0 {}
        XCTAssertEqual(errno, ENOSPC)
        close(filler)

        // The page is delivered; its state cannot be saved.
        try expectMatch(server.reply(request(server, 2, "loadNext")), rpcResult(2, #"{"collection":"c","items":[3],"page":2,"hasNext":true,"lastId":"c3","count":3}"#))
        try expectMatch(saved(disk + "/run.state"), Self.afterPageOne, "the previous state file, whole")
        XCTAssertFalse(FileManager.default.fileExists(atPath: disk + "/.run.state.tmp"), "a partial temporary file was left")
        try expectMatch(
            server.reply(request(server, 3, "status")),
            rpcResult(3, #"{"collection":"c","hasNext":true,"isLoading":false,"lastId":"c3","count":3,"pages":2,"lastError":"<contains:No space left on device>"}"#))
        try server.waitForStderr(containing: "cannot save the state file")

        // Room again: the next page is saved.
        try FileManager.default.removeItem(atPath: disk + "/filler")
        try expectMatch(server.reply(request(server, 4, "loadNext")), rpcResult(4, #"{"collection":"c","items":[4],"page":3,"hasNext":false,"lastId":null,"count":4}"#))
        try expectMatch(saved(disk + "/run.state"), #"{"version":1,"collections":{"c":{"hasNext":false,"lastId":null,"count":4,"pages":3,"lastError":null}}}"#)
        try expectMatch(
            server.reply(request(server, 5, "status")),
            rpcResult(5, #"{"collection":"c","hasNext":false,"isLoading":false,"lastId":null,"count":4,"pages":3,"lastError":null}"#))
        try server.waitForStderr(containing: "the state file is saved again")
        try server.finish()
    }

    func testFileSizeLimitKeepsThePreviousStateFile() throws {
        let prlimit = "/usr/bin/prlimit"
        guard FileManager.default.isExecutableFile(atPath: prlimit) else { throw XCTSkip("\(prlimit) (util-linux) is not installed") }
        let directory = try temporaryDirectory()
        // A cursor long enough that the state naming it does not fit in 300 bytes.
        let long = String(repeating: "k", count: 240)
        try writePages(directory, third: long)
        let server = try ServerHarness(
            directory: directory, arguments: ["--state", "run.state"], launcher: [prlimit, "--fsize=300:unlimited", "--"])
        addTeardownBlock { server.kill() }
        try expectMatch(server.reply(request(server, 1, "loadNext")), rpcResult(1, #"{"collection":"c","items":[1,2],"page":1,"hasNext":true,"lastId":"c2","count":2}"#))
        try expectMatch(saved(directory + "/run.state"), Self.afterPageOne)

        try expectMatch(server.reply(request(server, 2, "loadNext")), rpcResult(2, #"{"collection":"c","items":[3],"page":2,"hasNext":true,"lastId":"\#(long)","count":3}"#))
        try expectMatch(saved(directory + "/run.state"), Self.afterPageOne, "the previous state file, whole")
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/.run.state.tmp"), "a partial temporary file was left")
        try expectMatch(
            server.reply(request(server, 3, "status")),
            rpcResult(3, #"{"collection":"c","hasNext":true,"isLoading":false,"lastId":"\#(long)","count":3,"pages":2,"lastError":"<contains:File too large>"}"#))
        try server.waitForStderr(containing: "cannot save the state file")

        // The limit lifted: the next page is saved.
        XCTAssertEqual(try run([prlimit, "--pid", "\(server.pid)", "--fsize=unlimited:unlimited"]), 0)
        try expectMatch(server.reply(request(server, 4, "loadNext")), rpcResult(4, #"{"collection":"c","items":[4],"page":3,"hasNext":false,"lastId":null,"count":4}"#))
        try expectMatch(saved(directory + "/run.state"), #"{"version":1,"collections":{"c":{"hasNext":false,"lastId":null,"count":4,"pages":3,"lastError":null}}}"#)
        try server.finish()
    }

    /// Sends request `id` for collection `c`; returns the id as JSON text.
    private func request(_ server: ServerHarness, _ id: Int, _ method: String) throws -> String {
        try server.request("\(id)", method, #"{"collection": "c"}"#)
        return "\(id)"
    }
}
