import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What `FaultyHTTPServer` does with one request.
enum HTTPFault: Sendable {
    /// A complete answer (`Content-Length` is added).
    case respond(status: Int, contentType: String, body: [UInt8])
    /// A complete answer with these headers, in order (`Content-Length` is added).
    case answer(status: Int, headers: [(String, String)], body: [UInt8])
    /// Declares `declaredLength` body bytes, sends `sent` of them, then
    /// resets the connection (TCP RST).
    case resetMidBody(declaredLength: Int, sent: [UInt8])
    /// Declares `declaredLength` body bytes, sends `sent` of them, then
    /// closes the connection cleanly (FIN): a body cut short.
    case closeMidBody(declaredLength: Int, sent: [UInt8])
    /// Declares `declaredLength` bytes and sends one byte of `body` every
    /// `interval` seconds, until the client hangs up.
    case trickle(declaredLength: Int, body: [UInt8], interval: Double)
    /// Declares a body of `declaredLength` bytes (or, when `nil`, sends a
    /// chunked body of unknown length) and streams spaces as fast as the
    /// client takes them, until the client hangs up or `declaredLength`
    /// bytes were sent.
    case stream(declaredLength: Int?)

    /// A 200 with a JSON body.
    static func json(_ text: String) -> HTTPFault {
        .respond(status: 200, contentType: "application/json", body: Array(text.utf8))
    }

    /// A JSON answer with this status and these headers.
    static func json(_ text: String, status: Int, headers: [(String, String)] = []) -> HTTPFault {
        .answer(status: status, headers: [("Content-Type", "application/json")] + headers, body: Array(text.utf8))
    }
}

/// A request as `FaultyHTTPServer` received it.
struct ReceivedHTTPRequest: Sendable {
    var method: String
    /// The request target (path and query) as sent.
    var target: String
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    var path: String { String(target.prefix { $0 != "?" }) }

    /// The first value of a header (case-insensitive name).
    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    var bodyText: String { String(decoding: body, as: UTF8.self) }
}

/// A plain-socket HTTP/1.1 server on 127.0.0.1 for the end-to-end fault
/// tests: it answers each request as `script` says, including the ways real
/// servers fail (a reset or a cut in the middle of a body, a trickle, a
/// body that never ends), which a well-behaved HTTP library will not do.
///
/// Each connection runs on its own thread; `requests` counts the requests
/// received by path and `bodyBytesSent` the body bytes written, so tests can
/// check how much of a huge body the client read before it hung up.
final class FaultyHTTPServer: @unchecked Sendable {
    typealias Script = @Sendable (_ path: String) -> HTTPFault
    /// A script that sees the whole request: method, headers and body.
    typealias Handler = @Sendable (ReceivedHTTPRequest) -> HTTPFault

    let port: Int
    private let listener: Int32
    private let lock = NSCondition()
    // Guarded by `lock`.
    private var handler: Handler
    private var stopped = false
    private var received: [String] = []
    private var receivedRequests: [ReceivedHTTPRequest] = []
    private var sentBodyBytes = 0
    private var connections: Set<Int32> = []

    /// `http://127.0.0.1:PORT`.
    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Starts listening on `port` (0: any free port).
    convenience init(port: Int = 0, script: @escaping Script) throws {
        try self.init(port: port, handler: { request in script(request.target) })
    }

    /// Starts listening on `port` (0: any free port), answering as `handler` says.
    init(port: Int = 0, handler: @escaping Handler) throws {
        self.handler = handler
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError(description: "socket: \(String(cString: strerror(errno)))") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw HarnessError(description: "bind/listen on 127.0.0.1:\(port): \(reason)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.listener = fd
        self.port = Int(UInt16(bigEndian: address.sin_port))
        startThread { [self] in acceptLoop() }
    }

    /// Replaces the script for the requests to come.
    func setScript(_ script: @escaping Script) {
        lock.lock(); defer { lock.unlock() }
        self.handler = { request in script(request.target) }
    }

    /// Every request received, whole, in order.
    var requestsReceived: [ReceivedHTTPRequest] {
        lock.lock(); defer { lock.unlock() }
        return receivedRequests
    }

    /// The paths (with query) of the requests received, in order.
    var requests: [String] {
        lock.lock(); defer { lock.unlock() }
        return received
    }

    /// Body bytes written to clients so far.
    var bodyBytesSent: Int {
        lock.lock(); defer { lock.unlock() }
        return sentBodyBytes
    }

    /// Stops accepting and closes every connection; the port is free again
    /// (connecting to it is refused) once this returns.
    func stop() {
        lock.lock()
        guard !stopped else { lock.unlock(); return }
        stopped = true
        let open = connections
        lock.unlock()
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    deinit { stop() }

    private var isStopped: Bool {
        lock.lock(); defer { lock.unlock() }
        return stopped
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR { continue }
                return
            }
            lock.lock()
            if stopped {
                lock.unlock()
                close(fd)
                return
            }
            connections.insert(fd)
            lock.unlock()
            startThread { [self] in serve(fd) }
        }
    }

    /// Serves the requests of one connection (keep-alive) until either side closes.
    private func serve(_ fd: Int32) {
        defer {
            lock.lock()
            connections.remove(fd)
            lock.unlock()
            close(fd)
        }
        var buffered: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            // The request head (GET requests carry no body here).
            let terminator = Array("\r\n\r\n".utf8)
            var end: Int?
            while end == nil {
                if let found = Self.find(terminator, in: buffered) {
                    end = found
                    break
                }
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
                if n <= 0 { return }
                buffered += chunk[0..<n]
            }
            let head = String(decoding: buffered[0..<end!], as: UTF8.self)
            buffered.removeSubrange(0..<(end! + terminator.count))
            let lines = head.split(separator: "\r\n").map(String.init)
            let requestLine = lines.first ?? ""
            let parts = requestLine.split(separator: " ")
            let path = parts.count > 1 ? String(parts[1]) : "/"
            var headers: [(name: String, value: String)] = []
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers.append((String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)))
            }
            // A body as long as Content-Length says (token requests are form-encoded POSTs).
            let length = headers.first { $0.name.lowercased() == "content-length" }.flatMap { Int($0.value) } ?? 0
            while buffered.count < length {
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
                if n <= 0 { return }
                buffered += chunk[0..<n]
            }
            let body = Array(buffered.prefix(length))
            buffered.removeSubrange(0..<length)
            let request = ReceivedHTTPRequest(
                method: parts.first.map(String.init) ?? "GET", target: path, headers: headers, body: body)
            lock.lock()
            received.append(path)
            receivedRequests.append(request)
            let answer = handler(request)
            lock.unlock()
            guard perform(answer, on: fd) else { return }
        }
    }

    /// Carries out one answer; returns whether the connection may serve another request.
    private func perform(_ answer: HTTPFault, on fd: Int32) -> Bool {
        switch answer {
        case .respond(let status, let contentType, let body):
            let head = "HTTP/1.1 \(status) \(status == 200 ? "OK" : "Status")\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n\r\n"
            return send(Array(head.utf8), on: fd) && sendBody(body, on: fd)
        case .answer(let status, let headers, let body):
            let lines = headers.map { "\($0.0): \($0.1)\r\n" }.joined()
            let head = "HTTP/1.1 \(status) \(status == 200 ? "OK" : "Status")\r\n\(lines)Content-Length: \(body.count)\r\n\r\n"
            return send(Array(head.utf8), on: fd) && sendBody(body, on: fd)
        case .resetMidBody(let declared, let sent):
            _ = send(Array(headOf(length: declared).utf8), on: fd) && sendBody(sent, on: fd)
            // SO_LINGER with a zero timeout: close sends RST instead of FIN.
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            return false
        case .closeMidBody(let declared, let sent):
            _ = send(Array(headOf(length: declared).utf8), on: fd) && sendBody(sent, on: fd)
            shutdown(fd, Int32(SHUT_WR))
            return false
        case .trickle(let declared, let body, let interval):
            guard send(Array(headOf(length: declared).utf8), on: fd) else { return false }
            for byte in body {
                guard !isStopped, sendBody([byte], on: fd) else { return false }
                // The fault itself is slowness: this server sends one byte per interval.
                usleep(useconds_t(interval * 1_000_000))
            }
            return false
        case .stream(let declared):
            let head = declared.map { headOf(length: $0) }
                ?? "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            guard send(Array(head.utf8), on: fd) else { return false }
            let block = [UInt8](repeating: UInt8(ascii: " "), count: 1 << 16)
            let chunkHead = Array((String(block.count, radix: 16) + "\r\n").utf8)
            var remaining = declared ?? Int.max
            while remaining > 0, !isStopped {
                let piece = Array(block.prefix(min(block.count, remaining)))
                if declared == nil {
                    guard send(chunkHead, on: fd), sendBody(piece, on: fd), send(Array("\r\n".utf8), on: fd) else { return false }
                } else {
                    guard sendBody(piece, on: fd) else { return false }
                }
                remaining -= piece.count
            }
            return false
        }
    }

    private func headOf(length: Int) -> String {
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(length)\r\n\r\n"
    }

    private func sendBody(_ bytes: [UInt8], on fd: Int32) -> Bool {
        guard send(bytes, on: fd) else { return false }
        lock.lock()
        sentBodyBytes += bytes.count
        lock.unlock()
        return true
    }

    private func send(_ bytes: [UInt8], on fd: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if Array(haystack[start..<(start + needle.count)]) == needle { return start }
        }
        return nil
    }
}

/// A port on 127.0.0.1 that nothing listens on: connecting to it is refused.
func refusedPort() throws -> Int {
    let server = try FaultyHTTPServer(script: { _ in .json("{}") })
    let port = server.port
    server.stop()
    return port
}
