import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The fault table (docs/methods.md): what a hostile upstream or a hostile
/// client gets, and that the collection is intact afterwards. Every row runs
/// the real binary; each asserts the reply (the JSON-RPC error code and the
/// `data` fields that matter) and the state afterwards: `status` as it was
/// before the fault (plus `lastError`), and the next `loadNext` gets the
/// right page once the fault is gone; for the client-side rows, the stream
/// stays in sync, or the `--state` file still holds the collection's place.
///
/// | fault | test | behaviour |
/// | --- | --- | --- |
/// | upstream connection refused | `testConnectionRefused` | -32002 "connection failed: connection refused", `retryable`, every attempt made at once (not after the timeout) |
/// | a host that never answers (backlog full) | `testAHostThatNeverAnswersDoesNotHoldTheExit` | -32002 after the timeout; end of input exits at once, not after the client's connect timeout |
/// | connection reset mid-body | `testConnectionResetMidBody` | -32002, `retryable`, retried |
/// | body cut short (FIN before `Content-Length`) | `testBodyCutShort` | -32002, `retryable`, retried |
/// | slow trickle past the timeout | `testSlowTricklePastTheTimeout` | -32002 "no complete answer within 1 s", `retryable` |
/// | 200 with an HTML body | `testHTMLBody` | -32003 with `line`/`column`, not retried |
/// | 200 with a truncated JSON body | `testTruncatedJSONBody` | -32003 with `line`/`column` |
/// | a 2 GB body (declared) | `testTwoGigabyteBodyIsRejectedUnread` | -32002 "larger than maxBodyBytes (67108864 bytes)", not retried, not read, peak RSS small |
/// | an endless chunked body | `testEndlessChunkedBodyStopsAtTheLimit` | -32002 at `maxBodyBytes` (the configured figure), reading stops there |
/// | 1,000,000 items under `maxItems` 10 | `testMillionItemPageUnderMaxItems` | the page lands, `items` holds the newest 10 at absolute offsets, RSS back near where it was |
/// | nesting beyond jansson's depth limit (2048) | `testNestingBeyondJanssonsDepthLimit` | -32003 "maximum parsing depth reached", no crash |
/// | invalid UTF-8 in a string | `testInvalidUTF8InAString` | -32003 "unable to decode byte 0xff" |
/// | duplicate keys | `testDuplicateKeysLastOneWins` | accepted; the last one wins, in the page and in its items |
/// | numbers beyond 64 bits | `testNumbersBeyondSixtyFourBits` | -32003 "too big integer" / "real number overflow" (jansson keeps int64 and double only) |
/// | a 200 MB request line | `testTwoHundredMegabyteRequestLine` | -32600 `{size, limit}` with `id: null`, the next request answered, RSS below the line's size |
/// | a request that never finishes its line | `testUnfinishedLineAtEndOfInput` | -32700 with `id: null`, exit 0 |
/// | `Content-Length` larger than the body, then EOF | `testContentLengthLargerThanTheBodyAtEndOfInput` (and `FramingTests`) | -32700 "input ended inside a message", exit 0 |
/// | stdin closed while a reply is being written | `testStdinClosedWhileAReplyIsBeingWritten` | the whole reply arrives, exit 0 |
/// | SIGPIPE on stdout | `testClosedStdoutExitsQuietlyWithTheStateSaved` (and `LifecycleTests`) | exits non-zero by itself, never by the signal |
/// | the parent killed | `testParentKilled` (and `LifecycleTests` for `--parent-pid`) | the server exits |
///
/// Other rows live where their subject does: SIGKILL of the state file in
/// `StateFileTests`, the full disk in `StateFileFullDiskTests`, the slow
/// reader in `SlowReaderTests`, retries and statuses in `HTTPFailureTests`.
final class FaultTableTests: EndToEndTestCase {
    // MARK: The collection every upstream row pages

    static let firstPage = #"{"items": [{"id": 1}, {"id": 2}], "next_cursor": "c2"}"#
    static let secondPage = #"{"items": [{"id": 3}], "next_cursor": null}"#

    static func pageOne(_ collection: String) -> String {
        #"{"collection":"\#(collection)","items":[{"id":1},{"id":2}],"page":1,"hasNext":true,"lastId":"c2","count":2}"#
    }

    static func pageTwo(_ collection: String) -> String {
        #"{"collection":"\#(collection)","items":[{"id":3}],"page":2,"hasNext":false,"lastId":null,"count":3}"#
    }

    /// `status` after page 1, with `lastError` as given (a string pattern such as `<contains:...>`).
    static func afterPageOne(_ collection: String, lastError: String) -> String {
        #"{"collection":"\#(collection)","hasNext":true,"isLoading":false,"lastId":"c2","count":2,"pages":1,"lastError":"\#(lastError)"}"#
    }

    private var nextId = 0

    /// Sends a request and returns its reply.
    private func call(_ server: ServerHarness, _ method: String, _ params: String? = nil, timeout: TimeInterval? = nil) throws -> JSONValue {
        nextId += 1
        try server.request("\(nextId)", method, params)
        return try server.reply("\(nextId)", timeout: timeout)
    }

    private func startHTTP(_ script: @escaping FaultyHTTPServer.Script) throws -> FaultyHTTPServer {
        let server = try FaultyHTTPServer(script: script)
        addTeardownBlock { server.stop() }
        return server
    }

    /// A server for collection `h` over `upstream`; `source` adds fields to its source.
    private func startServer(upstream: FaultyHTTPServer, source: String = "") throws -> ServerHarness {
        let config = #"{"collections": {"h": {"source": {"type": "http", "url": "\#(upstream.baseURL)/items"\#(source)}, "paging": {"strategy": "cursor"}}}}"#
        return try startServer(config: config)
    }

    /// Page 1 is served; page 2 (`?cursor=c2`) is `fault`.
    private static func script(fault: HTTPFault) -> FaultyHTTPServer.Script {
        { path in path == "/items" ? .json(firstPage) : fault }
    }

    private static let healthy: FaultyHTTPServer.Script = { path in
        path == "/items" ? .json(firstPage) : path == "/items?cursor=c2" ? .json(secondPage) : .respond(status: 404, contentType: "text/plain", body: [])
    }

    /// Page 1, then page 2 from `fault`: the error reply must match `data`
    /// (the `data` of the error, a pattern) with `code`; then the state is as
    /// after page 1 with `lastError` matching, and once the upstream is
    /// healthy again the next `loadNext` gets page 2. Returns the server for more checks.
    @discardableResult
    private func upstreamRow(
        _ fault: HTTPFault, source: String = "", code: Int, data: String, lastError: String,
        requests: Int, check: ((ServerHarness, FaultyHTTPServer) throws -> Void)? = nil
    ) throws -> ServerHarness {
        let upstream = try startHTTP(Self.script(fault: fault))
        let server = try startServer(upstream: upstream, source: source)
        try expectMatch(call(server, "loadNext", #"{"collection": "h"}"#), rpcResult(nextId, Self.pageOne("h")))
        try expectMatch(
            call(server, "loadNext", #"{"collection": "h"}"#, timeout: 30),
            rpcError(nextId, #"{"code":\#(code),"message":"<string>","data":\#(data)}"#), "the fault's reply")
        XCTAssertEqual(upstream.requests, ["/items"] + Array(repeating: "/items?cursor=c2", count: requests), "requests upstream")
        try check?(server, upstream)
        try expectStateIntact(server, upstream: upstream, lastError: lastError)
        try server.finish()
        return server
    }

    /// The state is as after page 1 (with `lastError`); with the upstream
    /// healthy again, the next `loadNext` gets page 2 and clears `lastError`.
    private func expectStateIntact(_ server: ServerHarness, upstream: FaultyHTTPServer?, lastError: String, collection: String = "h") throws {
        try expectMatch(
            call(server, "status", #"{"collection": "\#(collection)"}"#),
            rpcResult(nextId, Self.afterPageOne(collection, lastError: lastError)), "status after the fault")
        upstream?.setScript(Self.healthy)
        try expectMatch(call(server, "loadNext", #"{"collection": "\#(collection)"}"#), rpcResult(nextId, Self.pageTwo(collection)), "page 2 after the fault")
        try expectMatch(
            call(server, "status", #"{"collection": "\#(collection)"}"#),
            rpcResult(nextId, #"{"collection":"\#(collection)","hasNext":false,"isLoading":false,"lastId":null,"count":3,"pages":2,"lastError":null}"#))
    }

    // MARK: Upstream faults

    func testConnectionRefused() throws {
        let upstream = try startHTTP(Self.healthy)
        let port = upstream.port
        // Refused is refused at once, not after the attempt's timeout.
        let server = try startServer(upstream: upstream, source: #", "retries": 1, "timeout": 5"#)
        try expectMatch(call(server, "loadNext", #"{"collection": "h"}"#), rpcResult(nextId, Self.pageOne("h")))
        upstream.stop()
        try expectMatch(
            call(server, "loadNext", #"{"collection": "h"}"#, timeout: 30),
            rpcError(nextId, #"{"code":-32002,"message":"<string>","data":{"collection":"h","attempts":2,"retryable":true,"message":"<contains:connection failed: connection refused (after 2 attempts)>"}}"#))
        // The same port answers again.
        let again = try FaultyHTTPServer(port: port, script: Self.healthy)
        addTeardownBlock { again.stop() }
        try expectStateIntact(server, upstream: again, lastError: "<contains:connection failed>")
        XCTAssertEqual(again.requests, ["/items?cursor=c2"])
        try server.finish()
    }

    func testAHostThatNeverAnswersDoesNotHoldTheExit() throws {
        // A listening socket whose backlog is full: connection attempts get no answer (a firewalled host).
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(listener, 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        XCTAssertEqual(listen(listener, 0), 0)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        var fillers: [Int32] = []
        for _ in 0..<3 {
            let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(filler, $0, length) } }
            fillers.append(filler)
        }
        addTeardownBlock { for fd in fillers + [listener] { close(fd) } }
        usleep(200_000)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let config = #"{"collections": {"h": {"source": {"type": "http", "url": "http://127.0.0.1:\#(port)/items", "timeout": 1, "retries": 0}, "paging": {"strategy": "cursor"}}}}"#
        let server = try startServer(config: config, arguments: ["--drain-timeout", "1"])
        try expectMatch(
            call(server, "loadNext", #"{"collection": "h"}"#, timeout: 30),
            rpcError(nextId, #"{"code":-32002,"message":"<string>","data":{"collection":"h","attempts":1,"retryable":true,"message":"<string>"}}"#))
        // The HTTP client's connection attempt goes on after the request gave up; the exit does not wait for it (it took ~30 s).
        server.closeInput()
        XCTAssertEqual(try server.waitForExit(timeout: 10), 0)
        try server.finish()
    }

    func testConnectionResetMidBody() throws {
        let body = Array(Self.secondPage.utf8)
        try upstreamRow(
            .resetMidBody(declaredLength: body.count, sent: Array(body.prefix(10))), source: #", "retries": 1"#,
            code: -32002, data: #"{"collection":"h","attempts":2,"retryable":true,"message":"<contains:connection failed>"}"#,
            lastError: "<contains:connection failed>", requests: 2)
    }

    func testBodyCutShort() throws {
        let body = Array(Self.secondPage.utf8)
        try upstreamRow(
            .closeMidBody(declaredLength: body.count, sent: Array(body.prefix(10))), source: #", "retries": 1"#,
            code: -32002, data: #"{"collection":"h","attempts":2,"retryable":true,"message":"<contains:connection failed>"}"#,
            lastError: "<contains:connection failed>", requests: 2)
    }

    func testSlowTricklePastTheTimeout() throws {
        let body = Array(Self.secondPage.utf8)
        // One byte every 0.2 s: the whole body would take 8 s; the timeout is 1 s.
        try upstreamRow(
            .trickle(declaredLength: body.count, body: body, interval: 0.2), source: #", "timeout": 1, "retries": 0"#,
            code: -32002, data: #"{"collection":"h","attempts":1,"retryable":true,"message":"<contains:no complete answer within 1 s>"}"#,
            lastError: "<contains:no complete answer within 1 s>", requests: 1)
    }

    func testHTMLBody() throws {
        let html = "<!DOCTYPE html>\n<html><body><h1>502 Bad Gateway</h1></body></html>\n"
        try upstreamRow(
            .respond(status: 200, contentType: "text/html", body: Array(html.utf8)), source: #", "retries": 3"#,
            code: -32003, data: #"{"collection":"h","line":1,"column":"<int>","message":"<contains:page is not JSON>"}"#,
            lastError: "<contains:page is not JSON>", requests: 1)
    }

    func testTruncatedJSONBody() throws {
        try upstreamRow(
            .json("{\"items\": [{\"id\": 3},\n {\"id\""), source: #", "retries": 3"#,
            code: -32003, data: #"{"collection":"h","line":2,"column":"<int>","message":"<contains:page is not JSON>"}"#,
            lastError: "<contains:page is not JSON>", requests: 1)
    }

    func testTwoGigabyteBodyIsRejectedUnread() throws {
        let twoGigabytes = 2 << 30
        try upstreamRow(
            .stream(declaredLength: twoGigabytes), source: #", "retries": 3"#,
            code: -32002, data: #"{"collection":"h","attempts":1,"retryable":false,"message":"<contains:larger than maxBodyBytes (67108864 bytes)>"}"#,
            lastError: "<contains:larger than maxBodyBytes>", requests: 1
        ) { server, upstream in
            // Rejected on its declared length: the body was not read (what
            // was sent sits in socket buffers), and memory did not grow by it.
            XCTAssertLessThan(upstream.bodyBytesSent, 32 << 20, "body bytes the server could send before the client hung up")
            let peak = try XCTUnwrap(processStatus(server.pid, "VmHWM"))
            assertMemoryBound(peak, 200 << 20, "peak RSS of nextpage, in bytes")
        }
    }

    func testEndlessChunkedBodyStopsAtTheLimit() throws {
        try upstreamRow(
            .stream(declaredLength: nil), source: #", "maxBodyBytes": 1048576, "retries": 3"#,
            code: -32002, data: #"{"collection":"h","attempts":1,"retryable":false,"message":"<contains:larger than maxBodyBytes (1048576 bytes)>"}"#,
            lastError: "<contains:larger than maxBodyBytes>", requests: 1
        ) { server, upstream in
            XCTAssertLessThan(upstream.bodyBytesSent, 32 << 20, "body bytes the server could send before the client hung up")
            let peak = try XCTUnwrap(processStatus(server.pid, "VmHWM"))
            assertMemoryBound(peak, 200 << 20, "peak RSS of nextpage, in bytes")
        }
    }

    // MARK: Pages that are JSON in name only

    /// Page 1 from `pages/first.json`, page 2 from `pages/c2.json` holding
    /// `faulty`: the error must match; then the state is intact and, with
    /// `c2.json` fixed, the next `loadNext` gets page 2.
    private func pageRow(_ faulty: [UInt8], code: Int = -32003, data: String, lastError: String) throws {
        let directory = try temporaryDirectory()
        try writeFile(directory + "/pages/first.json", Self.firstPage)
        try Data(faulty).write(to: URL(fileURLWithPath: directory + "/pages/c2.json"))
        let server = try startServer(config: fileConfig("p", paging: #"{"strategy": "cursor"}"#), in: directory)
        try expectMatch(call(server, "loadNext", #"{"collection": "p"}"#), rpcResult(nextId, Self.pageOne("p")))
        try expectMatch(
            call(server, "loadNext", #"{"collection": "p"}"#),
            rpcError(nextId, #"{"code":\#(code),"message":"<string>","data":\#(data)}"#), "the fault's reply")
        try writeFile(directory + "/pages/c2.json", Self.secondPage)
        try expectStateIntact(server, upstream: nil, lastError: lastError, collection: "p")
        try server.finish()
    }

    func testNestingBeyondJanssonsDepthLimit() throws {
        let depth = 100_000
        let page = #"{"items": [{"id": 3, "deep": "# + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + #"}], "next_cursor": null}"#
        try pageRow(
            Array(page.utf8),
            data: #"{"collection":"p","line":1,"column":"<int>","message":"<contains:maximum parsing depth reached>"}"#,
            lastError: "<contains:maximum parsing depth reached>")
    }

    func testInvalidUTF8InAString() throws {
        let page = Array(#"{"items": [{"id": 3, "name": "bad "#.utf8) + [0xFF, 0xFE] + Array(#" byte"}], "next_cursor": null}"#.utf8)
        try pageRow(
            page, data: #"{"collection":"p","line":1,"column":"<int>","message":"<contains:unable to decode byte 0xff>"}"#,
            lastError: "<contains:unable to decode byte 0xff>")
    }

    func testNumbersBeyondSixtyFourBits() throws {
        // jansson holds integers as int64 and reals as double; it refuses what does not fit.
        try pageRow(
            Array(#"{"items": [{"id": 3, "n": 123456789012345678901234567890}], "next_cursor": null}"#.utf8),
            data: #"{"collection":"p","line":1,"column":"<int>","message":"<contains:too big integer>"}"#,
            lastError: "<contains:too big integer>")
        try pageRow(
            Array(#"{"items": [{"id": 3, "n": 18446744073709551615}], "next_cursor": null}"#.utf8),
            data: #"{"collection":"p","line":1,"column":"<int>","message":"<contains:too big integer>"}"#,
            lastError: "<contains:too big integer>")
        try pageRow(
            Array(#"{"items": [{"id": 3, "x": 1e400}], "next_cursor": null}"#.utf8),
            data: #"{"collection":"p","line":1,"column":"<int>","message":"<contains:real number overflow>"}"#,
            lastError: "<contains:real number overflow>")
    }

    func testNumbersAtTheEdgesOfSixtyFourBitsAreServed() throws {
        let directory = try temporaryDirectory()
        try writeFile(directory + "/pages/first.json", #"{"items": [{"id": 9223372036854775807, "min": -9223372036854775808, "x": 1.7976931348623157e308}], "next_cursor": null}"#)
        let server = try startServer(config: fileConfig("p", paging: #"{"strategy": "cursor"}"#), in: directory)
        try expectMatch(
            call(server, "loadNext", #"{"collection": "p"}"#),
            rpcResult(nextId, #"{"collection":"p","items":[{"id":9223372036854775807,"min":-9223372036854775808,"x":"<number>"}],"page":1,"hasNext":false,"lastId":null,"count":1}"#))
        try server.finish()
    }

    func testDuplicateKeysLastOneWins() throws {
        // In the page (two item arrays, two cursors) and in an item (two `v`s).
        let directory = try temporaryDirectory()
        try writeFile(directory + "/pages/first.json", Self.firstPage)
        try writeFile(
            directory + "/pages/c2.json",
            #"{"items": [{"id": 0}], "next_cursor": "c9", "items": [{"id": 3, "v": 1, "w": 0, "v": 2}], "next_cursor": null}"#)
        let server = try startServer(config: fileConfig("p", paging: #"{"strategy": "cursor"}"#), in: directory)
        try expectMatch(call(server, "loadNext", #"{"collection": "p"}"#), rpcResult(nextId, Self.pageOne("p")))
        try expectMatch(
            call(server, "loadNext", #"{"collection": "p"}"#),
            rpcResult(nextId, #"{"collection":"p","items":[{"id":3,"v":2,"w":0}],"page":2,"hasNext":false,"lastId":null,"count":3}"#))
        // The item went out as jansson holds it: one `v`, in the place of the first.
        XCTAssert(server.stdoutText.contains(#"[{"id":3,"v":2,"w":0}]"#), server.stdoutText)
        try expectMatch(
            call(server, "items", #"{"collection": "p"}"#),
            rpcResult(nextId, #"{"collection":"p","items":[{"id":1},{"id":2},{"id":3,"v":2,"w":0}],"count":3,"offset":0}"#))
        try server.finish()
    }

    func testMillionItemPageUnderMaxItems() throws {
        let directory = try temporaryDirectory()
        let count = 1_000_000
        var page = Array(#"{"items": ["#.utf8)
        page.reserveCapacity(count * 16)
        for id in 1...count {
            if id > 1 { page.append(UInt8(ascii: ",")) }
            page += #"{"id":"#.utf8
            page += String(id).utf8
            page.append(UInt8(ascii: "}"))
        }
        page += #"], "next_cursor": "c2"}"#.utf8
        try FileManager.default.createDirectory(atPath: directory + "/pages", withIntermediateDirectories: true)
        try Data(page).write(to: URL(fileURLWithPath: directory + "/pages/first.json"))
        try writeFile(directory + "/pages/c2.json", #"{"items": [{"id": 1000001}], "next_cursor": null}"#)
        let server = try startServer(
            config: fileConfig("m", paging: #"{"strategy": "cursor"}"#, extra: #""maxItems": 10"#), in: directory)
        server.timeout = 60
        try expectMatch(call(server, "status", #"{"collection": "m"}"#), rpcResult(nextId, #"{"collection":"m","hasNext":true,"isLoading":false,"lastId":null,"count":0,"pages":0,"lastError":null}"#))
        let before = try XCTUnwrap(processStatus(server.pid, "VmRSS"))

        // Page 1 (about 14 MB) is loaded by a notification, so that no reply
        // carries it; the loadNext queued behind it gets page 2.
        try server.notify("loadNext", #"{"collection": "m"}"#)
        try expectMatch(
            call(server, "loadNext", #"{"collection": "m"}"#),
            rpcResult(nextId, #"{"collection":"m","items":[{"id":1000001}],"page":2,"hasNext":false,"lastId":null,"count":1000001}"#))
        // Only the newest 10 are kept; offsets stay absolute.
        let newest = (count - 8...count + 1).map { #"{"id":\#($0)}"# }.joined(separator: ",")
        try expectMatch(
            call(server, "items", #"{"collection": "m"}"#),
            rpcResult(nextId, #"{"collection":"m","items":[\#(newest)],"count":1000001,"offset":999991}"#))
        // Asked for items that were dropped: the slice starts at the oldest kept.
        let oldest = (count - 8...count - 6).map { #"{"id":\#($0)}"# }.joined(separator: ",")
        try expectMatch(
            call(server, "items", #"{"collection": "m", "offset": 5, "limit": 3}"#),
            rpcResult(nextId, #"{"collection":"m","items":[\#(oldest)],"count":1000001,"offset":999991}"#), "dropped items are gone")
        // What the page took while it was decoded was given back.
        let after = try XCTUnwrap(processStatus(server.pid, "VmRSS"))
        assertMemoryBound(after - before, 64 << 20, "RSS growth after a 1,000,000-item page with maxItems 10 (before: \(before) bytes)")
        try expectMatch(
            call(server, "status", #"{"collection": "m"}"#),
            rpcResult(nextId, #"{"collection":"m","hasNext":false,"isLoading":false,"lastId":null,"count":1000001,"pages":2,"lastError":null}"#))
        try server.finish()
    }

    // MARK: Client faults

    /// The state file's entry for `collection`.
    private func savedState(_ path: String, _ collection: String) throws -> JSONValue? {
        try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: path)))["collections"]?[collection]
    }

    static let demoAfterPageOne = #"{"hasNext":true,"lastId":"page-2","count":25,"pages":1,"lastError":null}"#

    func testTwoHundredMegabyteRequestLine() throws {
        let server = try startServer()
        try expectMatch(call(server, "loadNext", #"{"collection": "demo"}"#), #"{"jsonrpc":"2.0","id":1,"result":"<any>"}"#)
        let size = 200 << 20
        var line = Array(#"{"jsonrpc":"2.0","id":99,"method":"status","params":{"collection":"demo","padding":""#.utf8)
        line.reserveCapacity(size + 64)
        line += [UInt8](repeating: UInt8(ascii: "x"), count: size - line.count - 3)
        line += Array(#""}}"#.utf8)
        XCTAssertEqual(line.count, size)
        try server.sendRaw(line + [0x0A])
        try expectMatch(
            server.nextMessage(timeout: 60),
            #"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"<string>","data":{"size":\#(size),"limit":67108864}}}"#)
        // In sync: the next line is the next request, and the collection is where it was.
        try expectMatch(
            call(server, "status", #"{"collection": "demo"}"#),
            rpcResult(nextId, #"{"collection":"demo","hasNext":true,"isLoading":false,"lastId":"page-2","count":25,"pages":1,"lastError":null}"#))
        let peak = try XCTUnwrap(processStatus(server.pid, "VmHWM"))
        assertMemoryBound(peak, 160 << 20, "peak RSS of nextpage while skipping a 200 MB line, in bytes")
        try server.finish()
    }

    func testUnfinishedLineAtEndOfInput() throws {
        let server = try startServer(arguments: ["--state", "run.state"])
        try expectMatch(call(server, "loadNext", #"{"collection": "demo"}"#), #"{"jsonrpc":"2.0","id":1,"result":"<any>"}"#)
        try server.sendRaw(#"{"jsonrpc":"2.0","id":2,"method":"status","params":{"collection":"de"#)
        server.closeInput()
        try expectMatch(
            server.nextMessage(),
            #"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"<string>","data":{"line":1,"column":"<int>","position":"<int>","text":"<string>"}}}"#)
        XCTAssertEqual(try server.finish(), 0)
        try expectMatch(XCTUnwrap(savedState(server.directory + "/run.state", "demo")), Self.demoAfterPageOne)
    }

    func testContentLengthLargerThanTheBodyAtEndOfInput() throws {
        let server = try startServer(arguments: ["--state", "run.state"], framing: .lsp)
        try expectMatch(call(server, "loadNext", #"{"collection": "demo"}"#), #"{"jsonrpc":"2.0","id":1,"result":"<any>"}"#)
        let body = #"{"jsonrpc":"2.0","id":2,"method":"status"}"#
        try server.sendRaw("Content-Length: 1000\r\n\r\n" + body)
        server.closeInput()
        try expectMatch(
            server.nextMessage(),
            #"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"<contains:input ended inside a message (\#(body.utf8.count) of 1000 bytes)>","data":{"line":1,"column":\#(body.utf8.count),"position":\#(body.utf8.count),"text":"input ended inside a message (\#(body.utf8.count) of 1000 bytes)"}}}"#)
        XCTAssertEqual(try server.finish(), 0)
        try expectMatch(XCTUnwrap(savedState(server.directory + "/run.state", "demo")), Self.demoAfterPageOne)
    }

    func testStdinClosedWhileAReplyIsBeingWritten() throws {
        // A page of about 1 MB: far more than a pipe holds, so the reply
        // cannot be written before the client reads again.
        let directory = try temporaryDirectory()
        let padding = String(repeating: "p", count: 500)
        let items = (1...2000).map { #"{"id":\#($0),"text":"\#(padding)"}"# }.joined(separator: ",")
        try writeFile(directory + "/pages/first.json", #"{"items": [\#(items)], "next_cursor": null}"#)
        let server = try startServer(config: fileConfig("big", paging: #"{"strategy": "cursor"}"#), arguments: ["--state", "run.state"], in: directory)
        server.pauseReading()
        try server.request("1", "loadNext", #"{"collection": "big"}"#)
        server.closeInput()
        server.resumeReading()
        let reply = try server.reply("1")
        try expectMatch(reply, rpcResult(1, #"{"collection":"big","items":"<any>","page":1,"hasNext":false,"lastId":null,"count":2000}"#))
        XCTAssertEqual(reply["result"]?["items"]?.arrayValue?.count, 2000)
        XCTAssertEqual(reply["result"]?["items"]?[1999]?["id"], .int(2000))
        XCTAssertEqual(try server.finish(), 0)
        try expectMatch(XCTUnwrap(savedState(directory + "/run.state", "big")), #"{"hasNext":false,"lastId":null,"count":2000,"pages":1,"lastError":null}"#)
    }

    func testClosedStdoutExitsQuietlyWithTheStateSaved() throws {
        let server = try startServer(arguments: ["--state", "run.state"], closeStdout: true)
        // The page lands (and is saved) before its reply fails to be written.
        try server.request("1", "loadNext", #"{"collection": "demo"}"#)
        let status = try server.waitForExit()
        XCTAssertNil(server.terminatingSignal, "killed by a signal (SIGPIPE?) instead of exiting; stderr: \(server.stderrText)")
        XCTAssertNotEqual(status, 0, "a closed stdout exits non-zero")
        XCTAssertFalse(server.stderrText.contains("Fatal error"), server.stderrText)
        try expectMatch(XCTUnwrap(savedState(server.directory + "/run.state", "demo")), Self.demoAfterPageOne)
    }

    func testParentKilled() throws {
        // nextpage runs as the child of a shell; the shell is killed. stdin
        // stays open (the test holds it), so only the parent check can end it.
        let directory = try temporaryDirectory()
        let server = try ServerHarness(
            directory: directory, arguments: ["--state", "run.state"],
            launcher: ["/bin/sh", "-c", #"exec 3<&0; "$0" "$@" <&3 3<&- & wait"#])
        addTeardownBlock { server.kill() }
        try expectMatch(call(server, "loadNext", #"{"collection": "demo"}"#), #"{"jsonrpc":"2.0","id":1,"result":"<any>"}"#)
        Glibc.kill(server.pid, SIGKILL)
        // nextpage's end closes its stdout (nobody else holds it).
        try server.waitForEndOfOutput(timeout: 15)
        XCTAssertEqual(server.unconsumed, [])
        XCTAssertEqual(server.protocolViolations, [])
        try expectMatch(XCTUnwrap(savedState(directory + "/run.state", "demo")), Self.demoAfterPageOne)
    }
}

/// Asserts a memory bound of the server (`used` < `limit` bytes), except
/// under a sanitizer (`scripts/sanitize` sets NEXTPAGE_SANITIZER): ASan
/// keeps freed memory in quarantine and adds shadow memory, so RSS says
/// nothing about nextpage there. The normal run checks every bound.
func assertMemoryBound(_ used: Int, _ limit: Int, _ message: @autoclosure () -> String, file: StaticString = #filePath, line: UInt = #line) {
    if let sanitizer = ProcessInfo.processInfo.environment["NEXTPAGE_SANITIZER"], !sanitizer.isEmpty { return }
    XCTAssertLessThan(used, limit, message(), file: file, line: line)
}

/// A field of `/proc/PID/status` given in kB (`VmRSS`, `VmHWM`), in bytes.
func processStatus(_ pid: pid_t, _ field: String) -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
        let value = line.dropFirst(field.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap { Int($0) }
        return value.map { $0 * 1024 }
    }
    return nil
}
