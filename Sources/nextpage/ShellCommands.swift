import ArgumentParser
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Jansson
import JSONRPC
import Logging
import NextPage
import NextPageServer

/// Exit statuses of the shell commands (documented in the README).
enum ShellExit {
    /// `next`: the collection was already at its end; nothing was loaded.
    static let atEnd: Int32 = 1
    /// The config file cannot be used, or the collection is not defined in
    /// it, or its definition cannot walk what the source sent (`auto`).
    static let config: Int32 = 2
    /// The state file cannot be read, is not a state file, or cannot be written.
    static let state: Int32 = 3
    /// The source failed, or sent a page that could not be understood.
    static let upstream: Int32 = 4
    /// stdout cannot be written (a full disk, a closed descriptor), or
    /// anything else went wrong: never the "at its end" status.
    static let failure: Int32 = 5
    /// stdout was closed by its reader (as a process killed by SIGPIPE).
    static let brokenPipe: Int32 = 141
}

/// Options every shell command shares with `serve`.
struct SessionOptions: ParsableArguments, UpstreamFlags {
    @Option(help: "Config file defining the collections (default: ./nextpage.json when it exists, else the built-in demo).")
    var config: String?

    @Option(help: ArgumentHelp(
        "Keep each collection's cursor and counters in this file, saved atomically after every page; the next command resumes from it.",
        valueName: "F"))
    var state: String?

    @Option(help: ArgumentHelp("Answer http sources from the recordings in DIR/<collection>.jsonl instead of the network.", valueName: "DIR"))
    var replayUpstream: String?

    @Option(help: ArgumentHelp(
        "Append every http exchange to DIR/<collection>.jsonl (secrets redacted), for --replay-upstream DIR later; DIR is created if missing.",
        valueName: "DIR"))
    var recordUpstream: String?

    @Option(help: "Log level on stderr: trace, debug, info, notice, warning (warn), error (err), critical.")
    var logLevel: Logger.Level = .warning

    func validate() throws {
        try validateUpstream()
    }

    /// Opens the collections and the state file; exits 2 or 3 with a message
    /// when they cannot be used. Without `prefetch`, collections fetch only
    /// the pages asked for (see `ShellSession`).
    func openSession(prefetch: Bool = true) async throws -> ShellSession {
        signal(SIGPIPE, SIG_IGN)
        // A file size limit makes a state file write fail (EFBIG), reported, not fatal.
        signal(SIGXFSZ, SIG_IGN)
        let logger = makeLogger(level: logLevel)
        do {
            return try await ShellSession(
                configPath: config, statePath: state,
                upstream: upstream, logger: logger, prefetch: prefetch)
        } catch let error as ConfigError {
            for line in error.lines { printError("nextpage: config \(line)") }
            throw ExitCode(ShellExit.config)
        } catch let error as StateFileError {
            printError("nextpage: \(error)")
            throw ExitCode(ShellExit.state)
        }
    }
}

struct Next: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "next",
        abstract: "Print the next page of a collection as one line of JSON (a loadNext).",
        discussion: """
            With --state F the cursor is kept in F, so each run prints the page after the last one:
              while nextpage next demo --state demo.state > page.json; do jq -c '.items[]' page.json; done
            An incremental collection at its end starts a new walk, sending the largest value seen.
            Exit status: 0 a page was loaded; 1 the collection was already at its end (the page printed \
            has no items; for an incremental collection, the new walk found nothing new); 2 bad config or \
            unknown collection; 3 state file unusable; 4 the source failed; 5 stdout cannot be written, \
            or another error.
            """)

    @Argument(help: "The collection.")
    var collection: String

    @OptionGroup var options: SessionOptions

    func run() async throws {
        // One page and exit: a page fetched ahead would be fetched for nobody.
        let session = try await options.openSession(prefetch: false)
        let params = RawJSON.object(["collection": .string(collection)])
        let before = try (await call(session, "status", params)).parsed()
        let atEnd = before["hasNext"]?.bool == false
        let newWalk = atEnd && before["incremental"] != nil
        // An incremental collection at its end: the next walk asks for what changed since.
        if newWalk { _ = try await call(session, "reset", params) }
        let page = try await committing(session) { try await call(session, "loadNext", params) }
        writeOut(page.bytes + [UInt8(ascii: "\n")])
        try commit(session)
        // A new walk that ends at once with nothing is the end too, so a `while nextpage next` loop stops.
        let printed = try? page.parsed()
        let nothingNew = (printed?["items"]?.count ?? 0) == 0 && printed?["hasNext"]?.bool == false
        if atEnd && (!newWalk || nothingNew) {
            throw ExitCode(ShellExit.atEnd)
        }
    }
}

struct All: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "all",
        abstract: "Print every item of a collection, one line of compact JSON each, as the source wrote it (a loadAll).",
        discussion: """
            Continues from where the collection stands (with --state, from the saved cursor) to the end of \
            the source or a limit; an incremental collection at its end starts a new walk, which prints \
            only what changed since the last one. A progress line (items, pages, rate) is shown on stderr when stderr is a \
            terminal. Exit status: 0 the end or a limit was reached; 2 bad config or unknown collection; \
            3 state file unusable; 4 the source failed (the items printed so far stay printed and saved); \
            5 stdout cannot be written, or another error.
            """)

    @Argument(help: "The collection.")
    var collection: String

    @Option(help: ArgumentHelp(
        "Print N items. With --state, print up to the end of the page that reaches N, so that the next run starts at the next page and no item is skipped.",
        valueName: "N"))
    var maxItems: Int?

    @Option(help: "Stop after N pages.")
    var maxPages: Int?

    @OptionGroup var options: SessionOptions

    func validate() throws {
        if let maxItems, maxItems < 1 { throw ValidationError("--max-items must be at least 1") }
        if let maxPages, maxPages < 1 { throw ValidationError("--max-pages must be at least 1") }
    }

    func run() async throws {
        let session = try await options.openSession()
        let progress = isatty(2) == 1 ? ProgressLine(collection: collection) : nil
        let params = RawJSON.object([
            "collection": .string(collection),
            "maxItems": maxItems.map(RawJSON.integer),
            "maxPages": maxPages.map(RawJSON.integer),
        ])
        // An incremental collection at its end: the next walk asks for what changed since.
        let collectionParams = RawJSON.object(["collection": .string(collection)])
        let before = try (await call(session, "status", collectionParams)).parsed()
        if before["hasNext"]?.bool == false, before["incremental"] != nil {
            _ = try await call(session, "reset", collectionParams)
        }
        // Without a state file nothing of the last page is kept for later:
        // it can stop at the Nth item itself.
        let budget = ItemBudget(options.state == nil ? maxItems : nil)
        // The pages as they land (not read back from `page` notifications).
        session.pageTap.take { _, page in
            let (out, count) = Self.itemLines(page.items, limit: budget.left)
            budget.left = budget.left.map { $0 - count }
            writeOut(out)
            do {
                try session.commit()
            } catch {
                progress?.finish()
                printError("nextpage: \(error)")
                Glibc.exit(ShellExit.state)
            }
            progress?.add(items: count)
        }
        do {
            _ = try await committing(session) { try await call(session, "loadAll", params) }
        } catch {
            progress?.finish()
            throw error
        }
        progress?.finish()
        try commit(session)
    }

    /// At most `limit` of a page's items, one per line, each as the source
    /// sent it (compacted), and how many there are: the page's array, `[a,b,c]`,
    /// copied once with the commas between its items turned into line ends.
    static func itemLines(_ items: PageItems, limit: Int?) -> (lines: [UInt8], count: Int) {
        let count = min(items.count, limit ?? items.count)
        guard count > 0 else { return ([], 0) }
        // From the first item to the byte after the last (a comma or the closing bracket).
        let end = items.span(count - 1).upperBound
        var out = Array(items.array[1...end])
        for index in 1..<count {
            out[items.span(index).lowerBound - 2] = UInt8(ascii: "\n")
        }
        out[out.count - 1] = UInt8(ascii: "\n")
        return (out, count)
    }
}

struct Reset: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reset",
        abstract: "Reset a collection (with --state, its saved cursor too) and print its fresh State.",
        discussion: """
            An incremental collection keeps the largest value seen (the next walk still asks only for what \
            changed since) unless --forget-incremental is given.
            """)

    @Argument(help: "The collection.")
    var collection: String

    @Flag(help: "Forget an incremental collection's value too: the next walk is a first one again.")
    var forgetIncremental = false

    @OptionGroup var options: SessionOptions

    func run() async throws {
        let session = try await options.openSession()
        let state = try await call(session, "reset", RawJSON.object([
            "collection": .string(collection), "forgetIncremental": forgetIncremental ? .true : nil,
        ]))
        writeOut(state.bytes + [UInt8(ascii: "\n")])
        try commit(session)
    }
}

/// Calls a method of the session; an error is printed on stderr and ends the command with its exit status.
private func call(
    _ session: ShellSession, _ method: String, _ params: RawJSON,
    notify: @escaping @Sendable (String, RawJSON?) -> Void = { _, _ in }
) async throws -> RawJSON {
    do {
        return try await session.call(method, params, notify: notify)
    } catch {
        let data = try? error.data?.parsed()
        switch error.code {
        case -32001:
            let known = data?["known"]?.elements.compactMap(\.string) ?? []
            let name = data?["collection"]?.string ?? "?"
            printError("nextpage: unknown collection '\(name)' (defined: \(known.isEmpty ? "none" : known.joined(separator: ", ")))")
            throw ExitCode(ShellExit.config)
        case -32002, -32003:
            let name = data?["collection"]?.string ?? "?"
            printError("nextpage: collection '\(name)': \(error.message)")
            throw ExitCode(ShellExit.upstream)
        case -32004:
            // The definition cannot walk what the source sent (an `auto` first page that shows no way of paging).
            printError("nextpage: \(error.message)")
            throw ExitCode(ShellExit.config)
        default:
            printError("nextpage: \(error.message) (JSON-RPC error \(error.code))")
            throw ExitCode(ShellExit.failure)
        }
    }
}

/// Runs `body`; when it fails, first commits what the failure left (the
/// cursor where it was, `lastError` saying why), so the next run retries
/// the same page and `status` tells why.
private func committing(_ session: ShellSession, _ body: () async throws -> RawJSON) async throws -> RawJSON {
    do {
        return try await body()
    } catch {
        try? session.commit()
        throw error
    }
}

/// Commits the state file after output; exits 3 when it cannot be saved.
private func commit(_ session: ShellSession) throws {
    do {
        try session.commit()
    } catch {
        printError("nextpage: \(error)")
        throw ExitCode(ShellExit.state)
    }
}

/// Writes all of `bytes` to stdout with as few `write` calls as it takes;
/// ends the process quietly when the reader of stdout is gone, and with a
/// message and `ShellExit.failure` when stdout cannot be written (what was
/// not printed is not saved in the state file either).
func writeOut(_ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes { write(1, $0.baseAddress! + offset, bytes.count - offset) }
        if n < 0 {
            if errno == EINTR { continue }
            if errno == EPIPE { exit(ShellExit.brokenPipe) }
            printError("nextpage: cannot write to stdout: \(String(cString: strerror(errno)))")
            exit(ShellExit.failure)
        }
        offset += n
    }
}

/// The items `nextpage all` may still print (`nil`: no limit of its own).
/// Touched once per page, in order, from the one task that prints.
private final class ItemBudget: @unchecked Sendable {
    var left: Int?

    init(_ left: Int?) {
        self.left = left
    }
}

/// The progress line of `nextpage all` on a terminal: items, pages, rate.
final class ProgressLine: @unchecked Sendable {
    private let collection: String
    private let started = monotonicSeconds()
    private var items = 0
    private var pages = 0
    private var shown = false

    init(collection: String) {
        self.collection = collection
    }

    /// Called once per page, in order, from the one task that prints.
    func add(items count: Int) {
        items += count
        pages += 1
        let elapsed = max(monotonicSeconds() - started, 0.001)
        let rate = Int((Double(items) / elapsed).rounded())
        printError("\r\u{1B}[K\(collection): \(items) items, \(pages) pages, \(rate) items/s", newline: false)
        shown = true
    }

    /// Ends the line.
    func finish() {
        if shown { printError("") }
        shown = false
    }
}

func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
