/// RFC 6901 JSON Pointer syntax.
public enum JSONPointer {
    /// Splits a pointer into unescaped reference tokens.
    ///
    /// `""` is the whole document (no tokens); any other pointer must start
    /// with `/`. `~1` stands for `/` and `~0` for `~`; any other `~` escape is
    /// malformed and yields `nil`.
    public static func tokens(_ pointer: String) -> [String]? {
        if pointer.isEmpty { return [] }
        guard pointer.utf8.first == UInt8(ascii: "/") else { return nil }
        var tokens: [String] = []
        var token: [UInt8] = []
        for part in pointer.utf8.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            guard unescape(part, into: &token) else { return nil }
            tokens.append(String(decoding: token, as: UTF8.self))
        }
        return tokens
    }

    /// Replaces `token` with one reference token's text unescaped (`~1` is
    /// `/`, `~0` is `~`); false when it holds any other `~` escape.
    static func unescape(_ part: some Sequence<UInt8>, into token: inout [UInt8]) -> Bool {
        token.removeAll(keepingCapacity: true)
        var iterator = part.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "~") else { token.append(byte); continue }
            switch iterator.next() {
            case UInt8(ascii: "0"): token.append(UInt8(ascii: "~"))
            case UInt8(ascii: "1"): token.append(UInt8(ascii: "/"))
            default: return false
            }
        }
        return true
    }

    /// An RFC 6901 array index token: `0` or digits without a leading zero.
    static func arrayIndex(_ token: some Collection<UInt8>) -> Int? {
        guard let first = token.first, token.count <= 18 else { return nil }
        if first == UInt8(ascii: "0") && token.count > 1 { return nil }
        var value = 0
        for byte in token {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    /// Whether a pointer is well-formed.
    public static func isValid(_ pointer: String) -> Bool { tokens(pointer) != nil }
}
