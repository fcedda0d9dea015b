import AsyncHTTPClient
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// The network, through one AsyncHTTPClient shared by every `http` source
/// of the process.
///
/// The AsyncHTTPClient is created on first use and configured to follow up
/// to `maxRedirects` redirects, to decompress gzip and deflate bodies
/// (it sends `Accept-Encoding: deflate, gzip` unless a request sets its own),
/// and to fail an attempt whose connection cannot be made at once.
/// `shutdown()` closes it when the server stops; a later request creates a
/// new one.
public final class HTTPNetworkTransport: HTTPTransport {
    /// The transport of the process.
    public static let shared = HTTPNetworkTransport()
    /// Redirects followed per request (default 5).
    public static let maxRedirects = 5

    private let client = NIOLockedValueBox<HTTPClient?>(nil)

    public init() {}

    private var httpClient: HTTPClient {
        client.withLockedValue { current in
            if let current { return current }
            var configuration = HTTPClient.Configuration()
            configuration.redirectConfiguration = .follow(max: Self.maxRedirects, allowCycles: false)
            // Bodies are bounded by `maxBodyBytes` as they are read, decompressed.
            configuration.decompression = .enabled(limit: .none)
            // A connection that cannot be made fails the attempt at once:
            // `HTTPPageClient` retries with its own backoff (`retries`). Left
            // on, the pool would try again and again, silently, until the
            // connect timeout, and a refused connection would look like a
            // slow one.
            configuration.connectionPool.retryConnectionEstablishment = false
            let created = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            current = created
            return created
        }
    }

    /// Whether the AsyncHTTPClient has been created (and not shut down since).
    public var isRunning: Bool { client.withLockedValue { $0 != nil } }

    /// Shuts the AsyncHTTPClient down, if it was created; requests still in
    /// flight fail.
    public func shutdown() async {
        guard let running = client.withLockedValue({ current -> HTTPClient? in
            defer { current = nil }
            return current
        }) else { return }
        try? await running.shutdown()
    }

    /// Sends the request; the whole attempt (connection, answer and body)
    /// must finish within `timeout` seconds.
    public func perform(_ request: HTTPExchangeRequest, timeout: Double, maxBodyBytes: Int) async throws(HTTPTransportError) -> HTTPExchangeResponse {
        if Task.isCancelled { throw .cancelled }
        var outgoing = HTTPClientRequest(url: request.url)
        outgoing.method = HTTPMethod(rawValue: request.method)
        for header in request.headers { outgoing.headers.add(name: header.name, value: header.value) }
        if let body = request.body { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
        let nanoseconds = UInt64(min(max(timeout, 0), 86_400) * 1e9)
        let client = httpClient
        let prepared = outgoing
        do {
            return try await withThrowingTaskGroup(of: HTTPExchangeResponse?.self) { group in
                group.addTask {
                    try await Self.exchange(prepared, on: client, deadline: .now() + .nanoseconds(Int64(nanoseconds)), maxBodyBytes: maxBodyBytes)
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

    private static func exchange(_ request: HTTPClientRequest, on client: HTTPClient, deadline: NIODeadline, maxBodyBytes: Int) async throws -> HTTPExchangeResponse {
        let response = try await client.execute(request, deadline: deadline)
        let body = try await response.body.collect(upTo: maxBodyBytes)
        return HTTPExchangeResponse(
            status: Int(response.status.code),
            headers: response.headers.map { ($0.name, $0.value) },
            body: Array(body.readableBytesView),
            url: response.history.last?.request.url ?? request.url)
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
        return .connection(String(describing: error))
    }
}
