import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import JSONRPC
import Logging
import NextPageSchemas
import NextPageServer

@main
struct Nextpage: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nextpage",
        abstract: "Pages through paginated sources for other programs, over JSON-RPC 2.0 on stdin/stdout.",
        usage: """
            nextpage [serve] [--config F] [--state F] [--transcript F]
                           [--record-upstream DIR | --replay-upstream DIR]
                           [--framing auto|ndjson|lsp] [--max-message-bytes N]
                           [--drain-timeout S] [--parent-pid PID] [--sequential]
                           [--allow-commands] [--allow-define] [--log-level L]
            nextpage mcp [serve options]
            nextpage next COLLECTION [--config F] [--state F]
            nextpage all COLLECTION [--max-items N] [--max-pages N] [--config F] [--state F]
            nextpage reset COLLECTION [--config F] [--state F]
            nextpage replay [--update] [--timeout S] TRANSCRIPT...
            nextpage check-config F
            nextpage schema openrpc|config|transcript
            """,
        discussion: """
            nextpage is a long-running process: spawn it, send JSON-RPC requests \
            (newline-delimited JSON or LSP Content-Length framing) on its stdin and \
            read replies on its stdout. Logs go to stderr only. `nextpage serve --help` \
            explains each server option.

            Example, with no nextpage.json (the built-in "demo" collection is served): \
            put this request in requests.jsonl, one request per line,
            {"jsonrpc":"2.0","id":1,"method":"loadNext","params":{"collection":"demo"}}
            then run `nextpage --sequential < requests.jsonl`, or type it into `nextpage` itself. \
            --sequential answers each request before reading the next, so a file of requests \
            gets the replies an interactive session gets, in order; without it requests run \
            concurrently (a `status` right behind a `loadNext` sees it loading).

            Methods: load, loadNext, reset, status, collections, items, define, loadAll,
            rpc.discover, initialize, initialized, shutdown, exit, $/cancelRequest.

            Agents and editors that host them: `nextpage mcp` is an MCP server (each method a tool, \
            each collection a resource); see `nextpage mcp --help`.

            From the shell: `nextpage next demo --state s.json` prints one page, `nextpage all demo` \
            prints every item; `nextpage replay T.transcript.jsonl` checks a recorded session.
            """,
        version: NextPageService.version,
        subcommands: [Serve.self, MCP.self, Next.self, All.self, Reset.self, Replay.self, CheckConfig.self, Schema.self],
        defaultSubcommand: Serve.self
    )

    /// Parses and runs the command. A bad argument is reported as every
    /// other error is, on a line starting `nextpage: ` (then the usage),
    /// with status 64.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            // --help, --version and the commands' own statuses.
            if error is ExitCode || code == .success { exit(withError: error) }
            var message = fullMessage(for: error)
            if message.hasPrefix("Error: ") { message = String(message.dropFirst("Error: ".count)) }
            printError("nextpage: " + message)
            // Anything else that went wrong is status 5, never 1 ("at its end" for `next`).
            Glibc.exit(code == .validationFailure ? code.rawValue : ShellExit.failure)
        }
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve JSON-RPC on stdin/stdout (the default command).",
        discussion: """
            Answers nextpage's own methods, and MCP (the Model Context Protocol) to a peer \
            that starts with MCP's initialize (a protocolVersion) or sends MCP's per-request \
            _meta envelope; `nextpage mcp` serves MCP peers from the first message.
            """)

    @OptionGroup var options: ServeOptions

    func run() async throws {
        try await options.serve(mcp: false)
    }
}

struct MCP: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mcp",
        abstract: "Serve the Model Context Protocol on stdin/stdout, for agents and the editors that host them.",
        discussion: """
            An MCP server over stdio (newline-delimited JSON): each collection method is a tool \
            (loadNext, load, reset, status, collections, items, loadAll, and define with \
            --allow-define), each collection a resource (nextpage://collections/NAME). MCP \
            revisions 2024-11-05 to 2025-11-25 (initialize handshake) and 2026-07-28 \
            (server/discover, per-request _meta) are served; nextpage's own methods stay available.

            An MCP host's entry: {"mcpServers": {"nextpage": {"command": "nextpage", \
            "args": ["mcp", "--config", "/path/to/nextpage.json"]}}}
            """)

    @OptionGroup var options: ServeOptions

    func run() async throws {
        try await options.serve(mcp: true)
    }
}

/// The options of `serve` and `mcp`.
struct ServeOptions: ParsableArguments, UpstreamFlags {
    @Option(help: "Config file defining the collections (default: ./nextpage.json when it exists, else the built-in demo).")
    var config: String?

    @Option(help: "Message framing: auto (detected from the first bytes), ndjson or lsp. `mcp` always uses ndjson.")
    var framing: FramingMode = .auto

    @Option(help: "Largest message accepted, in bytes; larger ones get an error reply and are skipped.")
    var maxMessageBytes: Int = 64 << 20

    @Option(help: "Seconds to let requests in flight finish at end of input or on SIGTERM.")
    var drainTimeout: Double = 10

    @Option(help: "Exit when this process ends (the parent process is always watched).")
    var parentPid: Int32?

    @Flag(help: ArgumentHelp(
        "Answer each request, and send its notifications, before reading the next message (a batch's members one after another), so that a file of requests (`nextpage --sequential < requests.jsonl`) gets the replies an interactive session gets, in order. Without it requests run concurrently. $/cancelRequest then cancels nothing: the request it names has been answered before it is read."))
    var sequential = false

    @Option(help: "Log level on stderr: trace, debug, info, notice, warning (warn), error (err), critical.")
    var logLevel: Logger.Level = .info

    @Option(help: ArgumentHelp(
        "Append every http exchange to DIR/<collection>.jsonl (secrets redacted); DIR is created if missing.",
        valueName: "DIR"))
    var recordUpstream: String?

    @Option(help: ArgumentHelp(
        "Answer http sources from the recordings in DIR/<collection>.jsonl instead of the network.",
        valueName: "DIR"))
    var replayUpstream: String?

    @Flag(help: ArgumentHelp(
        "Let the define method create command sources, which run programs on this machine (the config file may always use them)."))
    var allowCommands = false

    @Flag(help: ArgumentHelp(
        "Offer MCP peers the define tool, with which an agent can add collections (nextpage's own define method is always there)."))
    var allowDefine = false

    @Option(help: ArgumentHelp(
        "Keep each collection's cursor and counters in this file, saved atomically after every page; a restarted server resumes from it.",
        valueName: "F"))
    var state: String?

    @Option(help: ArgumentHelp(
        "Record every message in and out to this file (NDJSON, secrets redacted); `nextpage replay` checks it later.",
        valueName: "F"))
    var transcript: String?

    func validate() throws {
        guard maxMessageBytes > 0 else { throw ValidationError("--max-message-bytes must be positive") }
        guard !drainTimeout.isNaN else { throw ValidationError("--drain-timeout must be a number of seconds") }
        guard drainTimeout >= 0 else { throw ValidationError("--drain-timeout must not be negative") }
        try validateUpstream()
    }

    /// Runs the server; `mcp`: the peer speaks MCP from its first message.
    func serve(mcp: Bool) async throws {
        let logger = makeLogger(level: logLevel)
        var settings = ServerSettings()
        settings.configPath = config
        settings.parentPid = parentPid
        settings.upstream = upstream
        settings.allowCommands = allowCommands
        settings.allowDefine = allowDefine
        settings.mcp = mcp
        // MCP's stdio transport is newline-delimited JSON.
        settings.connection.framing = mcp ? .ndjson : framing
        settings.connection.maxMessageBytes = maxMessageBytes
        settings.connection.drainTimeout = drainTimeout
        settings.connection.sequential = sequential
        settings.statePath = state
        settings.transcriptPath = transcript
        settings.transcriptArguments = transcript.map(argumentsForTranscript)
        let status: Int32
        // The log lines of the last moments go out before the process ends.
        defer { StderrLogHandler.LineSink.standardError.flush() }
        do {
            status = try await ServerLauncher.serve(settings: settings, logger: logger)
        } catch let error as ConfigError {
            for line in error.lines { printError("nextpage: config \(line)") }
            throw ExitCode(ShellExit.config)
        } catch let error as TranscriptError {
            printError("nextpage: transcript \(error)")
            throw ExitCode(ShellExit.config)
        } catch let error as StateFileError {
            printError("nextpage: \(error)")
            throw ExitCode(ShellExit.state)
        }
        throw ExitCode(status)
    }

    /// The arguments a replay of this session needs (see `ReplayArguments`).
    func argumentsForTranscript(_ transcriptPath: String) -> [String] {
        let implicitConfig = config == nil ? ServerLauncher.configFile(nil) : nil
        // Both folders as the kernel names them (links resolved), so that
        // the path from one to the other holds.
        let folder = ServerLauncher.directoryName(of: transcriptPath)
        return ReplayArguments.forReplay(
            Array(CommandLine.arguments.dropFirst()), transcriptFolder: realPath(folder) ?? folder,
            workingDirectory: currentDirectory(), implicitConfig: implicitConfig)
    }
}

struct CheckConfig: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Validate a config file, reporting every error. Exit status 2 when invalid.",
        discussion: """
            Each error is one line on stderr, `nextpage: config F: FIELD: expected ..., got VALUE` \
            (secrets shown as [redacted]), with `did you mean "NAME"?` for a misspelled field or \
            value; a last line counts them (`nextpage: config F: 3 errors`). A valid file prints \
            its collections on stdout. Exit status: 0 valid; 2 invalid, unreadable or not JSON.
            """)

    @Argument(help: "The config file.")
    var file: String

    func run() throws {
        do {
            let collections = try ServerLauncher.loadConfig(
                file, validator: DefinitionValidator(baseDirectory: ServerLauncher.directoryName(of: file)))
            print("\(file): ok, \(collections.count) collection(s): \(collections.map(\.name).joined(separator: ", "))")
            for (name, definition) in collections where definition.paging.strategy.implementation.settlesFromFirstPage {
                print("\(name): paging.strategy \(definition.paging.strategy.rawValue): decided from the first page of each walk (status shows what was picked)")
            }
            for (name, definition) in collections {
                if let reason = definition.unavailable {
                    printError("nextpage: note: collection '\(name)' cannot fetch here: \(reason)")
                }
            }
        } catch let error as ConfigError {
            for line in error.lines { printError("nextpage: config \(line)") }
            throw ExitCode(ShellExit.config)
        }
    }
}

struct Schema: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "schema", abstract: "Print one of nextpage's JSON schemas.")

    enum Name: String, ExpressibleByArgument, CaseIterable { case openrpc, config, transcript }

    @Argument(help: "openrpc, config or transcript.")
    var name: Name

    func run() throws {
        switch name {
        case .openrpc: print(EmbeddedSchemas.openrpc, terminator: "")
        case .config: print(EmbeddedSchemas.config, terminator: "")
        case .transcript: print(EmbeddedSchemas.transcript, terminator: "")
        }
    }
}

extension FramingMode: ExpressibleByArgument {}

extension Logger.Level: @retroactive ExpressibleByArgument {
    /// A level by its name, in any case; `warn` and `err` (the names of
    /// other tools' log levels) are `warning` and `error`.
    public init?(argument: String) {
        let name = argument.lowercased()
        switch name {
        case "warn": self = .warning
        case "err": self = .error
        default: self.init(rawValue: name)
        }
    }
}

func makeLogger(level: Logger.Level) -> Logger {
    LoggingSystem.bootstrap { label in StderrLogHandler(label: label, level: level) }
    return Logger(label: "nextpage")
}

func isDirectory(_ path: String) -> Bool {
    var info = stat()
    return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
}

/// `mkdir -p`: true when `path` is a directory afterwards.
func makeDirectories(_ path: String) -> Bool {
    if isDirectory(path) { return true }
    let parent = ServerLauncher.directoryName(of: path)
    if parent != path && parent != "." && parent != "/" && !makeDirectories(parent) { return false }
    return mkdir(path, 0o755) == 0 || isDirectory(path)
}

/// `path` absolute, with links resolved; nil when it does not exist.
func realPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
}

/// The working directory, absolute ("/" when it cannot be read).
func currentDirectory() -> String {
    guard let path = getcwd(nil, 0) else { return "/" }
    defer { free(path) }
    return String(cString: path)
}

func printError(_ message: String, newline: Bool = true) {
    var line = newline ? message + "\n" : message
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}
