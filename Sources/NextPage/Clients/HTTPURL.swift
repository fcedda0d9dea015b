/// URL text as the `http` source builds and follows it: percent-encoding of
/// query values, RFC 3986 reference resolution, query items.
///
/// URLs stay strings from end to end: nothing here normalises a URL given by
/// the user or by a page, so a next-page URL is requested exactly as given.
public enum HTTPURL {
    /// The parts of a URI reference (RFC 3986 appendix B); absent parts are `nil`.
    public struct Parts: Sendable, Equatable {
        public var scheme: String?
        public var authority: String?
        public var path: String
        public var query: String?
        public var fragment: String?

        /// The reference put back together (RFC 3986 §5.3).
        public var text: String {
            var out = ""
            if let scheme { out += scheme + ":" }
            if let authority { out += "//" + authority }
            out += path
            if let query { out += "?" + query }
            if let fragment { out += "#" + fragment }
            return out
        }

        /// The host, without user info or port, lowercased; `nil` without an authority.
        public var host: String? { hostAndPort.map { String($0.host).lowercased() } }

        /// The port as written (`""` when none is); `nil` without an authority.
        public var port: String? { hostAndPort.map { String($0.port) } }

        /// The authority without its user info, split at the port's colon (an
        /// IPv6 host keeps its brackets and colons).
        private var hostAndPort: (host: Substring, port: Substring)? {
            guard let authority else { return nil }
            var rest = Substring(authority)
            if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
            let hostEnd: Substring.Index
            if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
                hostEnd = rest.index(after: close)
            } else {
                hostEnd = rest.lastIndex(of: ":") ?? rest.endIndex
            }
            let port = rest[hostEnd...].first == ":" ? rest[rest.index(after: hostEnd)...] : ""
            return (rest[..<hostEnd], port)
        }
    }

    /// Splits a URI reference into its parts.
    public static func parts(_ reference: String) -> Parts {
        var rest = Substring(reference)
        var parts = Parts(path: "")
        if let hash = rest.firstIndex(of: "#") {
            parts.fragment = String(rest[rest.index(after: hash)...])
            rest = rest[..<hash]
        }
        if let question = rest.firstIndex(of: "?") {
            parts.query = String(rest[rest.index(after: question)...])
            rest = rest[..<question]
        }
        if let colon = rest.firstIndex(of: ":"), isScheme(rest[..<colon]) {
            parts.scheme = String(rest[..<colon])
            rest = rest[rest.index(after: colon)...]
        }
        if rest.hasPrefix("//") {
            rest = rest.dropFirst(2)
            let end = rest.firstIndex(of: "/") ?? rest.endIndex
            parts.authority = String(rest[..<end])
            rest = rest[end...]
        }
        parts.path = String(rest)
        return parts
    }

    private static func isScheme(_ text: Substring) -> Bool {
        guard let first = text.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic else { return false }
        return text.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "+-.".unicodeScalars.contains(scalar))
        }
    }

    /// The origin of an absolute URL: scheme and host lowercased, and the
    /// port (80 or 443 when none is written); `nil` without a host.
    public static func origin(_ url: String) -> String? {
        let parts = parts(url)
        guard let scheme = parts.scheme?.lowercased(), let host = parts.host, var port = parts.port else { return nil }
        if port.isEmpty { port = scheme == "https" ? "443" : scheme == "http" ? "80" : "" }
        return scheme + "://" + host + ":" + port
    }

    /// Whether `url` is an absolute `http` or `https` URL with a host.
    public static func isHTTP(_ url: String) -> Bool {
        let parts = parts(url)
        guard let scheme = parts.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return false }
        guard let host = parts.host, !host.isEmpty else { return false }
        return !url.unicodeScalars.contains { $0.value <= 0x20 || $0.value == 0x7F }
    }

    // MARK: Encoding

    /// Percent-encodes every byte outside `A-Z a-z 0-9 - . _ ~` (so `+` is
    /// `%2B` and a space `%20`): how cursors, query names and values go into a URL.
    public static func encodeComponent(_ text: String) -> String {
        encodeComponent(bytes: Array(text.utf8))
    }

    /// `encodeComponent` of bytes that need not be UTF-8 (a decoded `%FF`).
    static func encodeComponent(bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        for byte in bytes {
            if isUnreserved(byte) {
                out.append(byte)
            } else {
                appendEscape(byte, to: &out)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Percent-encodes only the bytes that can never appear in a URI (controls,
    /// space, non-ASCII, `"<>\^`{|}`, a `%` that starts no escape, and `[`
    /// `]` outside an IPv6 host), leaving everything else exactly as given:
    /// how a next-page URL from a page or a `Link` header is made sendable
    /// without changing what it names. (`page[size]=5` goes out as
    /// `page%5Bsize%5D=5`, which servers read as the same name; left raw,
    /// the HTTP client would encode the whole query again, `%2B` included.)
    public static func encodeIllegal(_ url: String) -> String {
        let bytes = Array(url.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        let afterAuthority = authorityEnd(bytes)
        for (index, byte) in bytes.enumerated() {
            let legal: Bool
            switch byte {
            case UInt8(ascii: "%"):
                legal = index + 2 < bytes.count && isHex(bytes[index + 1]) && isHex(bytes[index + 2])
            case 0...0x20, 0x7F...0xFF:
                legal = false
            case UInt8(ascii: "["), UInt8(ascii: "]"):
                legal = index < afterAuthority
            default:
                legal = !"\"<>\\^`{|}".utf8.contains(byte)
            }
            if legal { out.append(byte) } else { appendEscape(byte, to: &out) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The index where the path starts in a URL with an authority
    /// (`scheme://host[:port]`), 0 in one without.
    private static func authorityEnd(_ bytes: [UInt8]) -> Int {
        let slashes = Array("//".utf8)
        let start: Int
        if bytes.starts(with: slashes) {
            start = 2
        } else if let colon = bytes.firstIndex(where: { "/?#:".utf8.contains($0) }), bytes[colon] == UInt8(ascii: ":"),
                  bytes[(colon + 1)...].starts(with: slashes) {
            start = colon + 3
        } else {
            return 0
        }
        return bytes[start...].firstIndex { "/?#".utf8.contains($0) } ?? bytes.count
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    private static func isHex(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "F"), UInt8(ascii: "a")...UInt8(ascii: "f"):
            return true
        default:
            return false
        }
    }

    private static func appendEscape(_ byte: UInt8, to out: inout [UInt8]) {
        let hex = Array("0123456789ABCDEF".utf8)
        out.append(contentsOf: [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
    }

    // MARK: Query items

    /// `url` with query items set: each item whose name is already in the
    /// query (compared percent-decoded: `$skip` is `%24skip`) replaces the
    /// first item of that name in place (later ones of that name are dropped), the others are appended in order. Names and
    /// values are encoded with `encodeComponent`; existing items are kept
    /// byte for byte. The fragment, which is never sent, is dropped.
    public static func settingQueryItems(_ items: [(name: String, value: String)], in url: String) -> String {
        var parts = parts(url)
        parts.fragment = nil
        guard !items.isEmpty else { return parts.text }
        var existing = parts.query.map { $0.split(separator: "&", omittingEmptySubsequences: false).map(String.init) } ?? []
        if existing == [""] { existing = [] }
        var appended: [String] = []
        for (name, value) in items {
            let encodedName = encodeComponent(name)
            let item = encodedName + "=" + encodeComponent(value)
            let wanted = Array(name.utf8)
            let matches = existing.indices.filter { percentDecoded(queryName(existing[$0])) == wanted }
            if let first = matches.first {
                existing[first] = item
                for index in matches.dropFirst().reversed() { existing.remove(at: index) }
            } else {
                appended.append(item)
            }
        }
        parts.query = (existing + appended).joined(separator: "&")
        return parts.text
    }

    /// Whether the query of `url` has an item named `name`. Names are
    /// compared percent-decoded, so `page[size]`, `page%5Bsize%5D` and
    /// `page%5bsize%5d` are one name, however the URL's author encoded it.
    public static func hasQueryItem(named name: String, in url: String) -> Bool {
        guard let query = parts(url).query else { return false }
        let wanted = Array(name.utf8)
        return query.split(separator: "&").contains { percentDecoded(queryName(String($0))) == wanted }
    }

    /// The value of the first query item of `url` named `name` (names
    /// compared as `hasQueryItem` does), percent-decoded; `nil` without one.
    public static func queryValue(_ name: String, in url: String) -> String? {
        guard let query = parts(url).query else { return nil }
        let wanted = Array(name.utf8)
        for item in query.split(separator: "&") where percentDecoded(queryName(String(item))) == wanted {
            guard let equals = item.firstIndex(of: "=") else { return "" }
            return String(decoding: percentDecoded(String(item[item.index(after: equals)...])), as: UTF8.self)
        }
        return nil
    }

    /// The bytes of `text` with each valid `%XX` escape decoded.
    static func percentDecoded(_ text: String) -> [UInt8] {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "%"), i + 2 < bytes.count, let high = hexValue(bytes[i + 1]), let low = hexValue(bytes[i + 2]) {
                out.append(high << 4 | low)
                i += 3
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return out
    }

    /// The value of one hex digit (either case); `nil` for any other byte.
    public static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// The (still encoded) name of a raw query item.
    static func queryName(_ item: String) -> String {
        guard let equals = item.firstIndex(of: "=") else { return item }
        return String(item[..<equals])
    }

    // MARK: Resolution

    /// Resolves a URI reference against a base URL (RFC 3986 §5.2). An
    /// absolute reference is returned unchanged.
    public static func resolve(_ reference: String, against base: String) -> String {
        let ref = parts(reference)
        if ref.scheme != nil { return reference }
        let baseParts = parts(base)
        var target = Parts(path: "")
        target.scheme = baseParts.scheme
        if ref.authority != nil {
            target.authority = ref.authority
            target.path = removeDotSegments(ref.path)
            target.query = ref.query
        } else {
            target.authority = baseParts.authority
            if ref.path.isEmpty {
                target.path = baseParts.path
                target.query = ref.query ?? baseParts.query
            } else {
                if ref.path.hasPrefix("/") {
                    target.path = removeDotSegments(ref.path)
                } else {
                    target.path = removeDotSegments(merge(base: baseParts, path: ref.path))
                }
                target.query = ref.query
            }
        }
        target.fragment = ref.fragment
        return target.text
    }

    private static func merge(base: Parts, path: String) -> String {
        if base.authority != nil && base.path.isEmpty { return "/" + path }
        guard let slash = base.path.lastIndex(of: "/") else { return path }
        return String(base.path[...slash]) + path
    }

    private static func removeDotSegments(_ path: String) -> String {
        var input = Substring(path)
        var output: [Substring] = []
        while !input.isEmpty {
            if input.hasPrefix("../") {
                input = input.dropFirst(3)
            } else if input.hasPrefix("./") {
                input = input.dropFirst(2)
            } else if input.hasPrefix("/./") {
                input = input.dropFirst(2)
            } else if input == "/." {
                input = "/"
            } else if input.hasPrefix("/../") {
                input = input.dropFirst(3)
                if !output.isEmpty { output.removeLast() }
            } else if input == "/.." {
                input = "/"
                if !output.isEmpty { output.removeLast() }
            } else if input == "." || input == ".." {
                input = ""
            } else {
                let start = input.hasPrefix("/") ? input.index(after: input.startIndex) : input.startIndex
                let end = input[start...].firstIndex(of: "/") ?? input.endIndex
                output.append(input[..<end])
                input = input[end...]
            }
        }
        return output.joined()
    }
}
