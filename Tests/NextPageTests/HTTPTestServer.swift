import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// A request as the test server received it.
struct HTTPReceivedRequest: Sendable {
    var method: String
    /// The request target exactly as sent (`/items?cursor=a%2Bb`).
    var uri: String
    var headers: [(name: String, value: String)]
    var body: [UInt8]
    /// When the whole request had arrived (monotonic nanoseconds).
    var receivedAt: UInt64

    /// The path part of `uri`.
    var path: String { String(uri.prefix { $0 != "?" }) }

    /// The raw query (after `?`), or `nil`.
    var query: String? {
        guard let question = uri.firstIndex(of: "?") else { return nil }
        return String(uri[uri.index(after: question)...])
    }

    /// The raw value of a query parameter (still percent-encoded).
    func queryValue(_ name: String) -> String? {
        for item in (query ?? "").split(separator: "&") {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.first.map(String.init) == name { return parts.count > 1 ? String(parts[1]) : "" }
        }
        return nil
    }

    /// The first value of a header (case-insensitive name).
    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    var bodyText: String { String(decoding: body, as: UTF8.self) }
}

/// What the test server does with a request.
enum HTTPScriptedAnswer: Sendable {
    /// Answers with this status, headers and body (`Content-Length` is added).
    case respond(status: Int, headers: [(String, String)], body: [UInt8])
    /// Never answers (the connection stays open until the client gives up).
    case hang
    /// Closes the connection without answering.
    case close

    /// A 200 with a JSON body.
    static func json(_ body: String, status: Int = 200, headers: [(String, String)] = []) -> HTTPScriptedAnswer {
        .respond(status: status, headers: [("Content-Type", "application/json")] + headers, body: Array(body.utf8))
    }

    /// A status with a short text body.
    static func status(_ status: Int, headers: [(String, String)] = [], body: String = "") -> HTTPScriptedAnswer {
        .respond(status: status, headers: headers, body: Array(body.utf8))
    }
}

/// A real HTTP/1.1 server on 127.0.0.1 (an ephemeral port) for the http
/// source tests, answering each request with a per-test script and keeping
/// every request it received. Tests learn that requests arrived by awaiting
/// `waitForRequests`, which resumes from the server itself: no sleeps.
final class HTTPTestServer: Sendable {
    typealias Script = @Sendable (HTTPReceivedRequest) -> HTTPScriptedAnswer

    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let state: NIOLockedValueBox<State>
    let port: Int

    private struct State {
        var requests: [HTTPReceivedRequest] = []
        var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    /// `http://127.0.0.1:PORT`.
    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Every request received so far, in order of arrival.
    var requests: [HTTPReceivedRequest] { state.withLockedValue { $0.requests } }

    private init(group: MultiThreadedEventLoopGroup, channel: any Channel, state: NIOLockedValueBox<State>) {
        self.group = group
        self.channel = channel
        self.state = state
        self.port = channel.localAddress?.port ?? 0
    }

    /// Starts a server that answers with `script`.
    static func start(_ script: @escaping Script) async throws -> HTTPTestServer {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let state = NIOLockedValueBox(State())
        let record: @Sendable (HTTPReceivedRequest) -> Void = { request in
            let ready = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
                state.requests.append(request)
                let count = state.requests.count
                let ready = state.waiters.filter { $0.count <= count }.map(\.continuation)
                state.waiters.removeAll { $0.count <= count }
                return ready
            }
            for continuation in ready { continuation.resume() }
        }
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(ScriptHandler(script: script, record: record))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return HTTPTestServer(group: group, channel: channel, state: state)
    }

    /// Starts a server that answers the n-th request with `answers[n]` (and
    /// any request beyond them with a 500 saying so).
    static func start(answers: [HTTPScriptedAnswer]) async throws -> HTTPTestServer {
        let next = NIOLockedValueBox(0)
        return try await start { _ in
            let index = next.withLockedValue { value -> Int in
                defer { value += 1 }
                return value
            }
            return index < answers.count ? answers[index] : .status(500, body: "unscripted request \(index + 1)")
        }
    }

    /// Returns once at least `count` requests have arrived.
    func waitForRequests(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLockedValue { state -> Bool in
                if state.requests.count >= count { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Closes the server and every connection.
    func stop() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }
}

/// Collects one request at a time and answers it from the script.
private final class ScriptHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let script: HTTPTestServer.Script
    private let record: @Sendable (HTTPReceivedRequest) -> Void
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(script: @escaping HTTPTestServer.Script, record: @escaping @Sendable (HTTPReceivedRequest) -> Void) {
        self.script = script
        self.record = record
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
        case .body(let buffer):
            body.append(contentsOf: buffer.readableBytesView)
        case .end:
            guard let head else { return }
            self.head = nil
            let request = HTTPReceivedRequest(
                method: head.method.rawValue, uri: head.uri, headers: head.headers.map { ($0.name, $0.value) },
                body: body, receivedAt: NIODeadline.now().uptimeNanoseconds)
            record(request)
            switch script(request) {
            case .hang:
                break
            case .close:
                context.close(promise: nil)
            case .respond(let status, let headers, let body):
                var responseHeaders = HTTPHeaders(headers)
                responseHeaders.replaceOrAdd(name: "Content-Length", value: String(body.count))
                let responseHead = HTTPResponseHead(
                    version: head.version, status: HTTPResponseStatus(statusCode: status), headers: responseHeaders)
                context.write(wrapOutboundOut(.head(responseHead)), promise: nil)
                context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }
}
