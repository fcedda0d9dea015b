import Jansson

extension ReplayTransport {
    /// A request as the replay compares it: method, URL match key, body
    /// (a form body as its redacted text), headers by lowercased name.
    struct SentRequest {
        let method: String
        let key: String
        let body: JSON?
        let headers: [String: String]
    }

    /// One way a recorded request differs from the one sent.
    struct Difference {
        /// What differs and how, as a message shows it: `query page: 5, not 6`.
        let text: String
        /// How far apart the two are, to choose among requests that differ
        /// in as many ways: a number's distance, or an edit distance.
        let distance: Double
    }

    /// `; nearest recorded: METHOD URL (WHAT: RECORDED, not SENT)` (or
    /// `WHAT: RECORDED, not sent`, `WHAT: sent SENT, not recorded`) for the
    /// recorded request that differs from `sent` in the fewest ways (then
    /// by the smallest distance, then the first recorded), or a note that
    /// the recording holds no exchange.
    func nearestRecorded(to sent: SentRequest) -> String {
        guard let entries, !entries.isEmpty else { return " (it records no exchange)" }
        var best: (entry: Entry, differences: [Difference])?
        for entry in entries {
            let differences = Self.differences(entry, sent, comparing: cursorHeaders)
            guard let current = best else {
                best = (entry, differences)
                continue
            }
            let distance = differences.reduce(0) { $0 + $1.distance }
            let bestDistance = current.differences.reduce(0) { $0 + $1.distance }
            if differences.count < current.differences.count
                || (differences.count == current.differences.count && distance < bestDistance) {
                best = (entry, differences)
            }
        }
        guard let best else { return "" }
        let what = best.differences.first.map { " (\($0.text))" } ?? ""
        return redactor.scrub("; nearest recorded: \(best.entry.method) \(redactor.url(best.entry.url))\(what)")
    }

    /// How `entry` differs from `sent`, in the order a reader looks: the
    /// method, the scheme and host, the path, each query item (by name),
    /// the body (its first differing member), the cursor headers.
    static func differences(_ entry: Entry, _ sent: SentRequest, comparing cursorHeaders: Set<String>) -> [Difference] {
        var found: [Difference] = []
        func differ(_ what: String, _ recorded: String?, _ sent: String?) {
            let distance: Double
            if let recorded, let sent {
                if let a = Double(recorded), let b = Double(sent) {
                    distance = min(abs(a - b), 1_000)
                } else {
                    distance = Double(NearestName.distance(Array(recorded.unicodeScalars), Array(sent.unicodeScalars)))
                }
            } else {
                distance = 1_000
            }
            let text: String
            switch (recorded, sent) {
            case let (recorded?, sent?): text = "\(what): \(shown(recorded)), not \(shown(sent))"
            case let (recorded?, nil): text = "\(what): \(shown(recorded)), not sent"
            case let (nil, sent?): text = "\(what): sent \(shown(sent)), not recorded"
            case (nil, nil): text = what
            }
            found.append(Difference(text: text, distance: distance))
        }
        if entry.method != sent.method { differ("method", entry.method, sent.method) }
        let recordedURL = HTTPURL.parts(entry.key)
        let sentURL = HTTPURL.parts(sent.key)
        let recordedOrigin = (recordedURL.scheme ?? "") + "://" + (recordedURL.authority ?? "")
        let sentOrigin = (sentURL.scheme ?? "") + "://" + (sentURL.authority ?? "")
        if recordedOrigin != sentOrigin { differ("origin", recordedOrigin, sentOrigin) }
        if recordedURL.path != sentURL.path { differ("path", recordedURL.path, sentURL.path) }
        let recordedQuery = queryItems(recordedURL.query)
        let sentQuery = queryItems(sentURL.query)
        // A parameter sent under another name than recorded (the same
        // value): one difference, the name.
        var renamed: [String: String] = [:]
        var recordedOnly = Set(recordedQuery.keys).subtracting(sentQuery.keys)
        for name in Set(sentQuery.keys).subtracting(recordedQuery.keys).sorted() {
            if let other = recordedOnly.sorted().first(where: { recordedQuery[$0] == sentQuery[name] }) {
                renamed[name] = other
                recordedOnly.remove(other)
            }
        }
        for name in Set(recordedQuery.keys).union(sentQuery.keys).sorted() where recordedQuery[name] != sentQuery[name] {
            if renamed.values.contains(name) { continue }
            if let other = renamed[name] {
                let value = shown(sentQuery[name]!.joined(separator: ","))
                found.append(Difference(text: "query: \(other)=\(value), not \(name)=\(value)", distance: 1))
                continue
            }
            differ("query \(name)", recordedQuery[name]?.joined(separator: ","), sentQuery[name]?.joined(separator: ","))
        }
        if let (pointer, recorded, sent) = firstDifference(entry.body, sent.body, at: "") {
            differ(pointer.isEmpty ? "body" : "body \(pointer)", recorded, sent)
        }
        if let recordedHeaders = entry.headers {
            for name in cursorHeaders.sorted() where recordedHeaders[name] != sent.headers[name] {
                differ("header \(name)", recordedHeaders[name], sent.headers[name])
            }
        }
        return found
    }

    /// A value in a message: as it is when short, else shortened.
    private static func shown(_ text: String) -> String {
        text.count <= 60 ? text : String(text.prefix(59)) + "…"
    }

    /// Query items by decoded name, their decoded values in order.
    private static func queryItems(_ query: String?) -> [String: [String]] {
        var items: [String: [String]] = [:]
        for item in (query ?? "").split(separator: "&") {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(decoding: HTTPURL.percentDecoded(String(parts[0])), as: UTF8.self)
            let value = parts.count > 1 ? String(decoding: HTTPURL.percentDecoded(String(parts[1])), as: UTF8.self) : ""
            items[name, default: []].append(value)
        }
        return items
    }

    /// The JSON Pointer of the first place two bodies differ, and each
    /// side's value there as compact JSON (`nil`: absent); `nil` when they
    /// are the same.
    static func firstDifference(_ recorded: JSON?, _ sent: JSON?, at pointer: String) -> (String, String?, String?)? {
        switch (recorded, sent) {
        case (nil, nil):
            return nil
        case let (recorded?, sent?):
            if recorded.isEqual(to: sent) { return nil }
            if recorded.kind == .object, sent.kind == .object {
                let keys = Set(recorded.members.map(\.key)).union(sent.members.map(\.key)).sorted()
                for key in keys {
                    let escaped = key.map { $0 == "~" ? "~0" : $0 == "/" ? "~1" : String($0) }.joined()
                    if let found = firstDifference(recorded[key], sent[key], at: pointer + "/" + escaped) { return found }
                }
            } else if recorded.kind == .array, sent.kind == .array {
                for index in 0..<max(recorded.count, sent.count) {
                    if let found = firstDifference(recorded[index], sent[index], at: pointer + "/\(index)") { return found }
                }
            }
            return (pointer, recorded.compactString, sent.compactString)
        case let (recorded, sent):
            return (pointer, recorded?.compactString, sent?.compactString)
        }
    }
}
