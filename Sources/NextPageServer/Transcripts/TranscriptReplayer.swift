#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Jansson
import JSONRPC

/// How `nextpage replay` runs.
public struct ReplayOptions: Sendable {
    /// The nextpage binary to start (normally this very process's executable).
    public var executable: String
    /// Seconds to wait for an expected message, or for the server to end, before calling it missing.
    public var timeout: Double = 10
    /// Rewrite the out records with what the server sent (`--update`).
    public var update = false

    public init(executable: String) {
        self.executable = executable
    }
}

/// What replaying one transcript found.
public struct ReplayResult: Sendable {
    public let path: String
    /// Readable lines, one per difference (with indented details); empty when it passed.
    public var differences: [String] = []
    /// The out records compared.
    public var messages = 0
    /// The last lines the server wrote on stderr (shown with differences).
    public var stderrTail: [String] = []
    /// With `update`: the transcript's new text (nil when the transcript could not be run).
    public var updatedText: String?

    public var passed: Bool { differences.isEmpty }
}

/// Replays transcripts (docs/transcripts.md): a fresh server per transcript (and per
/// `restart`), in the transcript's folder, with its `args`.
///
/// Each `in` record is sent once every `out` record above it has arrived,
/// so a transcript keeps the order its session had: requests written back
/// to back run concurrently, a request written after a reply is sent after
/// it. Out records are matched by id (replies, batch replies by their ids),
/// notifications in order within their stream (method plus the
/// `collection` or progress `token` of their params), so concurrency does
/// not make a replay flaky. Anything the server sends that no out record
/// expects is a difference, as is an exit status other than the expected one.
public enum TranscriptReplayer {
    public static func replay(_ transcript: Transcript, options: ReplayOptions) -> ReplayResult {
        var result = ReplayResult(path: transcript.path)
        let folder = ServerLauncher.directoryName(of: transcript.path)
        guard let temporary = makeTemporaryFolder() else {
            result.differences = ["cannot create a temporary folder: \(String(cString: strerror(errno)))"]
            return result
        }
        defer { removeTree(temporary) }
        let arguments = transcript.arguments.map { $0.replacing("${tmp}", with: temporary) }

        var ignores = Ignores()
        for line in transcript.lines {
            if case .ignore(let pointers, let id) = line.record { ignores.add(pointers, id: id) }
        }

        var updated: [String] = []
        for session in sessions(of: transcript) {
            let run: SessionRun
            do {
                let process = try ServerProcess(
                    executable: options.executable, arguments: arguments, directory: folder, framing: transcript.framing)
                run = SessionRun(process: process, lines: session.lines, framing: transcript.framing, timeout: options.timeout)
            } catch {
                result.differences.append("cannot start the server: \(error.reason)")
                return result
            }
            run.perform(ending: session.ending)
            result.messages += run.expectations.count
            result.differences += run.differences(ignores: ignores, expectedStatus: session.expectedStatus, ending: session.ending)
            if !result.differences.isEmpty && result.stderrTail.isEmpty { result.stderrTail = run.process.stderrLines(15) }
            updated += run.rewritten(ending: session.ending, ignores: ignores)
        }
        if options.update { result.updatedText = updated.joined(separator: "\n") + "\n" }
        return result
    }

    /// A transcript's sessions: split at `restart` records (each ends the session it closes).
    struct Session {
        var lines: [Transcript.Line] = []
        var ending: Transcript.RestartMode?
        var expectedStatus: Int32 = 0
    }

    static func sessions(of transcript: Transcript) -> [Session] {
        var sessions: [Session] = []
        var current = Session()
        for line in transcript.lines {
            current.lines.append(line)
            switch line.record {
            case .exitStatus(let status):
                current.expectedStatus = status
            case .restart(let mode):
                current.ending = mode
                sessions.append(current)
                current = Session()
            default:
                break
            }
        }
        sessions.append(current)
        return sessions
    }

    /// `ignore` records: pointers for every message, and pointers for the reply with one id.
    struct Ignores {
        var everywhere: [[String]] = []
        var byId: [RawJSON: [[String]]] = [:]

        mutating func add(_ pointers: [[String]], id: RawJSON?) {
            if let id { byId[id, default: []] += pointers } else { everywhere += pointers }
        }

        /// The pointers that apply to one message (a batch member counts as a message).
        func pointers(for message: JSON) -> [[String]] {
            guard let id = message["id"], message["method"] == nil else { return everywhere }
            return everywhere + (byId[RawJSON(id)] ?? [])
        }
    }
}
