#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Jansson

/// How messages are delimited on the wire.
public enum Framing: String, Sendable, CaseIterable {
    /// One JSON text per line, terminated by `\n` (a `\r` before it is stripped).
    case ndjson
    /// Language Server Protocol style: a header block with `Content-Length`, an empty line, then the body.
    case lsp
}

/// What the user asked for on the command line (`--framing`).
public enum FramingMode: String, Sendable, CaseIterable {
    /// Detect the framing from the first non-whitespace bytes of the input.
    case auto
    /// Always use `Framing.ndjson`.
    case ndjson
    /// Always use `Framing.lsp`.
    case lsp
}

/// Something the framer recognised in the input stream.
public enum FrameEvent: Sendable, Equatable {
    /// One complete message body (the JSON text, without framing, without the line terminator / headers).
    case message([UInt8])
    /// A message longer than the limit was skipped; the stream stays in sync. `size` is the declared
    /// Content-Length (lsp) or the number of bytes of the over-long line seen (ndjson, at least limit+1).
    case tooLarge(size: Int)
    /// A header block that cannot be framed (lsp: no/invalid Content-Length). `reason` says what is wrong.
    case malformedHeader(reason: String)
    /// End of input in the middle of a message (lsp: body shorter than Content-Length, or headers not finished).
    ///
    /// For a short body, `expected` is the Content-Length, `received` the number of body bytes that
    /// arrived and `body` those bytes (a body being skipped as too large, already reported by
    /// `tooLarge`, gives no event). For an
    /// unfinished header block, `expected` is `nil`, `received` is the number of header bytes that
    /// arrived and `body` is empty.
    case truncated(expected: Int?, received: Int, body: [UInt8] = [])
}

/// Splits a byte stream into JSON-RPC messages. A pure state machine: it does no I/O.
///
/// Feed it bytes as they are read (any split is fine) and handle the returned events in order;
/// call `finish()` at end of input. The result does not depend on how the input was split into
/// `feed` calls. Memory use is bounded by `maxMessageBytes` plus a small constant: over-long
/// ndjson lines, over-large lsp bodies and over-long lsp header lines are skipped, not buffered.
///
/// ndjson: one message per `\n`-terminated line, a `\r` before the `\n` is stripped, blank lines
/// (only spaces, tabs or `\r`) produce nothing. A line whose body exceeds `maxMessageBytes` gives
/// one `.tooLarge` once its end is seen (regardless of its content).
///
/// lsp: header lines end with `\r\n` or `\n`; an empty line ends the block. Header names are
/// case-insensitive, headers other than `Content-Length` are ignored, and blank lines before a
/// block are ignored. A block without a usable `Content-Length` gives one `.malformedHeader`; if a
/// valid length was declared but the block is otherwise broken, that many body bytes are skipped.
/// After a block whose body length is unknown, the bytes that follow (most likely its body) are
/// dropped up to the next header: a line that is not a header is searched for `Content-Length:`
/// or `Content-Type:` so that a body glued to the next header block does not lose that message.
/// A run of such unframeable bytes gives one `.malformedHeader` in all.
public struct MessageFramer: Sendable {
    /// The longest lsp header line accepted, in bytes, not counting its terminator.
    static let maxHeaderLineBytes = 8192

    /// The UTF-8 byte order mark, dropped at the start of the stream (RFC 8259 §8.1 lets a
    /// parser ignore it; some Windows tools write one).
    static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// The framing in use: set at init for .ndjson/.lsp, detected from the first non-whitespace byte for .auto.
    public private(set) var framing: Framing?

    /// Still at the start of the stream, where a byte order mark may be.
    private var atStreamStart = true
    /// Bytes of the byte order mark matched so far at the start of the stream (held back until
    /// the mark is whole, or turns out not to be one).
    private var markMatched = 0

    private let maxMessageBytes: Int

    /// Auto detection: the bytes seen from the first non-whitespace byte while the decision is pending
    /// (a letter followed by header-name characters, waiting for a `:`).
    private var detectBuffer: [UInt8] = []

    /// Shared line splitter (ndjson lines, lsp header lines): the start of a line whose `\n` has not
    /// arrived yet. It never holds a `\n` and never more than `limit + 1` bytes.
    private var partial: [UInt8] = []
    /// The current line is over the limit and is being skipped up to its `\n`.
    private var discarding = false
    /// Bytes of the skipped line seen so far.
    private var discardedCount = 0
    /// Whether the last skipped byte was `\r` (not counted in the line's size if the `\n` follows).
    private var discardedLastCR = false

    private enum LSPState: Equatable {
        /// Reading header lines.
        case headers
        /// Reading a body of this length into `body`.
        case body(length: Int)
        /// Skipping a body of `length` bytes, `remaining` of which are still to come.
        case skip(length: Int, remaining: Int)
    }

    private var lspState: LSPState = .headers
    /// The lsp body being received.
    private var body: [UInt8] = []
    /// A header line of the current block has been seen.
    private var blockStarted = false
    /// Bytes of the current header block, terminators included.
    private var blockBytes = 0
    /// The valid Content-Length of the current block, if any.
    private var contentLength: Int?
    /// An invalid or conflicting Content-Length was seen in the current block: the body length is unknown.
    private var contentLengthUnusable = false
    /// Why the current block cannot be used, if something is wrong with it.
    private var blockError: String?
    /// The last block could not be framed and its body length is unknown, or unframeable bytes were
    /// already reported: lines that are not headers are dropped silently until a block starts.
    private var strayBody = false

    /// Creates a framer.
    /// - Parameters:
    ///   - mode: `.ndjson` or `.lsp` to fix the framing, `.auto` to detect it from the input.
    ///   - maxMessageBytes: the largest message body accepted; larger ones give `.tooLarge`.
    public init(mode: FramingMode = .auto, maxMessageBytes: Int = 64 << 20) {
        self.maxMessageBytes = max(0, maxMessageBytes)
        switch mode {
        case .auto: framing = nil
        case .ndjson: framing = .ndjson
        case .lsp: framing = .lsp
        }
    }

    /// The number of input bytes currently held by the framer (for tests of bounded memory).
    var bufferedByteCount: Int { markMatched + detectBuffer.count + partial.count + body.count }

    // MARK: - Feeding

    /// Feeds bytes as they arrive (any split, partial reads, many messages per read). Returns the events completed by these bytes, in order.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) -> [FrameEvent] {
        var events: [FrameEvent] = []
        guard bytes.count > 0 else { return events }
        bytes.withMemoryRebound(to: UInt8.self) { buffer in
            var start = 0
            if atStreamStart {
                while start < buffer.count && markMatched < Self.byteOrderMark.count && buffer[start] == Self.byteOrderMark[markMatched] {
                    markMatched += 1
                    start += 1
                }
                if markMatched == Self.byteOrderMark.count {
                    atStreamStart = false
                    markMatched = 0
                } else if start < buffer.count {
                    // Not a byte order mark: what was held back is input like any other.
                    releaseHeldMark(events: &events)
                }
            }
            process(buffer, from: start, events: &events)
        }
        return events
    }

    /// The stream did not start with a byte order mark: the bytes held back as its start are
    /// processed as input.
    private mutating func releaseHeldMark(events: inout [FrameEvent]) {
        atStreamStart = false
        let held = Array(Self.byteOrderMark[..<markMatched])
        markMatched = 0
        if !held.isEmpty { held.withUnsafeBufferPointer { process($0, from: 0, events: &events) } }
    }

    /// Feeds bytes as they arrive (any split, partial reads, many messages per read). Returns the events completed by these bytes, in order.
    public mutating func feed(_ bytes: [UInt8]) -> [FrameEvent] {
        bytes.withUnsafeBytes { feed($0) }
    }

    /// End of input. A final ndjson line without terminator is still a message (if not blank). An unfinished lsp message gives .truncated.
    ///
    /// Afterwards the framer is empty again (the detected framing is kept).
    public mutating func finish() -> [FrameEvent] {
        var events: [FrameEvent] = []
        if atStreamStart { releaseHeldMark(events: &events) }
        if framing == nil, !detectBuffer.isEmpty {
            // Header-name characters never followed by ':' - not a header.
            decide(.ndjson, events: &events)
        }
        switch framing {
        case nil:
            break
        case .ndjson:
            finishNDJSON(events: &events)
        case .lsp:
            finishLSP(events: &events)
        }
        resetStreamState()
        return events
    }

    /// Wraps a reply body in `framing`: ndjson appends "\n"; lsp prepends "Content-Length: N\r\n\r\n".
    ///
    /// For ndjson the body must not contain a raw newline (compact JSON never does).
    public static func frame(_ body: [UInt8], as framing: Framing) -> [UInt8] {
        switch framing {
        case .ndjson:
            var out = [UInt8]()
            out.reserveCapacity(body.count + 1)
            out.append(contentsOf: body)
            out.append(lf)
            return out
        case .lsp:
            let header = lspHeader(length: body.count)
            var out = [UInt8]()
            out.reserveCapacity(header.count + body.count)
            out.append(contentsOf: header)
            out.append(contentsOf: body)
            return out
        }
    }

    /// The header block of an lsp message whose body is `length` bytes.
    public static func lspHeader(length: Int) -> [UInt8] {
        Array("Content-Length: \(length)\r\n\r\n".utf8)
    }

    // MARK: - Dispatch

    /// Handles `buffer[start...]` according to the current framing.
    private mutating func process(_ buffer: UnsafeBufferPointer<UInt8>, from start: Int, events: inout [FrameEvent]) {
        var start = start
        if framing == nil {
            guard let deciding = detect(buffer, from: start, events: &events) else { return }
            start = deciding
        }
        switch framing {
        case nil:
            break
        case .ndjson:
            _ = consumeLines(buffer, from: start, limit: maxMessageBytes, events: &events)
        case .lsp:
            processLSP(buffer, from: start, events: &events)
        }
    }

    /// Auto detection. Returns the index of the first byte still to be framed once the framing has
    /// been decided (the buffered lookahead has then been framed already), or `nil` if all of the
    /// input was consumed without a decision.
    private mutating func detect(_ buffer: UnsafeBufferPointer<UInt8>, from start: Int, events: inout [FrameEvent]) -> Int? {
        var i = start
        let n = buffer.count
        while i < n {
            let byte = buffer[i]
            if detectBuffer.isEmpty {
                if JSONScanner.isWhitespace(byte) {
                    // Leading whitespace means nothing in either framing.
                    i += 1
                    continue
                }
                guard Self.isLetter(byte) else {
                    // '{', '[' or anything else: a line of JSON (or garbage for the parser to report).
                    decide(.ndjson, events: &events)
                    return i
                }
                detectBuffer.append(byte)
            } else if byte == UInt8(ascii: ":") {
                decide(.lsp, events: &events)
                return i
            } else if Self.isTokenChar(byte), detectBuffer.count <= Self.maxHeaderLineBytes {
                detectBuffer.append(byte)
            } else {
                decide(.ndjson, events: &events)
                return i
            }
            i += 1
        }
        return nil
    }

    /// Fixes the framing and frames the lookahead bytes held for detection.
    private mutating func decide(_ decided: Framing, events: inout [FrameEvent]) {
        framing = decided
        let lookahead = detectBuffer
        detectBuffer = []
        guard !lookahead.isEmpty else { return }
        lookahead.withUnsafeBufferPointer { buffer in
            process(buffer, from: 0, events: &events)
        }
    }

    // MARK: - Line splitting

    /// Splits `buffer[start...]` into lines of at most `limit` bytes (not counting `\r\n` / `\n`)
    /// and hands them to `handleLine` / `handleOverlongLine`. Stops early when an lsp header block
    /// ends and its body follows. Returns the index of the first byte not consumed.
    private mutating func consumeLines(_ buffer: UnsafeBufferPointer<UInt8>, from start: Int, limit: Int, events: inout [FrameEvent]) -> Int {
        let n = buffer.count
        var i = start
        while i < n {
            guard let newline = Self.index(of: Self.lf, in: buffer, from: i) else {
                stashIncompleteLine(UnsafeBufferPointer(rebasing: buffer[i..<n]), limit: limit)
                return n
            }
            let piece = UnsafeBufferPointer(rebasing: buffer[i..<newline])
            i = newline + 1
            if discarding {
                discardedCount += piece.count
                if let last = piece.last { discardedLastCR = last == Self.cr }
                let size = discardedCount - (discardedLastCR ? 1 : 0)
                let consumed = discardedCount + 1
                discarding = false
                discardedCount = 0
                discardedLastCR = false
                handleOverlongLine(size: size, consumed: consumed, events: &events)
            } else if partial.isEmpty {
                let size = piece.count - (piece.last == Self.cr ? 1 : 0)
                if size > limit {
                    handleOverlongLine(size: size, consumed: piece.count + 1, events: &events)
                } else {
                    handleLine(piece, events: &events)
                }
            } else {
                let lastIsCR = piece.isEmpty ? partial.last == Self.cr : piece.last == Self.cr
                let total = partial.count + piece.count
                let size = total - (lastIsCR ? 1 : 0)
                if size > limit {
                    partial = []
                    handleOverlongLine(size: size, consumed: total + 1, events: &events)
                } else {
                    var line = partial
                    partial = []
                    line.append(contentsOf: piece)
                    handleAssembledLine(line, events: &events)
                }
            }
            if framing == .lsp, lspState != .headers { return i }
        }
        return i
    }

    /// Keeps the start of an unterminated line, or counts it if it is already over the limit.
    private mutating func stashIncompleteLine(_ piece: UnsafeBufferPointer<UInt8>, limit: Int) {
        guard let last = piece.last else { return }
        if discarding {
            discardedCount += piece.count
            discardedLastCR = last == Self.cr
        } else if partial.count + piece.count - 1 > limit {
            // Even if the last byte is a '\r' of a "\r\n", the body is over the limit.
            discarding = true
            discardedCount = partial.count + piece.count
            discardedLastCR = last == Self.cr
            partial = []
        } else {
            Self.append(piece, to: &partial, atMost: limit < .max ? limit + 1 : limit)
        }
    }

    /// Past this many bytes, a message still arriving takes room for all it
    /// may hold at once, up to `growWholeUpTo` (the default limit).
    static let growWholeAfter = 1 << 20
    static let growWholeUpTo = 64 << 20

    /// Appends `piece` to a message that will hold at most `most` bytes.
    /// Between `growWholeAfter` and `growWholeUpTo` bytes the room for `most`
    /// (or `growWholeUpTo`) is taken at once instead of doubling: each
    /// doubling lets go of the buffer it outgrew, in all about as many bytes
    /// again as the message, which an allocator may keep resident for a
    /// while (mimalloc does). Untouched room costs address space, not memory;
    /// past `growWholeUpTo` (a raised `--max-message-bytes`) it doubles again.
    private static func append(_ piece: UnsafeBufferPointer<UInt8>, to buffer: inout [UInt8], atMost most: Int) {
        let needed = buffer.count + piece.count
        if needed > buffer.capacity, needed > growWholeAfter, needed <= growWholeUpTo {
            buffer.reserveCapacity(min(most, growWholeUpTo))
        }
        buffer.append(contentsOf: piece)
    }

    /// A complete line (without `\n`, possibly ending in `\r`) within the input buffer.
    private mutating func handleLine(_ line: UnsafeBufferPointer<UInt8>, events: inout [FrameEvent]) {
        let length = line.count - (line.last == Self.cr ? 1 : 0)
        switch framing {
        case .ndjson:
            guard !Self.isBlank(line, count: length) else { return }
            events.append(.message(Array(UnsafeBufferPointer(rebasing: line[0..<length]))))
        case .lsp:
            handleHeaderLine(UnsafeBufferPointer(rebasing: line[0..<length]), consumed: line.count + 1, events: &events)
        case nil:
            break
        }
    }

    /// A complete line assembled from several feeds; for ndjson the array itself becomes the message.
    private mutating func handleAssembledLine(_ line: consuming [UInt8], events: inout [FrameEvent]) {
        guard framing == .ndjson else {
            line.withUnsafeBufferPointer { whole in handleLine(whole, events: &events) }
            return
        }
        var line = line
        if line.last == Self.cr { line.removeLast() }
        guard !line.withUnsafeBufferPointer({ Self.isBlank($0, count: $0.count) }) else { return }
        events.append(.message(line))
    }

    /// A line over the limit was skipped: `size` is its length without terminator, `consumed` with it.
    private mutating func handleOverlongLine(size: Int, consumed: Int, events: inout [FrameEvent]) {
        switch framing {
        case .ndjson:
            events.append(.tooLarge(size: size))
        case .lsp:
            let reason = "header line longer than \(Self.maxHeaderLineBytes) bytes"
            if blockStarted {
                blockBytes += consumed
                if blockError == nil { blockError = reason }
            } else if !strayBody {
                events.append(.malformedHeader(reason: reason))
                strayBody = true
            }
        case nil:
            break
        }
    }

    private mutating func finishNDJSON(events: inout [FrameEvent]) {
        if discarding {
            events.append(.tooLarge(size: discardedCount - (discardedLastCR ? 1 : 0)))
        } else if !partial.isEmpty {
            let line = partial
            partial = []
            let size = line.count - (line.last == Self.cr ? 1 : 0)
            if size > maxMessageBytes {
                events.append(.tooLarge(size: size))
            } else {
                handleAssembledLine(line, events: &events)
            }
        }
    }

    // MARK: - lsp

    private mutating func processLSP(_ buffer: UnsafeBufferPointer<UInt8>, from start: Int, events: inout [FrameEvent]) {
        let n = buffer.count
        var i = start
        while i < n {
            switch lspState {
            case .headers:
                i = consumeLines(buffer, from: i, limit: Self.maxHeaderLineBytes, events: &events)
            case .body(let length):
                let take = min(length - body.count, n - i)
                Self.append(UnsafeBufferPointer(rebasing: buffer[i..<(i + take)]), to: &body, atMost: length)
                i += take
                if body.count == length {
                    events.append(.message(body))
                    body = []
                    lspState = .headers
                }
            case .skip(let length, let remaining):
                let take = min(remaining, n - i)
                i += take
                lspState = remaining == take ? .headers : .skip(length: length, remaining: remaining - take)
            }
        }
    }

    /// One header line, without its terminator. `consumed` is its length on the wire.
    private mutating func handleHeaderLine(_ line: UnsafeBufferPointer<UInt8>, consumed: Int, events: inout [FrameEvent]) {
        if line.isEmpty {
            if blockStarted { endHeaderBlock(events: &events) }
            return
        }
        if blockStarted {
            blockBytes += consumed
            if !addHeader(line), blockError == nil {
                blockError = "invalid header line \"\(Self.excerpt(line))\""
            }
            return
        }
        if Self.isBlank(line, count: line.count) { return }
        // First line of a block.
        if Self.parseHeader(line) != nil {
            startBlock(consumed: consumed)
            _ = addHeader(line)
            return
        }
        if !strayBody {
            events.append(.malformedHeader(reason: "invalid header line \"\(Self.excerpt(line))\""))
            strayBody = true
        }
        // A body of unknown length may run into the next header block: resynchronise on it.
        if let offset = Self.knownHeaderOffset(in: line) {
            let rest = UnsafeBufferPointer(rebasing: line[offset...])
            startBlock(consumed: rest.count + (consumed - line.count))
            _ = addHeader(rest)
        }
    }

    private mutating func startBlock(consumed: Int) {
        blockStarted = true
        blockBytes = consumed
        strayBody = false
    }

    /// Records a header of the current block. Returns false if the line is not a header at all.
    private mutating func addHeader(_ line: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let (name, value) = Self.parseHeader(line) else { return false }
        guard Self.equalsIgnoringCase(name, Self.contentLengthName) else { return true }
        guard !contentLengthUnusable else { return true }
        guard let length = Self.parseDecimal(value) else {
            if blockError == nil { blockError = "invalid Content-Length value \"\(Self.excerpt(value))\"" }
            contentLength = nil
            contentLengthUnusable = true
            return true
        }
        if let previous = contentLength, previous != length {
            if blockError == nil { blockError = "conflicting Content-Length values \(previous) and \(length)" }
            contentLength = nil
            contentLengthUnusable = true
        } else {
            contentLength = length
        }
        return true
    }

    /// The empty line after a header block: decide what to do with the body.
    private mutating func endHeaderBlock(events: inout [FrameEvent]) {
        let length = contentLength
        let error = blockError
        blockStarted = false
        blockBytes = 0
        contentLength = nil
        contentLengthUnusable = false
        blockError = nil
        if let error {
            events.append(.malformedHeader(reason: error))
            if let length {
                // The length is known: skip the body to stay in sync.
                if length > 0 { lspState = .skip(length: length, remaining: length) }
            } else {
                strayBody = true
            }
            return
        }
        guard let length else {
            events.append(.malformedHeader(reason: "missing Content-Length header"))
            strayBody = true
            return
        }
        if length > maxMessageBytes {
            events.append(.tooLarge(size: length))
            if length > 0 { lspState = .skip(length: length, remaining: length) }
        } else if length == 0 {
            events.append(.message([]))
        } else {
            // The length is only announced: room grows as bytes come, so a
            // header that promises 64 MiB takes nothing until 1 MiB arrived.
            body.reserveCapacity(min(length, Self.growWholeAfter))
            lspState = .body(length: length)
        }
    }

    private mutating func finishLSP(events: inout [FrameEvent]) {
        switch lspState {
        case .body(let length):
            events.append(.truncated(expected: length, received: body.count, body: body))
        case .skip:
            // Cut off while skipped as too large: `.tooLarge` answered it already (one reply a message).
            break
        case .headers:
            let pendingBytes = partial.count + discardedCount
            if blockStarted {
                events.append(.truncated(expected: nil, received: blockBytes + pendingBytes))
            } else if discarding || !(strayBody || partial.withUnsafeBufferPointer { Self.isBlank($0, count: $0.count) }) {
                events.append(.truncated(expected: nil, received: pendingBytes))
            }
        }
    }

    /// Forgets everything about the current position in the stream (the framing is kept).
    private mutating func resetStreamState() {
        detectBuffer = []
        partial = []
        discarding = false
        discardedCount = 0
        discardedLastCR = false
        lspState = .headers
        body = []
        blockStarted = false
        blockBytes = 0
        contentLength = nil
        contentLengthUnusable = false
        blockError = nil
        strayBody = false
    }

    // MARK: - Byte helpers

    private static let lf = UInt8(ascii: "\n")
    private static let cr = UInt8(ascii: "\r")
    private static let contentLengthName = Array("content-length".utf8)
    private static let knownHeaderPrefixes = [Array("content-length:".utf8), Array("content-type:".utf8)]

    /// The index of the first `byte` in `buffer[start...]`, found with `memchr`.
    @inline(__always)
    private static func index(of byte: UInt8, in buffer: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        guard start < buffer.count, let base = buffer.baseAddress else { return nil }
        guard let found = memchr(base + start, Int32(byte), buffer.count - start) else { return nil }
        return UnsafeRawPointer(base).distance(to: UnsafeRawPointer(found))
    }

    @inline(__always)
    private static func isLetter(_ byte: UInt8) -> Bool {
        (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
    }

    /// An HTTP header-name character (RFC 9110 `tchar`).
    private static func isTokenChar(_ byte: UInt8) -> Bool {
        if isLetter(byte) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) { return true }
        switch byte {
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Whether the first `count` bytes are only spaces, tabs and carriage returns.
    private static func isBlank(_ line: UnsafeBufferPointer<UInt8>, count: Int) -> Bool {
        var i = 0
        while i < count {
            let byte = line[i]
            if byte != 0x20 && byte != 0x09 && byte != 0x0D { return false }
            i += 1
        }
        return true
    }

    private static func trimmed(_ bytes: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        var lower = 0
        var upper = bytes.count
        while lower < upper, bytes[lower] == 0x20 || bytes[lower] == 0x09 { lower += 1 }
        while upper > lower, bytes[upper - 1] == 0x20 || bytes[upper - 1] == 0x09 { upper -= 1 }
        return UnsafeBufferPointer(rebasing: bytes[lower..<upper])
    }

    /// Splits `name: value` (both trimmed); `nil` unless the name is a non-empty token.
    private static func parseHeader(_ line: UnsafeBufferPointer<UInt8>) -> (name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>)? {
        guard let colon = index(of: UInt8(ascii: ":"), in: line, from: 0) else { return nil }
        let name = trimmed(UnsafeBufferPointer(rebasing: line[0..<colon]))
        guard !name.isEmpty else { return nil }
        for byte in name where !isTokenChar(byte) { return nil }
        return (name, trimmed(UnsafeBufferPointer(rebasing: line[(colon + 1)...])))
    }

    /// ASCII case-insensitive comparison with a lowercase `target`.
    private static func equalsIgnoringCase(_ bytes: UnsafeBufferPointer<UInt8>, _ target: [UInt8]) -> Bool {
        guard bytes.count == target.count else { return false }
        for i in 0..<target.count where lowercased(bytes[i]) != target[i] { return false }
        return true
    }

    @inline(__always)
    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }

    /// A non-negative decimal integer without sign; `nil` if empty, not all digits, or too large for `Int`.
    private static func parseDecimal(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard !bytes.isEmpty else { return nil }
        var value = 0
        for byte in bytes {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
            if overflow1 || overflow2 { return nil }
            value = sum
        }
        return value
    }

    /// The earliest offset (after 0) at which `Content-Length:` or `Content-Type:` starts, ignoring case.
    private static func knownHeaderOffset(in line: UnsafeBufferPointer<UInt8>) -> Int? {
        var best: Int?
        for prefix in knownHeaderPrefixes where line.count >= prefix.count {
            var start = 1
            let last = line.count - prefix.count
            search: while start <= last, best.map({ start < $0 }) ?? true {
                for j in 0..<prefix.count where lowercased(line[start + j]) != prefix[j] {
                    start += 1
                    continue search
                }
                best = start
                break
            }
        }
        return best
    }

    /// The start of `bytes` as text for an error message.
    private static func excerpt(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        let limit = 40
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[0..<min(bytes.count, limit)]), as: UTF8.self)
        return bytes.count > limit ? text + "..." : text
    }
}
