#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import AsyncHTTPClient
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// The network, through one AsyncHTTPClient shared by every `http` source
/// of the process.
///
/// The AsyncHTTPClient is created on first use and configured to decompress
/// gzip and deflate bodies
/// (it sends `Accept-Encoding: deflate, gzip` unless a request sets its own),
/// and to fail an attempt whose connection cannot be made at once. Redirects
/// (up to `maxRedirects`, no cycles) are followed here, as `HTTPRedirect`
/// says, so that no credential follows one to another origin.
/// `shutdown()` closes it when the server stops; requests made after that
/// (a page still being fetched ahead, say) fail at once.
public final class HTTPNetworkTransport: HTTPTransport {
    /// The transport of the process.
    public static let shared = HTTPNetworkTransport()
    /// Redirects followed per request (default 5).
    public static let maxRedirects = 5

    private enum State {
        case idle
        case running(HTTPClient)
        case shutDown
    }

    private let state = NIOLockedValueBox<State>(.idle)

    public init() {}

    /// The AsyncHTTPClient, created on first use; `nil` once shut down.
    private var httpClient: HTTPClient? {
        state.withLockedValue { state in
            switch state {
            case .running(let current): return current
            case .shutDown: return nil
            case .idle: break
            }
            var configuration = HTTPClient.Configuration()
            // `exchange` follows redirects itself (`HTTPRedirect`).
            configuration.redirectConfiguration = .disallow
            // Bodies are bounded by `maxBodyBytes` as they are read, decompressed.
            configuration.decompression = .enabled(limit: .none)
            // A connection that cannot be made fails the attempt at once:
            // `HTTPPageClient` retries with its own backoff (`retries`). Left
            // on, the pool would try again and again, silently, until the
            // connect timeout, and a refused connection would look like a
            // slow one.
            configuration.connectionPool.retryConnectionEstablishment = false
            // A collection fetches up to `concurrency` (at most 32) pages at
            // once; each needs a connection of its own (HTTP/1.1).
            configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 32
            let created = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            state = .running(created)
            return created
        }
    }

    /// Whether the AsyncHTTPClient has been created and not shut down.
    public var isRunning: Bool {
        state.withLockedValue { if case .running = $0 { return true } else { return false } }
    }

    /// Shuts the AsyncHTTPClient down, if it was created; requests still in
    /// flight fail, and so do later ones. Waits at most `seconds`: a
    /// connection attempt to a host that never answers holds the client's
    /// shutdown until its connect timeout, and nothing needs to wait for it.
    public func shutdown(waitingAtMost seconds: Double = 1) async {
        let running = state.withLockedValue { state -> HTTPClient? in
            defer { state = .shutDown }
            if case .running(let current) = state { return current }
            return nil
        }
        guard let running else { return }
        let (done, finish) = AsyncStream.makeStream(of: Void.self)
        Task {
            try? await running.shutdown()
            finish.finish()
        }
        let timer = Task {
            try? await Task.sleep(for: .milliseconds(Int(min(max(seconds.isNaN ? 0 : seconds, 0), 86_400) * 1000)))
            finish.finish()
        }
        for await _ in done {}
        timer.cancel()
    }

    /// Sends the request; the whole attempt (connection, answer and body)
    /// must finish within `timeout` seconds.
    public func perform(_ request: HTTPExchangeRequest, timeout: Double, maxBodyBytes: Int) async throws(HTTPTransportError) -> HTTPExchangeResponse {
        if Task.isCancelled { throw .cancelled }
        let nanoseconds = Int64(min(max(timeout, 0), 86_400) * 1e9)
        guard let client = httpClient else { throw .connection("the HTTP client has been shut down") }
        do {
            return try await Self.exchange(request, on: client, deadline: .now() + .nanoseconds(nanoseconds), maxBodyBytes: maxBodyBytes)
        } catch {
            throw Self.transportError(error, maxBodyBytes: maxBodyBytes)
        }
    }

    /// Sends `first` and follows its redirects; the answer of the last.
    private static func exchange(_ first: HTTPExchangeRequest, on client: HTTPClient, deadline: NIODeadline, maxBodyBytes: Int) async throws -> HTTPExchangeResponse {
        var request = first
        var visited: Set<String> = [first.url]
        while true {
            var headers = HTTPHeaders()
            for header in request.headers { headers.add(name: header.name, value: header.value) }
            let outgoing = try HTTPClient.Request(
                url: request.url, method: HTTPMethod(rawValue: request.method), headers: headers,
                body: request.body.map { .bytes($0) })
            let collector = BodyCollector(limit: maxBodyBytes)
            let task = client.execute(request: outgoing, delegate: collector, deadline: deadline)
            let answer = try await withTaskCancellationHandler {
                try await task.get()
            } onCancel: {
                task.cancel()
            }
            if let next = HTTPRedirect.next(after: request, status: answer.status, location: answer.headers.first(name: "location")) {
                guard visited.count <= maxRedirects else { throw HTTPClientError.redirectLimitReached }
                guard visited.insert(next.url).inserted else { throw HTTPClientError.redirectCycleDetected }
                request = next
                continue
            }
            return HTTPExchangeResponse(
                status: answer.status, headers: answer.headers.map { ($0.name, $0.value) }, body: answer.body, url: request.url)
        }
    }

    private static func transportError(_ error: any Error, maxBodyBytes: Int) -> HTTPTransportError {
        if Task.isCancelled { return .cancelled }
        if let error = error as? HTTPTransportError { return error }
        // The limit is the source's: NIO's own figure is what was left of it
        // when a streamed body overran it.
        if error is NIOTooManyBytesError { return .bodyTooLarge(limit: maxBodyBytes) }
        if error is CancellationError { return .cancelled }
        if let error = error as? HTTPClientError {
            switch error {
            case .deadlineExceeded, .readTimeout: return .timeout
            case .invalidURL, .emptyHost, .emptyScheme, .redirectLimitReached, .redirectCycleDetected:
                return .invalidRequest(error.shortDescription.lowercased())
            default:
                if error.shortDescription.hasPrefix("Unsupported scheme") || error.shortDescription.hasPrefix("Invalid header") {
                    return .invalidRequest(error.shortDescription.lowercased())
                }
                return .connection(error.shortDescription.lowercased())
            }
        }
        // A socket error (a refused or reset connection): the system's words for it.
        if let error = error as? IOError {
            return .connection(String(cString: strerror(error.errnoCode)).lowercased())
        }
        return .connection(String(describing: error))
    }
}

/// Takes one response off the connection on its event loop: the head, then
/// the body, copied once from the buffers it arrives in into the array the
/// page is read from (sized from `Content-Length` when the body is not
/// compressed). The body of a redirect is dropped as it comes.
///
/// On the event loop, with no hop to a task per part of the body (as an
/// `AsyncSequence` of the body makes, some twenty per megabyte), and with no
/// buffer that grows by copying itself (as collecting into one `ByteBuffer`
/// does).
final class BodyCollector: HTTPClientResponseDelegate, @unchecked Sendable {
    struct Answer: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: [UInt8]
    }

    private let limit: Int
    // Touched only on the request's event loop, one call at a time.
    private var status = 0
    private var headers = HTTPHeaders()
    private var body: [UInt8] = []
    private var dropsBody = false

    init(limit: Int) {
        self.limit = limit
    }

    func didReceiveHead(task: HTTPClient.Task<Answer>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        status = Int(head.status.code)
        headers = head.headers
        dropsBody = (300..<400).contains(status) && head.headers.first(name: "location") != nil
        if !dropsBody, let length = head.headers.first(name: "content-length").flatMap({ Int($0) }) {
            guard length <= limit else { return task.eventLoop.makeFailedFuture(NIOTooManyBytesError(maxBytes: limit)) }
            if head.headers.first(name: "content-encoding") == nil { body.reserveCapacity(length) }
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Answer>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        guard !dropsBody else { return task.eventLoop.makeSucceededVoidFuture() }
        guard buffer.readableBytes <= limit - body.count else {
            return task.eventLoop.makeFailedFuture(NIOTooManyBytesError(maxBytes: limit))
        }
        buffer.withUnsafeReadableBytes { body.append(contentsOf: $0) }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<Answer>) throws -> Answer {
        Answer(status: status, headers: headers, body: body)
    }
}
