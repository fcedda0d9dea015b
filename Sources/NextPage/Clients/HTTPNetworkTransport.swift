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
        let nanoseconds = UInt64(min(max(timeout, 0), 86_400) * 1e9)
        guard let client = httpClient else { throw .connection("the HTTP client has been shut down") }
        do {
            return try await withThrowingTaskGroup(of: HTTPExchangeResponse?.self) { group in
                group.addTask {
                    try await Self.exchange(request, on: client, deadline: .now() + .nanoseconds(Int64(nanoseconds)), maxBodyBytes: maxBodyBytes)
                }
                group.addTask {
                    try await Task.sleep(nanoseconds: nanoseconds)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let response = first else { throw HTTPTransportError.timeout }
                return response
            }
        } catch {
            throw Self.transportError(error, maxBodyBytes: maxBodyBytes)
        }
    }

    /// Sends `first` and follows its redirects; the answer of the last.
    private static func exchange(_ first: HTTPExchangeRequest, on client: HTTPClient, deadline: NIODeadline, maxBodyBytes: Int) async throws -> HTTPExchangeResponse {
        var request = first
        var visited: Set<String> = [first.url]
        while true {
            var outgoing = HTTPClientRequest(url: request.url)
            outgoing.method = HTTPMethod(rawValue: request.method)
            for header in request.headers { outgoing.headers.add(name: header.name, value: header.value) }
            if let body = request.body { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
            let response = try await client.execute(outgoing, deadline: deadline)
            if let next = HTTPRedirect.next(after: request, status: Int(response.status.code), location: response.headers.first(name: "location")) {
                // The redirect's own body is read (a little of it) and dropped.
                _ = try? await response.body.collect(upTo: 64 << 10)
                guard visited.count <= maxRedirects else { throw HTTPClientError.redirectLimitReached }
                guard visited.insert(next.url).inserted else { throw HTTPClientError.redirectCycleDetected }
                request = next
                continue
            }
            return HTTPExchangeResponse(
                status: Int(response.status.code),
                headers: response.headers.map { ($0.name, $0.value) },
                body: try await Self.bytes(of: response, upTo: maxBodyBytes),
                url: request.url)
        }
    }

    /// The whole body, copied once from the buffers it arrives in into the
    /// array the page is read from (sized from `Content-Length` when the
    /// body is not compressed). Collecting it into one `ByteBuffer` first
    /// (`collect(upTo:)`) would copy a large body again each time that
    /// buffer grows, and once more into the array.
    private static func bytes(of response: HTTPClientResponse, upTo maxBodyBytes: Int) async throws -> [UInt8] {
        var body: [UInt8] = []
        if let length = response.headers.first(name: "content-length").flatMap({ Int($0) }) {
            guard length <= maxBodyBytes else { throw NIOTooManyBytesError(maxBytes: maxBodyBytes) }
            if response.headers.first(name: "content-encoding") == nil { body.reserveCapacity(length) }
        }
        for try await chunk in response.body {
            guard chunk.readableBytes <= maxBodyBytes - body.count else { throw NIOTooManyBytesError(maxBytes: maxBodyBytes) }
            chunk.withUnsafeReadableBytes { body.append(contentsOf: $0) }
        }
        return body
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
