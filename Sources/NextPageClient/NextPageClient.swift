#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Jansson

/// A nextpage server process, driven over its stdin and stdout.
///
///     let client = try await NextPageClient.spawn()          // $NEXTPAGE, else `nextpage` on PATH
///     for try await item in client.items("demo") { print(item["id"]?.integer ?? 0) }
///     _ = await client.close()
///
/// Calls may come from any task; replies are matched by id. Cancelling the
/// task of a call sends `$/cancelRequest` for it. An error reply throws an
/// `RPCError` (its `code`: `.unknownCollection`, `.upstreamFailed`, ...);
/// trouble with the process throws a `NextPageClientError`. A client
/// dropped without `close()` closes the server's input, which ends it.
///
/// The process ignores SIGPIPE once a client has started a server, so that
/// a write to a server that died fails instead of ending the program.
public final class NextPageClient: Sendable {
    /// The server's `serverInfo.version`.
    public let serverVersion: String
    /// How long a call waits for its reply when it names no timeout (`nil`: as long as it takes).
    public let timeout: Duration?
    let connection: ClientConnection

    private init(connection: ClientConnection, serverVersion: String, timeout: Duration?) {
        self.connection = connection
        self.serverVersion = serverVersion
        self.timeout = timeout
    }

    deinit {
        connection.closeInput()
    }

    /// Starts nextpage and checks, with `initialize` (within `startTimeout`),
    /// that it is nextpage. `executable`: a path, or a name looked up on
    /// `PATH`; default `$NEXTPAGE`, else `nextpage`. Its stderr lines go to
    /// `stderrHandler` (on a thread of their own; default: this process's
    /// stderr); the last ones are kept for `NextPageClientError.serverExited`.
    public static func spawn(
        executable: String? = nil, arguments: [String] = [], environment: [String: String]? = nil,
        currentDirectory: String? = nil, timeout: Duration? = nil, startTimeout: Duration = .seconds(10),
        stderrHandler: (@Sendable (String) -> Void)? = nil
    ) async throws -> NextPageClient {
        let path = executable ?? getenv("NEXTPAGE").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "nextpage"
        let process = try ServerProcess(
            executable: path, arguments: arguments, environment: environment, currentDirectory: currentDirectory,
            stderrHandler: stderrHandler)
        return try await start(ClientConnection(input: process.input, output: process.output, process: process),
                               timeout: timeout, startTimeout: startTimeout)
    }

    /// Drives a nextpage started elsewhere: requests are written to
    /// `input` (its stdin), replies read from `output` (its stdout). The
    /// client owns both descriptors from now on and closes them.
    public static func attach(
        input: Int32, output: Int32, timeout: Duration? = nil, startTimeout: Duration = .seconds(10)
    ) async throws -> NextPageClient {
        try await start(ClientConnection(input: input, output: output, process: nil), timeout: timeout, startTimeout: startTimeout)
    }

    private static func start(_ connection: ClientConnection, timeout: Duration?, startTimeout: Duration) async throws -> NextPageClient {
        do {
            let params = JSON.object(["clientInfo": .object(["name": .string("nextpage-swift")])])
            let result = try await connection.call("initialize", params, timeout: startTimeout)
            guard let info = result["serverInfo"], info["name"]?.string == "nextpage" else {
                throw NextPageClientError.notNextPage("initialize answered \(String(result.compactString.prefix(200)))")
            }
            return NextPageClient(connection: connection, serverVersion: info["version"]?.string ?? "", timeout: timeout)
        } catch {
            connection.process?.kill()
            connection.closeInput()
            await connection.ended()
            if case NextPageClientError.timedOut = error {
                throw NextPageClientError.notNextPage("no reply to initialize within \(startTimeout)")
            }
            throw error
        }
    }

    /// The server's process id, when this client started it.
    public var processIdentifier: pid_t? { connection.process?.pid }

    // MARK: Calls

    /// Sends a request and returns its `result`; an error reply throws its
    /// `RPCError`. After `timeout` (default: the client's) the call is
    /// cancelled on the server and throws `NextPageClientError.timedOut`.
    public func call(_ method: String, _ params: JSON? = nil, timeout: Duration? = nil) async throws -> JSON {
        try await connection.call(method, params, timeout: timeout ?? self.timeout)
    }

    /// Sends a notification (no reply).
    public func notify(_ method: String, _ params: JSON? = nil) throws {
        if let error = connection.notify(method, params) { throw error }
    }

    /// Calls `handler` with the params of each notification `method`
    /// (`"page"`, `"$/progress"`), on the thread that reads replies (it must
    /// return soon and make no calls it waits for). Returns what stops it.
    @discardableResult
    public func on(_ method: String, _ handler: @escaping @Sendable (JSON) -> Void) -> @Sendable () -> Void {
        connection.on(method, handler)
    }

    // MARK: Ending

    /// Sends `shutdown` and `exit`, closes the server's input and waits (at
    /// most `timeout`, then kills it) for it to end. Returns its exit status
    /// (`nil` when a signal ended it, or for an attached server).
    @discardableResult
    public func close(timeout: Duration = .seconds(10)) async -> Int32? {
        if connection.failure == nil {
            if (try? await connection.call("shutdown", nil, timeout: timeout)) != nil {
                connection.notify("exit", nil)
            }
        }
        connection.closeInput()
        guard let process = connection.process else {
            await connection.ended()
            return nil
        }
        // Killed once `timeout` has passed without an end.
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [connection] in await connection.ended() }
            group.addTask {
                do {
                    try await Task.sleep(for: timeout)
                    process.kill()
                } catch {}
            }
            await group.next()
            group.cancelAll()
        }
        return process.exitStatus?.exitStatus
    }
}
