/// A parser for RFC 8288 `Link` header values.
public enum LinkHeader {
    /// One link: its target and parameters.
    public struct Link: Sendable, Equatable {
        public var target: String
        /// Relation types from `rel`, lowercased (`rel="next last"` gives two).
        public var relations: [String]
        /// Every parameter, names lowercased, values unquoted, in order.
        public var parameters: [(name: String, value: String)]

        public static func == (lhs: Link, rhs: Link) -> Bool {
            lhs.target == rhs.target && lhs.relations == rhs.relations
                && lhs.parameters.map(\.name) == rhs.parameters.map(\.name)
                && lhs.parameters.map(\.value) == rhs.parameters.map(\.value)
        }
    }

    /// Parses every link in the given header values (one value per `Link`
    /// header; each may hold several comma-separated links). Malformed links
    /// are skipped; the rest are still returned.
    public static func parse(_ values: [String]) -> [Link] {
        values.flatMap { parse(Array($0.unicodeScalars)) }
    }

    private static func parse(_ s: [Unicode.Scalar]) -> [Link] {
        var links: [Link] = []
        var i = 0
        func skipSpace() { while i < s.count, s[i] == " " || s[i] == "\t" { i += 1 } }
        func skipToNextLink() {
            var quoted = false
            while i < s.count {
                if quoted {
                    if s[i] == "\\" { i += 1 } else if s[i] == "\"" { quoted = false }
                } else if s[i] == "\"" {
                    quoted = true
                } else if s[i] == "," {
                    i += 1
                    return
                }
                i += 1
            }
        }
        while i < s.count {
            skipSpace()
            guard i < s.count else { break }
            if s[i] == "," { i += 1; continue }
            guard s[i] == "<", let close = s[(i + 1)...].firstIndex(of: ">") else { skipToNextLink(); continue }
            var link = Link(target: String(String.UnicodeScalarView(s[(i + 1)..<close])), relations: [], parameters: [])
            i = close + 1
            var valid = true
            while true {
                skipSpace()
                guard i < s.count, s[i] == ";" else { break }
                i += 1
                skipSpace()
                let nameStart = i
                while i < s.count, !" \t=;,".unicodeScalars.contains(s[i]) { i += 1 }
                let name = String(String.UnicodeScalarView(s[nameStart..<i])).lowercased()
                skipSpace()
                var value = ""
                if i < s.count, s[i] == "=" {
                    i += 1
                    skipSpace()
                    if i < s.count, s[i] == "\"" {
                        i += 1
                        var closed = false
                        while i < s.count {
                            if s[i] == "\\", i + 1 < s.count { value.unicodeScalars.append(s[i + 1]); i += 2; continue }
                            if s[i] == "\"" { i += 1; closed = true; break }
                            value.unicodeScalars.append(s[i])
                            i += 1
                        }
                        if !closed { valid = false }
                    } else {
                        let valueStart = i
                        while i < s.count, !" \t;,".unicodeScalars.contains(s[i]) { i += 1 }
                        value = String(String.UnicodeScalarView(s[valueStart..<i]))
                    }
                }
                if name.isEmpty { valid = false; break }
                link.parameters.append((name, value))
                // RFC 8288 §3.3: only the first `rel` parameter counts.
                if name == "rel", !link.parameters.dropLast().contains(where: { $0.name == "rel" }) {
                    link.relations = value.split(whereSeparator: { $0 == " " || $0 == "\t" }).map { $0.lowercased() }
                }
            }
            skipSpace()
            if i < s.count, s[i] != "," { valid = false }
            skipToNextLink()
            if valid { links.append(link) }
        }
        return links
    }
}
