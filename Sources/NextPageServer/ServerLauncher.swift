#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Jansson
import JSONRPC
import Logging
import NextPage

/// Settings of a server process (the `serve` flags of docs/cli.md).
public struct ServerSettings: Sendable {
    /// Config file; `nil` means `./nextpage.json` when it exists, else the demo.
    public var configPath: String?
    public var connection = ConnectionOptions()
    /// A process whose end ends the server (besides the parent).
    public var parentPid: Int32?
    /// How `http` sources reach upstream: the network (default), recorded, or replayed.
    public var upstream: UpstreamMode = .live
    /// Whether `define` may create `command` sources (`--allow-commands`;
    /// default `false`). The config file may always use them.
    public var allowCommands = false
    /// Whether the peer speaks MCP from its first message (`nextpage mcp`).
    public var mcp = false
    /// Whether MCP peers get the `define` tool (`--allow-define`).
    public var allowDefine = false
    /// The state file (`--state`): collections resume from it and save to it.
    public var statePath: String?
    /// Where to record the session (`--transcript`).
    public var transcriptPath: String?
    /// The server's arguments, written at the head of a transcript.
    public var transcriptArguments: [String]?

    public init() {}
}

/// A config that cannot be used: unreadable, not JSON, or invalid.
public struct ConfigError: Error, CustomStringConvertible {
    public let path: String
    /// What is wrong: the first error, for an invalid config.
    public let reason: String
    /// Every error of an invalid config, in the order of the file (empty
    /// when it could not be read or parsed).
    public var errors: [DefinitionError] = []

    public init(path: String, reason: String, errors: [DefinitionError] = []) {
        self.path = path
        self.reason = reason
        self.errors = errors
    }

    public var description: String { "\(path): \(reason)" }

    /// The lines that report it: `PATH: ERROR` for each error, then
    /// `PATH: N errors` (`PATH: REASON` alone when it is not about the definitions).
    public var lines: [String] {
        guard !errors.isEmpty else { return [description] }
        return errors.map { "\(path): \($0)" } + ["\(path): \(errors.count) error\(errors.count == 1 ? "" : "s")"]
    }
}

/// Loads config files and runs the server on stdin/stdout.
public enum ServerLauncher {
    public static let defaultConfigPath = "nextpage.json"

    /// The config file a server reads: `configPath`, else `./nextpage.json`
    /// when it exists; nil for the built-in demo.
    public static func configFile(_ configPath: String?) -> String? {
        if let configPath { return configPath }
        return access(defaultConfigPath, F_OK) == 0 ? defaultConfigPath : nil
    }

    /// The collections to serve: those of the config file, or the built-in
    /// demo when no path is given and `./nextpage.json` does not exist.
    /// Under `--replay-upstream` (`upstream`), an unset `${env:NAME}` that
    /// only credentials use does not keep a collection from paging (see
    /// `replayWarnings`).
    public static func collections(
        configPath: String?, upstream: UpstreamMode = .live
    ) throws -> (collections: [(name: String, definition: CollectionDefinition)], validator: DefinitionValidator, source: String) {
        var validator = DefinitionValidator()
        if case .replay = upstream { validator.replaysUpstream = true }
        guard let path = configFile(configPath) else {
            return ([(Demo.name, Demo.definition)], validator, "built-in demo")
        }
        validator.baseDirectory = directoryName(of: path)
        return (try loadConfig(path, validator: validator), validator, path)
    }

    /// One warning per `${env:NAME}` that is not set but that a replay does
    /// without (`CollectionDefinition.unsetForReplay`), naming the first
    /// field that uses it.
    public static func replayWarnings(_ collections: [(name: String, definition: CollectionDefinition)]) -> [String] {
        var order: [String] = []
        var fields: [String: [String]] = [:]
        for (_, definition) in collections {
            for variable in definition.unsetForReplay {
                if fields[variable.name] == nil { order.append(variable.name) }
                fields[variable.name, default: []].append(variable.field)
            }
        }
        return order.map { name in
            let uses = fields[name]!
            let more = uses.count > 1 ? " and \(uses.count - 1) more field\(uses.count == 2 ? "" : "s")" : ""
            return "environment variable \(name) is not set (for ${env:\(name)} in \(uses[0])\(more)): "
                + "replaying without it, as a replay sends no credentials"
        }
    }

    /// Reads, parses and validates one config file.
    public static func loadConfig(_ path: String, validator: DefinitionValidator) throws -> [(name: String, definition: CollectionDefinition)] {
        let bytes: [UInt8]
        do {
            bytes = try readFile(path, limit: maxConfigBytes)
        } catch {
            throw ConfigError(path: path, reason: "cannot read: \(error.description)")
        }
        let json: JSON
        do {
            json = try JSON.parse(bytes)
        } catch {
            throw ConfigError(path: path, reason: "line \(error.line), column \(error.column): \(error.text)")
        }
        let checked = validator.checkConfig(json)
        if let first = checked.errors.first {
            throw ConfigError(path: path, reason: first.description, errors: checked.errors)
        }
        return checked.collections
    }

    /// Serves JSON-RPC on stdin/stdout until end of input, `exit`, a signal
    /// or the parent's death; returns the process exit status.
    public static func serve(settings: ServerSettings, logger: Logger) async throws -> Int32 {
        // A stop signal from now on is counted until the Dispatch sources below take over.
        StopSignals.catchEarly()
        let loaded = try collections(configPath: settings.configPath, upstream: settings.upstream)
        let stateStore = try settings.statePath.map { path throws(StateFileError) in
            try StateStore(path: path, commit: .immediately, logger: logger)
        }
        let recorder = try settings.transcriptPath.map { path throws(TranscriptError) in
            try TranscriptRecorder(
                path: path, arguments: settings.transcriptArguments, collections: loaded.collections, validator: loaded.validator)
        }
        logger.info("serving", metadata: ["config": "\(loaded.source)", "collections": "\(loaded.collections.map(\.name).joined(separator: ","))"])
        for (name, definition) in loaded.collections {
            if let reason = definition.unavailable {
                logger.warning("collection cannot fetch", metadata: ["collection": "\(name)", "reason": "\(reason)"])
            }
        }
        for warning in replayWarnings(loaded.collections) { logger.warning("\(warning)") }
        signal(SIGPIPE, SIG_IGN)
        // A file size limit (RLIMIT_FSIZE) makes a state file write fail
        // with EFBIG, which is reported, instead of killing the server.
        signal(SIGXFSZ, SIG_IGN)
        // Protocol output goes to a private duplicate of fd 1; fd 1 itself now
        // points at stderr so a stray print cannot corrupt the stream.
        let protocolFD = dup(1)
        guard protocolFD >= 0 else { throw ConfigError(path: "stdout", reason: "cannot duplicate fd 1") }
        _ = fcntl(protocolFD, F_SETFD, FD_CLOEXEC)
        dup2(2, 1)

        let writer = OutputWriter(fd: protocolFD) {
            // The reader of stdout is gone: nobody can receive anything more.
            _exit(141)
        }
        // The same validator checks `define`, which may run commands only when allowed.
        var defineValidator = loaded.validator
        defineValidator.allowsCommands = settings.allowCommands
        let service = NextPageService(
            collections: loaded.collections, validator: defineValidator, logger: logger, upstream: settings.upstream,
            stateStore: stateStore)
        await service.restoreSavedStates()
        // MCP peers reach the same service through its adapter; other peers pass through it unchanged.
        let handler = MCPAdapter(service: service, mcp: settings.mcp, allowDefine: settings.allowDefine, logger: logger)
        let connection = Connection(input: 0, writer: writer, options: settings.connection, handler: handler, tap: recorder)

        /// `count` stop signals came: each counts (a second one stops the wait for output).
        @Sendable func stop(signals count: Int, _ message: Logger.Message, _ metadata: Logger.Metadata = [:]) {
            logger.info(message, metadata: metadata)
            for _ in 0..<min(max(count, 1), 2) { connection.stop() }
        }
        var sources: [any DispatchSourceProtocol] = []
        // SIGHUP (the terminal or session that started the server went away) ends it the same way.
        for signalNumber in StopSignals.numbers {
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler {
                // Signals that came together arrive as one event.
                stop(signals: Int(min(source.data, 2)), "signal received, draining", ["signal": "\(signalNumber)"])
            }
            source.resume()
            sources.append(source)
        }
        let parent = getppid()
        let watchedPid = settings.parentPid
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + .milliseconds(500), repeating: .milliseconds(500))
        timer.setEventHandler {
            Self.returnFreedMemory()
            let parentGone = getppid() != parent
            let watchedGone = watchedPid.map { kill($0, 0) != 0 && errno == ESRCH } ?? false
            if parentGone || watchedGone {
                logger.info("parent process gone, exiting")
                connection.stop()
            }
        }
        timer.resume()
        sources.append(timer)
        // Nothing is read before the signal sources are registered: a
        // client that signals once it has a reply is always heard.
        let signals = await StopSignals.armed()
        if !signals.registered { logger.warning("signal handlers not confirmed registered; serving anyway") }
        if signals.earlier > 0 { stop(signals: signals.earlier, "signal received before serving, draining") }

        let ending = await connection.run()
        LogForwarding.shared.stop()
        for source in sources { source.cancel() }
        // The shared HTTP client of `http` sources, if one was started.
        await HTTPNetworkTransport.shared.shutdown()
        // Commands of requests cancelled by the drain run in their own sessions.
        CommandClient.killRunningCommands()
        logger.debug("stopped", metadata: ["reason": "\(ending)"])
        recorder?.finish(exitStatus: ending.exitCode)
        return ending.exitCode
    }

    /// Gives the memory freed since the last call back to the system (glibc
    /// keeps freed memory in its arenas: in a long session, RSS would follow
    /// the peaks and the scattering of past allocations, not what is in use).
    /// Called twice a second by the server's timer.
    static func returnFreedMemory() {
        _ = mallocTrim?(0)
    }

    /// glibc's `malloc_trim` (declared in malloc.h, which Glibc does not import); `nil` elsewhere.
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
    }()

    /// The folder part of a path (`.` when there is none).
    public static func directoryName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    struct ReadError: Error {
        let code: Int32
        var reason: String?

        /// What went wrong, for an error message.
        var description: String { reason ?? String(cString: strerror(code)) }
    }

    /// The most bytes read from a config or state file.
    public static let maxConfigBytes = 64 << 20
    /// The most bytes read from a transcript.
    public static let maxTranscriptBytes = 1 << 30

    /// Reads a whole transcript.
    public static func contents(of path: String) throws(ConfigError) -> [UInt8] {
        do {
            return try readFile(path, limit: maxTranscriptBytes)
        } catch {
            throw ConfigError(path: path, reason: "cannot read: \(error.description)")
        }
    }

    /// Seconds a config FIFO may wait for its writer's first bytes.
    static let fifoWriterWait = 10.0

    /// Reads a whole file of at most `limit` bytes; with `regularOnly`, a
    /// FIFO or device is refused. A FIFO or pipe is read until its writer
    /// is done (`--config <(...)`); one nothing is written to for
    /// `fifoWriterWait` seconds is an error. Nothing is read without end:
    /// `/dev/zero` fails at the limit.
    static func readFile(_ path: String, limit: Int, regularOnly: Bool = false) throws(ReadError) -> [UInt8] {
        // O_NONBLOCK: a FIFO is looked at before anything waits for its writer.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw ReadError(code: errno) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw ReadError(code: errno) }
        let kind = info.st_mode & S_IFMT
        if kind == S_IFDIR { throw ReadError(code: EISDIR) }
        if regularOnly && kind != S_IFREG { throw ReadError(code: EINVAL, reason: "not a regular file") }
        let tooLarge = ReadError(code: EFBIG, reason: "larger than \(limit) bytes")
        if kind == S_IFREG && Int(info.st_size) > limit { throw tooLarge }
        if kind == S_IFIFO {
            // A FIFO reads as ended until its writer comes: wait for it to
            // write (or come and go), a while, not forever.
            var waiter = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            var ready: Int32
            repeat { ready = poll(&waiter, 1, Int32(fifoWriterWait * 1000)) } while ready < 0 && errno == EINTR
            if ready == 0 { throw ReadError(code: ETIMEDOUT, reason: "a FIFO nothing was written to within \(Int(fifoWriterWait)) s") }
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ReadError(code: errno)
            }
            if n == 0 { return bytes }
            guard n <= limit - bytes.count else { throw tooLarge }
            bytes.append(contentsOf: chunk[0..<n])
        }
    }
}
