#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Jansson
import JSONRPC

/// One server and the records it is replayed against.
final class SessionRun {
    struct Expectation {
        let line: Transcript.Line
        let message: JSON
        let key: String
        let label: String
        var actual: Int?
        var givenUp = false
    }

    let process: ServerProcess
    let lines: [Transcript.Line]
    let framing: Framing
    let timeout: Double
    private(set) var expectations: [Expectation] = []
    /// Actual messages already matched, by index in `process.received`.
    private var taken: Set<Int> = []
    private var actualKeys: [String] = []
    private var sendLines: [Int] = []
    private var stopped = false

    init(process: ServerProcess, lines: [Transcript.Line], framing: Framing, timeout: Double) {
        self.process = process
        self.lines = lines
        self.framing = framing
        self.timeout = timeout
    }

    /// Sends the in records, each after the out records above it arrived; then ends the server.
    ///
    /// In records that follow one another with no out record between them
    /// go out in one write, as they reached the server when it was recorded
    /// (a client that sent them together, a file piped in): the server then
    /// reads them together again, and a `status` sent right behind a
    /// `loadNext` sees that page still loading, as it did then. A `bytes`
    /// record is written on its own, as it is: it says exactly what reaches
    /// the server, and when (a message split over two writes).
    func perform(ending: Transcript.RestartMode?) {
        var ordinals: [String: Int] = [:]
        var together: [UInt8] = []
        var sendsTogether = 0
        func sendTogether() {
            guard sendsTogether > 0 else { return }
            // Counted first, so that every reply to them is tagged with the last of them.
            for _ in 0..<sendsTogether { process.markSent() }
            process.send(together)
            together.removeAll(keepingCapacity: true)
            sendsTogether = 0
        }
        for line in lines {
            switch line.record {
            case .expect(let message):
                sendTogether()
                let key = Self.key(message)
                ordinals[key, default: 0] += 1
                expectations.append(Expectation(line: line, message: message, key: key, label: Self.label(message, ordinal: ordinals[key]!)))
            case .send(let send):
                let alone: Bool
                if case .bytes = send { alone = true } else { alone = false }
                if alone { sendTogether() }
                // Every out record above has its in records sent already.
                if sendsTogether == 0 { waitForExpectations() }
                sendLines.append(line.number)
                together += frame(send)
                sendsTogether += 1
                if alone { sendTogether() }
            default:
                break
            }
        }
        sendTogether()
        if ending == .kill {
            waitForExpectations()
            process.kill()
        } else {
            // End of input: the server still answers everything sent before it (and a last
            // ndjson line without its newline only becomes a message now).
            process.closeInput()
        }
        let deadline = Condition.deadline(after: timeout)
        if !process.wait(until: deadline, for: { process.hasExited }) {
            stopped = true
            process.kill()
            _ = process.wait(until: Condition.deadline(after: timeout), for: { process.hasExited })
        }
        _ = process.wait(until: Condition.deadline(after: timeout), for: { process.outputEnded })
        process.condition.locked { match() }
    }

    /// Blocks until every expectation registered so far is matched, the
    /// server's output ended, or `timeout` passed (then stops waiting for those).
    private func waitForExpectations() {
        let deadline = Condition.deadline(after: timeout)
        _ = process.wait(until: deadline) {
            match()
            return process.outputEnded || expectations.allSatisfy { $0.actual != nil || $0.givenUp }
        }
        process.condition.locked {
            for index in expectations.indices where expectations[index].actual == nil { expectations[index].givenUp = true }
        }
    }

    /// Pairs unmatched expectations with the earliest unmatched message of the same key (lock held).
    private func match() {
        let received = process.received
        while actualKeys.count < received.count { actualKeys.append(Self.key(received[actualKeys.count].message)) }
        for index in expectations.indices where expectations[index].actual == nil {
            let key = expectations[index].key
            if let found = actualKeys.indices.first(where: { !taken.contains($0) && actualKeys[$0] == key }) {
                expectations[index].actual = found
                taken.insert(found)
            }
        }
    }

    private func frame(_ send: Transcript.Send) -> [UInt8] {
        switch send {
        case .message(let json): return MessageFramer.frame(json.dump(), as: framing)
        case .text(let text): return MessageFramer.frame(Array(text.utf8), as: framing)
        case .bytes(let text): return Array(text.utf8)
        case .body(let bytes): return MessageFramer.frame(bytes, as: framing)
        case .filler(let size): return MessageFramer.frame([UInt8](repeating: UInt8(ascii: "x"), count: size), as: framing)
        }
    }

    // MARK: Results

    func differences(ignores: TranscriptReplayer.Ignores, expectedStatus: Int32, ending: Transcript.RestartMode?) -> [String] {
        var lines: [String] = []
        let received = process.condition.locked { process.received }
        for expectation in expectations {
            guard let index = expectation.actual else {
                lines.append("line \(expectation.line.number): no \(expectation.label) arrived (expected \(JSONDiff.show(expectation.message)))")
                continue
            }
            let details = Self.compare(expectation.message, received[index].message, ignores: ignores)
            if !details.isEmpty {
                lines.append("line \(expectation.line.number): \(expectation.label) differs:")
                lines += details.map { "    " + $0 }
            }
        }
        for (index, item) in received.enumerated() where !taken.contains(index) {
            let place = item.segment == 0 ? "before the first in record" : "after line \(sendLines[item.segment - 1])"
            lines.append("unexpected \(Self.label(item.message, ordinal: nil)) (\(place)): \(JSONDiff.show(item.message))")
        }
        let (violations, status, signal) = process.condition.locked { (process.violations, process.exitStatus, process.exitSignal) }
        for violation in violations.prefix(5) {
            lines.append("stdout carried something that is not a message: \(violation)")
        }
        if stopped {
            lines.append("the server did not end within \(Int(timeout)) s after its input was closed; it was killed")
        } else if ending != .kill {
            if let signal {
                lines.append("the server was killed by signal \(signal)")
            } else if let status, status != expectedStatus {
                lines.append("the server exited with status \(status), expected \(expectedStatus)")
            }
        }
        return lines
    }

    /// Compares one message, member by member (paired by id) for a batch reply.
    static func compare(_ expected: JSON, _ actual: JSON, ignores: TranscriptReplayer.Ignores) -> [String] {
        if expected.kind == .array, actual.kind == .array {
            let left = expected.elements
            let right = actual.elements
            var lines: [String] = []
            // Members are paired by id (a batch's replies may come in any order), then in order among equal ids.
            var unpaired = Array(right.indices)
            for (index, member) in left.enumerated() {
                let id = member["id"]?.compactString ?? "-"
                guard let found = unpaired.firstIndex(where: { (right[$0]["id"]?.compactString ?? "-") == id }) else { continue }
                let details = JSONDiff.differences(member, right[unpaired.remove(at: found)], ignoring: ignores.pointers(for: member))
                lines += details.map { "/\(index)" + ($0.hasPrefix("/") ? $0 : ": " + $0) }
            }
            if left.count != right.count { lines.append("expected \(left.count) replies in the batch, got \(right.count)") }
            return lines
        }
        return JSONDiff.differences(expected, actual, ignoring: ignores.pointers(for: expected))
    }

    /// The session's lines with out records replaced by what the server
    /// sent, less the ignored places (`--update`). Between two in records,
    /// the out records take the order the messages arrived in; messages no
    /// out record expected join those that arrived in the same stretch.
    func rewritten(ending: Transcript.RestartMode?, ignores: TranscriptReplayer.Ignores) -> [String] {
        func outRecord(_ message: JSON) -> String { Self.outRecord(Self.stripped(message, ignores: ignores)) }
        let (received, status) = process.condition.locked { (process.received, process.exitStatus) }
        // Stretches of lines between in records: stretch k follows the k-th in record.
        var stretches: [[Transcript.Line]] = [[]]
        for line in lines {
            if case .send = line.record { stretches.append([]) }
            stretches[stretches.count - 1].append(line)
        }
        var arrived: [Int: [Int]] = [:]
        for expectation in expectations {
            guard let index = expectation.actual else { continue }
            let stretch = stretches.firstIndex { $0.contains { $0.number == expectation.line.number } } ?? 0
            arrived[stretch, default: []].append(index)
        }
        for (index, item) in received.enumerated() where !taken.contains(index) {
            arrived[min(item.segment, stretches.count - 1), default: []].append(index)
        }
        var out: [String] = []
        var keptStatusLine: String?
        for (number, stretch) in stretches.enumerated() {
            var messages = (arrived[number] ?? []).sorted().map { outRecord(received[$0].message) }
            let slots = stretch.filter { if case .expect = $0.record { return true } else { return false } }.count
            var slotsLeft = slots
            for (position, line) in stretch.enumerated() {
                switch line.record {
                case .expect:
                    slotsLeft -= 1
                    if !messages.isEmpty { out.append(messages.removeFirst()) }
                    if slotsLeft == 0 { out += messages; messages = [] }
                case .exitStatus:
                    keptStatusLine = line.text
                case .restart:
                    out += messages
                    messages = []
                    out += statusLines(ending: ending, status: status, kept: keptStatusLine)
                    out.append(line.text)
                default:
                    out.append(line.text)
                }
                // No out record in this stretch: the messages follow its in record.
                if position == 0 && slots == 0 && number > 0 { out += messages; messages = [] }
            }
            out += messages
        }
        if ending == nil { out += statusLines(ending: ending, status: status, kept: keptStatusLine) }
        return out
    }

    /// The session's `exitStatus` record: kept when it still holds, written when the status is not 0.
    private func statusLines(ending: Transcript.RestartMode?, status: Int32?, kept: String?) -> [String] {
        guard ending != .kill, let status else { return kept.map { [$0] } ?? [] }
        if let kept, case .exitStatus(let value)? = try? Transcript.parse(kept, path: "").lines.first?.record, value == status {
            return [kept]
        }
        return status == 0 ? [] : [RawJSON.object(["exitStatus": .integer(Int(status))]).description]
    }

    /// A copy of a message without the object members its ignore pointers name.
    static func stripped(_ message: JSON, ignores: TranscriptReplayer.Ignores) -> JSON {
        func strip(_ value: JSON, path: [String], pointers: [[String]]) {
            switch value.kind {
            case .object:
                for (key, member) in value.members {
                    if JSONDiff.isIgnored(path + [key], pointers) { value.remove(key) } else { strip(member, path: path + [key], pointers: pointers) }
                }
            case .array:
                for (index, element) in value.elements.enumerated() { strip(element, path: path + [String(index)], pointers: pointers) }
            default:
                break
            }
        }
        let copy = message.deepCopy()
        if copy.kind == .array {
            for element in copy.elements { strip(element, path: [], pointers: ignores.pointers(for: element)) }
        } else {
            strip(copy, path: [], pointers: ignores.pointers(for: copy))
        }
        return copy
    }

    static func outRecord(_ message: JSON) -> String {
        RawJSON.object(["dir": .string("out"), "msg": RawJSON(message)]).description
    }

    // MARK: Keys

    /// What a message is matched by: its id (a reply), its members' ids (a
    /// batch reply), or its stream (a notification).
    static func key(_ message: JSON) -> String {
        switch message.kind {
        case .array:
            // The ids in order, so that replies in another order match too.
            return "batch:" + message.elements.map { $0["id"]?.compactString ?? "-" }.sorted().joined(separator: ",")
        case .object:
            if let method = message["method"]?.string, message["id"] == nil {
                return "notification:" + method + "|" + stream(message)
            }
            return "reply:" + (message["id"]?.compactString ?? "-")
        default:
            return "other:" + message.compactString
        }
    }

    private static func stream(_ notification: JSON) -> String {
        guard let params = notification["params"] else { return "" }
        if let collection = params["collection"] { return "collection=" + collection.compactString }
        if let token = params["token"] { return "token=" + token.compactString }
        return ""
    }

    /// How a message is named in differences.
    static func label(_ message: JSON, ordinal: Int?) -> String {
        switch message.kind {
        case .array:
            let ids = message.elements.map { $0["id"]?.compactString ?? "-" }.joined(separator: ", ")
            return "batch reply (ids \(ids))"
        case .object:
            if let method = message["method"]?.string, message["id"] == nil {
                let params = message["params"]
                let stream = params?["collection"].map { " for \($0.compactString)" } ?? params?["token"].map { " for token \($0.compactString)" } ?? ""
                return "\(method) notification\(stream)" + (ordinal.map { " #\($0)" } ?? "")
            }
            return "reply to id \(message["id"]?.compactString ?? "?")"
        default:
            return "message"
        }
    }
}
