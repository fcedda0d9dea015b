import Foundation
import Jansson

/// A recording (`--record-upstream`'s format: one `{"request", "response"}`
/// per line) served live by a `FaultyHTTPServer` on 127.0.0.1, with the
/// recorded origin (`https://api.github.com`) replaced by the server's own
/// in every URL, header and body, so that a real `nextpage` pages through it
/// over the network and every request it makes is counted.
///
/// A request is answered by the recorded exchange with the same path and
/// the same query items (in any order, compared percent-decoded); a recorded
/// value `[redacted:DIGEST]` (a secret-looking item of a next-page URL, such
/// as Graph's `$skiptoken`, as the recorder writes it) matches the value
/// whose digest it is (64-bit FNV-1a of the value as sent, in hex, as
/// `HTTPRedactor.digest`). Anything else is a 404.
struct RecordedAPI {
    struct Exchange {
        let path: String
        let query: [(name: String, value: String, raw: String)]
        let status: Int
        let headers: [(String, String)]
        let body: String
    }

    let origin: String
    let exchanges: [Exchange]

    /// The folder of the project's recordings, relative to this file.
    static func folder(_ relative: String) -> String {
        let path = "\(#filePath)"
        return String(path[..<path.lastIndex(of: "/")!]) + "/../" + relative
    }

    /// Reads `file`, whose requests all go to `origin`.
    init(file: String, origin: String) throws {
        self.origin = origin
        let text = try String(contentsOfFile: file, encoding: .utf8)
        var exchanges: [Exchange] = []
        for line in text.split(separator: "\n") where !line.isEmpty {
            let json = try JSON.parse(String(line))
            let url = json.pointer("/request/url")?.string ?? ""
            guard url.hasPrefix(origin) else { throw HarnessError(description: "\(url) is not on \(origin)") }
            let target = String(url.dropFirst(origin.count))
            let (path, query) = Self.split(target)
            var headers: [(String, String)] = []
            for (name, value) in json.pointer("/response/headers")?.members ?? [] {
                // The server writes its own framing; the recorded length is that of the recorded body.
                guard !["content-length", "transfer-encoding", "content-encoding", "connection"].contains(name.lowercased()) else { continue }
                let values = value.kind == .array ? value.elements : [value]
                for one in values { headers.append((name, one.string ?? one.integer.map(String.init) ?? one.compactString)) }
            }
            let body = json.pointer("/response/body").map { $0.kind == .string ? $0.string ?? "" : $0.compactString } ?? ""
            exchanges.append(Exchange(
                path: path, query: query, status: Int(json.pointer("/response/status")?.integer ?? 200), headers: headers, body: body))
        }
        self.exchanges = exchanges
    }

    /// The answers of a server at `base` (`http://127.0.0.1:PORT`).
    func script(base: String) -> FaultyHTTPServer.Script {
        let exchanges = exchanges
        let origin = origin
        return { target in
            let (path, query) = Self.split(target)
            guard let exchange = exchanges.first(where: { $0.path == path && Self.same($0.query, query) }) else {
                return .respond(status: 404, contentType: "text/plain", body: Array("not recorded: \(target)".utf8))
            }
            let rewrite = { (text: String) in text.replacingOccurrences(of: origin, with: base) }
            return .answer(
                status: exchange.status, headers: exchange.headers.map { ($0.0, rewrite($0.1)) }, body: Array(rewrite(exchange.body).utf8))
        }
    }

    private static func split(_ target: String) -> (path: String, query: [(name: String, value: String, raw: String)]) {
        guard let question = target.firstIndex(of: "?") else { return (target, []) }
        let query = target[target.index(after: question)...].split(separator: "&").map { item -> (String, String, String) in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            let raw = parts.count > 1 ? parts[1] : ""
            return (parts[0].removingPercentEncoding ?? parts[0], raw.removingPercentEncoding ?? raw, raw)
        }
        return (String(target[..<question]), query)
    }

    private static func same(_ recorded: [(name: String, value: String, raw: String)], _ sent: [(name: String, value: String, raw: String)]) -> Bool {
        guard recorded.count == sent.count else { return false }
        var left = sent
        for item in recorded {
            guard let index = left.firstIndex(where: {
                $0.name == item.name && ($0.value == item.value || item.value == "[redacted:" + digest($0.raw) + "]")
            }) else { return false }
            left.remove(at: index)
        }
        return true
    }

    /// 64-bit FNV-1a of `value`'s UTF-8, 16 hex digits.
    static func digest(_ value: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in value.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
