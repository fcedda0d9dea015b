import Jansson
import JSONRPC
import NextPage

/// A transcript that cannot be read or has a record nextpage does not know.
public struct TranscriptError: Error, Sendable, CustomStringConvertible {
    public let path: String
    public let reason: String

    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    public var description: String { "\(path): \(reason)" }
}

/// A parsed transcript (docs/transcripts.md, `Schemas/transcript.schema.json`): NDJSON,
/// one record per line.
///
/// - `{"dir": "in", "msg": M}`: a message sent to the server (framed by the replayer);
///   `{"dir": "in", "text": T}` sends a body that is not JSON; `{"dir": "in", "hex": H}` a body
///   given byte for byte (not UTF-8); `{"dir": "in", "size": N}` a body of N bytes (one over
///   `--max-message-bytes`, skipped unread); `{"dir": "in", "bytes": B}` writes B to the
///   server's stdin as it is, with no framing.
/// - `{"dir": "out", "msg": M}`: a message the server must send: replies are matched by id,
///   notifications in order within their stream (same method and `collection` or `token`).
/// - `{"ignore": [POINTER, ...]}`: parts of out messages not compared (RFC 6901 pointers
///   into each message, `*` matching any one member or element); with `"id"`, only in the
///   reply with that id.
/// - `{"args": [...]}`: the server's arguments; the server runs in the transcript's folder,
///   so paths are relative to it; `${tmp}` stands for a fresh folder per replay.
/// - `{"framing": "ndjson" | "lsp"}`: how messages are framed (default ndjson).
/// - `{"exitStatus": N}`: the status the server must end with (default 0).
/// - `{"restart": "eof" | "kill"}`: end this server (close its input, or SIGKILL it) and start
///   a fresh one with the same arguments (and the same `${tmp}`); what follows is a new session.
/// - `{"comment": "..."}`: nothing; any record may also carry a `comment`.
///
/// `args` and `framing` come before the first message record.
public struct Transcript: Sendable {
    /// What one line says.
    public enum Record: @unchecked Sendable {
        case send(Send)
        case expect(JSON)
        case ignore([[String]], id: RawJSON?)
        case args([String])
        case framing(Framing)
        case exitStatus(Int32)
        case restart(RestartMode)
        case comment
    }

    /// What an `in` record sends.
    public enum Send: @unchecked Sendable {
        case message(JSON)
        case text(String)
        case bytes(String)
        /// A body given byte for byte (`hex`), framed.
        case body([UInt8])
        /// A body of this many bytes (`size`), framed; its content does not matter (it is over the limit).
        case filler(Int)
    }

    /// `bytes` as lowercase hex digits.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes { out += [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]] }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of a hex string; `nil` when it is not one.
    static func bytes(hex text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = HTTPURL.hexValue(digits[index]), let low = HTTPURL.hexValue(digits[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    /// How a `restart` ends the running server.
    public enum RestartMode: String, Sendable {
        /// Close its input and wait for it to end (its exit status is checked).
        case eof
        /// SIGKILL it at once (after every out record above has arrived).
        case kill
    }

    /// One line: its 1-based number, its text, and what it says.
    public struct Line: @unchecked Sendable {
        public let number: Int
        public let text: String
        public let record: Record
    }

    public let path: String
    public let lines: [Line]

    /// The server's arguments (`args`, default none).
    public var arguments: [String] {
        for line in lines { if case .args(let arguments) = line.record { return arguments } }
        return []
    }

    /// The framing (default ndjson).
    public var framing: Framing {
        for line in lines { if case .framing(let framing) = line.record { return framing } }
        return .ndjson
    }

    /// Reads and checks a transcript file.
    public static func read(_ path: String) throws(TranscriptError) -> Transcript {
        let bytes: [UInt8]
        do {
            bytes = try ServerLauncher.contents(of: path)
        } catch {
            throw TranscriptError(path: path, reason: error.reason)
        }
        return try parse(String(decoding: bytes, as: UTF8.self), path: path)
    }

    /// Parses a transcript's text; errors name the line.
    public static func parse(_ text: String, path: String) throws(TranscriptError) -> Transcript {
        var lines: [Line] = []
        var seenMessage = false
        var rawLines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if rawLines.last == "" { rawLines.removeLast() }
        for (index, raw) in rawLines.enumerated() {
            let number = index + 1
            func fail(_ reason: String) -> TranscriptError { TranscriptError(path: path, reason: "line \(number): \(reason)") }
            let trimmed = raw.hasSuffix("\r") ? String(raw.dropLast()) : raw
            if trimmed.allSatisfy({ $0 == " " || $0 == "\t" }) {
                lines.append(Line(number: number, text: raw, record: .comment))
                continue
            }
            let json: JSON
            do {
                json = try JSON.parse(trimmed)
            } catch {
                throw fail("not JSON (column \(error.column): \(error.text))")
            }
            let record = try Self.record(json, fail: fail)
            switch record {
            case .send, .expect: seenMessage = true
            case .args, .framing:
                if seenMessage { throw fail("\"args\" and \"framing\" belong before the first message record") }
            default: break
            }
            lines.append(Line(number: number, text: trimmed, record: record))
        }
        return Transcript(path: path, lines: lines)
    }

    private static func record(_ json: JSON, fail: (String) -> TranscriptError) throws(TranscriptError) -> Record {
        guard json.kind == .object else { throw fail("a record must be an object") }
        let keys = Set(json.members.map(\.key)).subtracting(["comment"])
        if let comment = json["comment"], comment.string == nil { throw fail("\"comment\" must be a string") }
        func only(_ allowed: Set<String>) throws(TranscriptError) {
            let extra = keys.subtracting(allowed)
            if !extra.isEmpty { throw fail("unexpected \(extra.sorted().map { "\"\($0)\"" }.joined(separator: ", ")) in this record") }
        }
        if let dir = json["dir"] {
            switch dir.string {
            case "in":
                if let msg = json["msg"] {
                    try only(["dir", "msg"])
                    return .send(.message(msg))
                }
                if let text = json["text"] {
                    try only(["dir", "text"])
                    guard let value = text.string else { throw fail("\"text\" must be a string") }
                    return .send(.text(value))
                }
                if let bytes = json["bytes"] {
                    try only(["dir", "bytes"])
                    guard let value = bytes.string else { throw fail("\"bytes\" must be a string") }
                    return .send(.bytes(value))
                }
                if let hex = json["hex"] {
                    try only(["dir", "hex"])
                    guard let value = hex.string.flatMap(Self.bytes(hex:)) else { throw fail("\"hex\" must be a string of hex digit pairs") }
                    return .send(.body(value))
                }
                if let size = json["size"] {
                    try only(["dir", "size"])
                    guard let value = size.integer, value > 0, value <= Int64(Int32.max) else {
                        throw fail("\"size\" must be a number of bytes from 1 to \(Int32.max)")
                    }
                    return .send(.filler(Int(value)))
                }
                throw fail("an in record needs \"msg\", \"text\", \"bytes\", \"hex\" or \"size\"")
            case "out":
                try only(["dir", "msg"])
                guard let msg = json["msg"] else { throw fail("an out record needs \"msg\"") }
                return .expect(msg)
            default:
                throw fail("\"dir\" must be \"in\" or \"out\"")
            }
        }
        if let ignore = json["ignore"] {
            try only(["ignore", "id"])
            guard ignore.kind == .array else { throw fail("\"ignore\" must be an array of JSON Pointers") }
            var pointers: [[String]] = []
            for element in ignore.elements {
                guard let text = element.string, let tokens = JSONPointer.tokens(text) else {
                    throw fail("\"ignore\" must hold JSON Pointers (\"/result/elapsed\"), not \(element.compactString)")
                }
                pointers.append(tokens)
            }
            var id: RawJSON?
            if let idValue = json["id"] {
                guard let valid = RequestID(idValue) else { throw fail("\"id\" must be a string, a number or null") }
                id = valid.raw
            }
            return .ignore(pointers, id: id)
        }
        if let args = json["args"] {
            try only(["args"])
            guard args.kind == .array, args.elements.allSatisfy({ $0.string != nil }) else {
                throw fail("\"args\" must be an array of strings")
            }
            return .args(args.elements.map { $0.string! })
        }
        if let framing = json["framing"] {
            try only(["framing"])
            guard let name = framing.string, let value = Framing(rawValue: name) else {
                throw fail("\"framing\" must be \"ndjson\" or \"lsp\"")
            }
            return .framing(value)
        }
        if let status = json["exitStatus"] {
            try only(["exitStatus"])
            guard let value = status.integer, (0...255).contains(value) else { throw fail("\"exitStatus\" must be an integer from 0 to 255") }
            return .exitStatus(Int32(value))
        }
        if let restart = json["restart"] {
            try only(["restart"])
            guard let name = restart.string, let mode = RestartMode(rawValue: name) else {
                throw fail("\"restart\" must be \"eof\" or \"kill\"")
            }
            return .restart(mode)
        }
        if json["comment"] != nil && keys.isEmpty { return .comment }
        throw fail("unknown record (expected \"dir\", \"ignore\", \"args\", \"framing\", \"exitStatus\", \"restart\" or \"comment\")")
    }
}
