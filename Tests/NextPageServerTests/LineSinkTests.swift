#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
@testable import NextPageServer
import XCTest

/// The log's line sink: lines come out whole and in order, `flush` waits
/// until they are out, and a stderr nobody reads costs lines, never a hang.
final class LineSinkTests: XCTestCase {
    private var fds: [Int32] = [-1, -1]

    override func setUpWithError() throws {
        // As in the server: a write to a closed pipe fails instead of killing the process.
        _ = signal(SIGPIPE, SIG_IGN)
        XCTAssertEqual(pipe(&fds), 0)
        // The test reads without blocking: what is not in the pipe yet is not there.
        XCTAssertEqual(fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK), 0)
    }

    override func tearDown() {
        // The sink's thread stays; closing its descriptor ends its writes.
        close(fds[0])
        close(fds[1])
    }

    /// Everything in the read end of the pipe right now.
    private func readAvailable() -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fds[0], $0.baseAddress, $0.count) }
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        return bytes
    }

    func testFlushWaitsUntilEveryLineIsOutInOrder() {
        // The pipe starts full, so the sink's lines are still waiting when
        // `flush` starts; a reader empties it meanwhile.
        let flags = fcntl(fds[1], F_GETFL)
        XCTAssertEqual(fcntl(fds[1], F_SETFL, flags | O_NONBLOCK), 0)
        var prefilled = 0
        let filler = [UInt8](repeating: UInt8(ascii: "."), count: 4096)
        while true {
            let n = filler.withUnsafeBytes { Glibc.write(fds[1], $0.baseAddress, $0.count) }
            if n <= 0 { break }
            prefilled += n
        }
        XCTAssertEqual(fcntl(fds[1], F_SETFL, flags), 0)

        let sink = StderrLogHandler.LineSink(fd: fds[1])
        let lines = (0..<300).map { "line \($0)\n" }
        for line in lines { sink.write(line) }

        let reader = Reader(fd: fds[0])
        Thread.detachNewThread { reader.run() }
        sink.flush(waitingAtMost: 60)
        let received = reader.stop() + readAvailable()
        XCTAssertEqual(received.count, prefilled + lines.joined().utf8.count, "flush returned before every line was out")
        XCTAssertEqual(String(decoding: received.dropFirst(prefilled), as: UTF8.self), lines.joined())
    }

    /// Reads a pipe on its own thread until told to stop.
    private final class Reader: @unchecked Sendable {
        let fd: Int32
        private let lock = NSLock()
        private var bytes: [UInt8] = []
        private var stopped = false
        private let done = DispatchSemaphore(value: 0)

        init(fd: Int32) { self.fd = fd }

        func run() {
            // Gives `flush` a pipe that is still full when it starts.
            usleep(100_000)
            var buffer = [UInt8](repeating: 0, count: 65536)
            while !lock.withLock({ stopped }) {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n > 0 {
                    lock.withLock { bytes += buffer[0..<n] }
                } else {
                    usleep(1_000)
                }
            }
            done.signal()
        }

        /// Stops the thread; what it read.
        func stop() -> [UInt8] {
            lock.withLock { stopped = true }
            done.wait()
            return lock.withLock { bytes }
        }
    }

    func testLinesBeyondTheCapacityAreDroppedAndFlushGivesUpAtItsDeadline() {
        let sink = StderrLogHandler.LineSink(fd: fds[1])
        // Far more than a pipe holds: the drain blocks on the full pipe,
        // and lines beyond the sink's capacity are dropped meanwhile.
        let line = String(repeating: "x", count: 1023) + "\n"
        let written = sink.capacity * 4
        for _ in 0..<written { sink.write(line) }
        // Returns although the pipe stays full: nobody reads it yet.
        sink.flush(waitingAtMost: 0.2)
        // Read until the sink has written all it kept.
        var received: [UInt8] = []
        while true {
            let chunk = readAvailable()
            received += chunk
            if chunk.isEmpty {
                sink.flush(waitingAtMost: 1)
                let rest = readAvailable()
                if rest.isEmpty { break }
                received += rest
            }
        }
        let count = received.split(separator: UInt8(ascii: "\n")).count
        XCTAssertEqual(received.count, count * line.utf8.count, "only whole lines")
        XCTAssertGreaterThan(count, 0)
        XCTAssertLessThan(count, written, "lines beyond the capacity are dropped")
    }
}
