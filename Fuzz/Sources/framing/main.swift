// Fuzz target: the framing reader (`MessageFramer`) fed arbitrary bytes.
//
// Input: [mode] [limit] [k] [k split offsets, 2 bytes each] [stream...]
//
// Checks that the events do not depend on how the stream is split into
// `feed` calls (whole, at the given offsets, byte by byte); that messages
// respect the limit and ndjson messages hold no newline and are not blank;
// that `.truncated` only comes from `finish()`; that the framer buffers no
// more than the limit plus a constant; that a framer is as good as new
// after `finish()`; and that messages framed with `MessageFramer.frame`
// (the stream cut at NUL bytes into bodies) come back exactly.
import FuzzSupport
@testable import JSONRPC

/// Limits to try, small ones to reach `.tooLarge` often.
private let limits = [0, 1, 5, 16, 64, 300, 8192, 64 << 20]

private func events(_ stream: [UInt8], mode: FramingMode, limit: Int, splits: [Int]) -> [FrameEvent] {
    var framer = MessageFramer(mode: mode, maxMessageBytes: limit)
    var result: [FrameEvent] = []
    var start = 0
    for split in splits.map({ min($0, stream.count) }) + [stream.count] where split >= start {
        result += framer.feed(Array(stream[start..<split]))
        start = split
    }
    let finished = framer.finish()
    fuzzCheck(!result.contains { if case .truncated = $0 { true } else { false } }, "truncated before the end: \(result)")
    fuzzCheck(finished.filter { if case .truncated = $0 { true } else { false } }.count <= 1, "more than one truncated: \(finished)")
    return result + finished
}

private func checkEvents(_ events: [FrameEvent], framing: Framing?, limit: Int) {
    for event in events {
        switch event {
        case .message(let body):
            fuzzCheck(body.count <= limit, "message of \(body.count) bytes over the limit \(limit)")
            if framing == .ndjson {
                fuzzCheck(!body.contains(0x0A), "ndjson message holds a newline")
                fuzzCheck(!body.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }, "blank ndjson message")
            }
        case .tooLarge(let size):
            fuzzCheck(size > limit, "tooLarge(\(size)) within the limit \(limit)")
        case .malformedHeader, .truncated:
            fuzzCheck(framing == .lsp, "\(event) outside lsp framing")
        }
    }
}

/// Feeds byte by byte, checking the framer's buffer stays bounded.
private func bytewise(_ stream: [UInt8], mode: FramingMode, limit: Int) -> (events: [FrameEvent], framer: MessageFramer) {
    var framer = MessageFramer(mode: mode, maxMessageBytes: limit)
    var result: [FrameEvent] = []
    let bound = limit + 2 * (MessageFramer.maxHeaderLineBytes + 1) + 2
    for byte in stream {
        result += framer.feed([byte])
        fuzzCheck(framer.bufferedByteCount <= bound, "framer holds \(framer.bufferedByteCount) bytes, limit \(limit)")
    }
    result += framer.finish()
    return (result, framer)
}

/// Bodies framed by `MessageFramer.frame` come back as they were (or as `.tooLarge`).
private func roundTrip(_ bodies: [[UInt8]], framing: Framing, limit: Int, splits: [Int]) {
    var stream: [UInt8] = []
    var expected: [FrameEvent] = []
    for body in bodies {
        if framing == .ndjson {
            // What ndjson cannot carry: a newline, a blank line, a final `\r` (taken as the line end's).
            if body.contains(0x0A) || body.last == 0x0D || body.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
        }
        stream += MessageFramer.frame(body, as: framing)
        expected.append(body.count > limit ? .tooLarge(size: body.count) : .message(body))
    }
    let mode: FramingMode = framing == .lsp ? .lsp : .ndjson
    let got = events(stream, mode: mode, limit: limit, splits: splits)
    fuzzCheck(got == expected, "\(framing) round trip: sent \(expected), got \(got)")
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzFraming(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(Fuzzer.bytes(data, size))
    let mode = input.pick([FramingMode.auto, .ndjson, .lsp])
    let limit = input.pick(limits)
    var offsets: [Int] = []
    for _ in 0..<input.below(16) { offsets.append(Int(input.byte()) << 8 | Int(input.byte())) }
    let stream = input.rest()
    let splits = Array(Set(offsets.map { stream.isEmpty ? 0 : $0 % (stream.count + 1) })).sorted()

    let whole = events(stream, mode: mode, limit: limit, splits: [])
    let split = events(stream, mode: mode, limit: limit, splits: splits)
    fuzzCheck(whole == split, "split at \(splits) changes the events: \(whole) vs \(split)")
    let (single, used) = bytewise(stream, mode: mode, limit: limit)
    fuzzCheck(whole == single, "byte-by-byte feeding changes the events: \(whole) vs \(single)")
    checkEvents(whole, framing: used.framing, limit: limit)

    // After finish() the framer starts over, keeping the framing it detected.
    var reused = used
    let again = reused.feed(stream) + reused.finish()
    let fresh = events(stream, mode: used.framing.map { $0 == .lsp ? FramingMode.lsp : .ndjson } ?? mode, limit: limit, splits: [])
    fuzzCheck(again == fresh, "a finished framer is not as good as new: \(again) vs \(fresh)")

    let bodies = stream.split(separator: 0, omittingEmptySubsequences: false).map(Array.init)
    roundTrip(bodies, framing: .lsp, limit: limit, splits: splits)
    roundTrip(bodies, framing: .ndjson, limit: limit, splits: splits)
    return 0
}

Fuzzer.main(fuzzFraming)
