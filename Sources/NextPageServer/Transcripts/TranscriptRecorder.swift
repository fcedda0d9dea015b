#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Jansson
import JSONRPC

/// Records a live session as a transcript (`serve --transcript F`, docs/transcripts.md).
///
/// Writes, one JSON record per line: `{"args": [...]}` (the server's
/// arguments, when known), `{"framing": "lsp"}` once LSP framing is
/// detected, `{"dir": "in", "msg": ...}` for each message read (as parsed;
/// `{"dir": "in", "text": "..."}` for a body that is not JSON, `"hex"` for
/// one that is not UTF-8 either, `{"dir": "in", "size": N}` for one over
/// `--max-message-bytes`, which the server skipped unread),
/// `{"dir": "out", "msg": ...}` for each message written, and
/// `{"exitStatus": N}` when the server ends with a status other than 0.
/// The defaults (ndjson, 0) are not written, so an ordinary session is its
/// `args` record and one record per message. Each record is written with
/// one `write`, so a process killed mid-session leaves whole lines.
/// Secrets are redacted (`TranscriptRedactor`). See
/// `Schemas/transcript.schema.json` for every record kind.
public final class TranscriptRecorder: MessageTap, @unchecked Sendable {
    public let path: String
    private let fd: Int32
    private let lock = Condition()
    // Guarded by `lock`.
    private var redactor: TranscriptRedactor
    private var failed = false

    /// Creates (or truncates) the transcript at `path` and writes its
    /// header. `arguments`: the server's arguments, recorded so that a
    /// replay can start the same server (`ReplayArguments.forReplay`: paths
    /// relative to the transcript's folder, where a replay starts it).
    public init(
        path: String, arguments: [String]?, collections: [(name: String, definition: CollectionDefinition)],
        validator: DefinitionValidator
    ) throws(TranscriptError) {
        self.path = path
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw TranscriptError(path: path, reason: "cannot create it: \(String(cString: strerror(errno)))") }
        redactor = TranscriptRedactor(collections: collections, validator: validator)
        if let arguments {
            lock.locked { writeRecord(.object(["args": .array(arguments.map(RawJSON.string))])) }
        }
    }

    deinit { close(fd) }

    public func framing(_ framing: Framing) {
        guard framing != .ndjson else { return }
        lock.locked { writeRecord(.object(["framing": .string(framing.rawValue)])) }
    }

    public func incoming(_ body: [UInt8]) {
        lock.locked {
            if let json = try? JSON.parse(body) {
                let redacted = redactor.redactIncoming(json)
                writeRecord(.object(["dir": .string("in"), "msg": RawJSON(trusted: redactor.scrub(redacted.dump()))]))
            } else if let text = String(validating: body, as: UTF8.self) {
                writeRecord(.object(["dir": .string("in"), "text": .string(redactor.scrub(text: text))]))
            } else {
                // Not UTF-8: kept byte for byte, so a replay sends what the server read.
                writeRecord(.object(["dir": .string("in"), "hex": .string(Transcript.hex(body))]))
            }
        }
    }

    public func tooLarge(size: Int) {
        lock.locked { writeRecord(.object(["dir": .string("in"), "size": .integer(size)])) }
    }

    public func outgoing(_ message: RawJSON) {
        lock.locked {
            writeRecord(.object(["dir": .string("out"), "msg": RawJSON(trusted: redactor.scrub(message.bytes))]))
        }
    }

    /// Records how the server ended.
    public func finish(exitStatus: Int32) {
        guard exitStatus != 0 else { return }
        lock.locked { writeRecord(.object(["exitStatus": .integer(Int(exitStatus))])) }
    }

    /// Writes one line (lock held). A failing disk stops the recording, not the server.
    private func writeRecord(_ record: RawJSON) {
        guard !failed else { return }
        let line = record.bytes + [UInt8(ascii: "\n")]
        var offset = 0
        while offset < line.count {
            let n = line.withUnsafeBytes { write(fd, $0.baseAddress! + offset, line.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                failed = true
                return
            }
            offset += n
        }
    }
}
