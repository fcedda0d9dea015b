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
        for part in pointer.utf8.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            var token: [UInt8] = []
            token.reserveCapacity(part.count)
            var iterator = part.makeIterator()
            while let byte = iterator.next() {
                guard byte == UInt8(ascii: "~") else { token.append(byte); continue }
                switch iterator.next() {
                case UInt8(ascii: "0"): token.append(UInt8(ascii: "~"))
                case UInt8(ascii: "1"): token.append(UInt8(ascii: "/"))
                default: return nil
                }
            }
            tokens.append(String(decoding: token, as: UTF8.self))
        }
        return tokens
    }

    /// Whether a pointer is well-formed.
    public static func isValid(_ pointer: String) -> Bool { tokens(pointer) != nil }

    /// An array index token: `0` or digits without a leading zero.
    static func arrayIndex(_ token: String) -> Int? {
        let utf8 = token.utf8
        guard let first = utf8.first, utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        if first == UInt8(ascii: "0") && utf8.count > 1 { return nil }
        return Int(token)
    }
}
