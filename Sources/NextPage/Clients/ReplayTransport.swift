#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Jansson

/// Answers from a recording instead of the network (`--replay-upstream DIR`),
/// so any `http` collection can be tested offline.
///
/// The file is the JSON Lines format `RecordingTransport` writes, read on
/// the first request. A request matches a recorded one with the same method,
/// the same URL (scheme and host compared case-insensitively, query items in
/// any order, both redacted the same way), the same JSON body and, when the
/// recording has the request's headers, the same value (or the same absence)
/// of the headers that carry cursors (`cursorHeaders`: `paging.header`);
/// other headers are not compared, so a changed `Accept` still replays (and
/// so is the `Authorization` a source's `auth` adds: it is recorded
/// redacted). A form-encoded body (a token request) matches its recorded
/// text once redacted the same way (`HTTPRedactor.form`), so the token
/// exchange replays whatever the secrets it sent. Identical
/// requests get their recorded answers in recorded order; once those are used
/// up, the last one is given again (so a refreshed collection replays too).
/// A request nothing matches fails with `HTTPTransportError.unmatched`,
/// naming the nearest recorded request and the first thing that differs
/// (`nearest recorded: GET https://...&page=5 (query page: 5, not 6)`), as
/// does every request when the file is missing or not a recording.
/// Headers may also be recorded as arrays of strings (one header per value);
/// `response.url`, when recorded, is where relative next-page URLs resolve.
public actor ReplayTransport: HTTPTransport {
    /// The recording read.
    public nonisolated let file: String
    public nonisolated let redactor: HTTPRedactor
    /// Lowercased names of the request headers that tell pages apart.
    public nonisolated let cursorHeaders: Set<String>

    struct Entry {
        let method: String
        /// The URL as recorded (for messages).
        let url: String
        let key: String
        /// Recorded request headers, by lowercased name (repeated ones joined
        /// with ", "); `nil` when the recording has none (they are not compared).
        let headers: [String: String]?
        let body: JSON?
        let response: HTTPExchangeResponse
        var used = false
    }

    private(set) var entries: [Entry]?
    private var loadFailure: String?
    /// How many requests were answered from the recording.
    public private(set) var answered = 0

    public init(file: String, redactor: HTTPRedactor = HTTPRedactor(), cursorHeaders: Set<String> = []) {
        self.file = file
        self.redactor = redactor
        self.cursorHeaders = Set(cursorHeaders.map { $0.lowercased() })
    }

    public func perform(_ request: HTTPExchangeRequest, timeout: Double, maxBodyBytes: Int) async throws(HTTPTransportError) -> HTTPExchangeResponse {
        if Task.isCancelled { throw .cancelled }
        if entries == nil && loadFailure == nil { await load() }
        if Task.isCancelled { throw .cancelled }
        if let loadFailure { throw .unmatched(loadFailure) }
        let method = request.method.uppercased()
        let key = Self.matchKey(redactor.url(request.url))
        let body: JSON? = RecordingTransport.isForm(request)
            ? request.body.map { JSON.string(redactor.form(String(decoding: $0, as: UTF8.self))) }
            : request.body.flatMap { try? JSON.parse($0) }
        let headers = redactor.headers(request.headers)
        var lastMatch: Int?
        for index in entries!.indices {
            let entry = entries![index]
            guard entry.method == method, entry.key == key, Self.sameBody(entry.body, body),
                  Self.sameHeaders(entry.headers, headers, comparing: cursorHeaders) else { continue }
            if !entry.used {
                entries![index].used = true
                return try answer(entry.response, maxBodyBytes: maxBodyBytes)
            }
            lastMatch = index
        }
        if let lastMatch { return try answer(entries![lastMatch].response, maxBodyBytes: maxBodyBytes) }
        let sent = SentRequest(method: method, key: key, body: body, headers: Self.byName(headers))
        throw .unmatched("no recorded answer in \(file)" + nearestRecorded(to: sent))
    }

    private func answer(_ response: HTTPExchangeResponse, maxBodyBytes: Int) throws(HTTPTransportError) -> HTTPExchangeResponse {
        guard response.body.count <= maxBodyBytes else { throw .bodyTooLarge(limit: maxBodyBytes) }
        answered += 1
        return response
    }

    /// The most bytes read from a recording (a symlink to `/dev/zero` is not read forever).
    static let maxRecordingBytes = 1 << 30

    private func load() async {
        let path = file
        // A recording may be a FIFO, whose read waits for a writer.
        let read = await onOwnThread { FileClient.readFile(path, limit: Self.maxRecordingBytes) }
        switch read {
        case .failure(let error) where error.code == SystemError.tooLarge:
            loadFailure = "recording \(file) is larger than \(Self.maxRecordingBytes) bytes"
        case .failure(let error):
            loadFailure = "no recording \(file) (\(String(cString: strerror(error.code))))"
        case .success(let bytes):
            var parsed: [Entry] = []
            for (number, line) in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
                let trimmed = line.last == UInt8(ascii: "\r") ? line.dropLast() : line
                if trimmed.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
                switch Self.readEntry(Array(trimmed)) {
                case .success(let entry):
                    parsed.append(entry)
                case .failure(let problem):
                    loadFailure = "\(file) line \(number + 1) is not a recorded exchange: \(problem.reason)"
                    return
                }
            }
            entries = parsed
        }
    }

    /// Why a line of a recording is not a recorded exchange.
    struct EntryProblem: Error {
        let reason: String
    }

    /// Reads one recorded exchange, or says what is wrong with it.
    static func readEntry(_ line: [UInt8]) -> Result<Entry, EntryProblem> {
        func problem(_ reason: String) -> Result<Entry, EntryProblem> { .failure(EntryProblem(reason: reason)) }
        guard let json = try? JSON.parse(line) else { return problem("not JSON") }
        guard let request = json["request"], request.kind == .object else { return problem("no \"request\" object") }
        guard let response = json["response"], response.kind == .object else { return problem("no \"response\" object") }
        guard let method = request["method"]?.string else { return problem("\"request.method\" is not a string") }
        guard let url = request["url"]?.string else { return problem("\"request.url\" is not a string") }
        guard let status = response["status"]?.integer else { return problem("\"response.status\" is not an integer") }
        let headers: [(name: String, value: String)]
        switch recordedHeaders(response["headers"], at: "response.headers") {
        case .success(let list): headers = list
        case .failure(let failure): return .failure(failure)
        }
        let body: [UInt8]
        switch response["body"] {
        case nil: body = []
        case let value? where value.kind == .string: body = Array((value.string ?? "").utf8)
        case let value?:
            // The body's own bytes, so a replay forwards `1.10` and `-0` as
            // they were recorded, not as jansson would write them again.
            let range = line.withUnsafeBufferPointer { JSONScanner.valueRange(at: ["response", "body"], in: $0) }
            body = range.map { Array(line[$0]) } ?? value.dump()
        }
        var requestHeaders: [String: String]?
        if let recorded = request["headers"], !recorded.isNull {
            guard recorded.kind == .object else { return problem("\"request.headers\" is not an object") }
            switch recordedHeaders(recorded, at: "request.headers") {
            case .success(let list): requestHeaders = byName(list)
            case .failure(let failure): return .failure(failure)
            }
        }
        let requestBody = request["body"].flatMap { $0.isNull ? nil : $0 }
        return .success(Entry(
            method: method.uppercased(), url: url, key: matchKey(url), headers: requestHeaders, body: requestBody,
            response: HTTPExchangeResponse(status: Int(status), headers: headers, body: body, url: response["url"]?.string ?? url)))
    }

    /// A URL as compared: scheme and authority lowercased, without the
    /// scheme's default port, no fragment, query items sorted, each name
    /// and value escaped one way (`YWJjZA==`, `YWJjZA%3d%3D` and `YWJjZA%3D%3D`
    /// are the same value, as a recording written by hand or by another tool
    /// may hold any of them; a `+` stays a `+`).
    static func matchKey(_ url: String) -> String {
        var parts = HTTPURL.parts(url)
        parts.scheme = parts.scheme?.lowercased()
        parts.authority = parts.authority?.lowercased()
        if let authority = parts.authority, let scheme = parts.scheme,
           let port = ["http": ":80", "https": ":443"][scheme], authority.hasSuffix(port) {
            parts.authority = String(authority.dropLast(port.count))
        }
        parts.fragment = nil
        if let query = parts.query {
            parts.query = query.split(separator: "&", omittingEmptySubsequences: false)
                .map { item in
                    item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                        .map { HTTPURL.encodeComponent(bytes: HTTPURL.percentDecoded(String($0))) }
                        .joined(separator: "=")
                }
                .sorted().joined(separator: "&")
        }
        return parts.text
    }

    /// Headers as a recording holds them: an object whose values are
    /// strings, numbers or booleans (written as in JSON: a capture tool may
    /// store `"x-ratelimit-used": 1`), or arrays of them (one header per
    /// value); `null` stands for no header. Fails with the first member of
    /// `field` whose value is none of these.
    private static func recordedHeaders(_ object: JSON?, at field: String) -> Result<[(name: String, value: String)], EntryProblem> {
        func text(_ value: JSON) -> String? {
            switch value.kind {
            case .string: return value.string
            case .integer, .real, .bool: return String(decoding: value.dumpShortestReals(), as: UTF8.self)
            default: return nil
            }
        }
        func problem(_ name: String) -> Result<[(name: String, value: String)], EntryProblem> {
            .failure(EntryProblem(reason: "\"\(field)\" member \"\(name)\" is not a string, number, boolean or array of them"))
        }
        var headers: [(name: String, value: String)] = []
        for (name, value) in object?.members ?? [] {
            if value.isNull { continue }
            if let single = text(value) {
                headers.append((name, single))
            } else if value.kind == .array {
                for element in value.elements {
                    guard let single = text(element) else { return problem(name) }
                    headers.append((name, single))
                }
            } else {
                return problem(name)
            }
        }
        return .success(headers)
    }

    /// Headers by lowercased name, repeated ones joined with ", " (as
    /// `RecordingTransport` writes them).
    static func byName(_ headers: [(name: String, value: String)]) -> [String: String] {
        var values: [String: [String]] = [:]
        for header in headers { values[header.name.lowercased(), default: []].append(header.value) }
        return values.mapValues { $0.joined(separator: ", ") }
    }

    /// Whether the headers named in `names` were sent as recorded: the same
    /// value, or absent on both sides. A recording without request headers
    /// matches any.
    private static func sameHeaders(
        _ recorded: [String: String]?, _ sent: [(name: String, value: String)], comparing names: Set<String>
    ) -> Bool {
        guard let recorded else { return true }
        let sent = byName(sent)
        return names.allSatisfy { recorded[$0] == sent[$0] }
    }

    private static func sameBody(_ recorded: JSON?, _ sent: JSON?) -> Bool {
        switch (recorded, sent) {
        case (nil, nil): return true
        case let (recorded?, sent?): return recorded.isEqual(to: sent)
        default: return false
        }
    }
}
