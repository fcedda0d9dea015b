/// Base64 (RFC 4648 §4, with padding), for `Authorization: Basic`.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let count = min(3, bytes.count - index)
            let b0 = UInt32(bytes[index])
            let b1 = count > 1 ? UInt32(bytes[index + 1]) : 0
            let b2 = count > 2 ? UInt32(bytes[index + 2]) : 0
            let triple = b0 << 16 | b1 << 8 | b2
            out.append(alphabet[Int(triple >> 18 & 63)])
            out.append(alphabet[Int(triple >> 12 & 63)])
            out.append(count > 1 ? alphabet[Int(triple >> 6 & 63)] : UInt8(ascii: "="))
            out.append(count > 2 ? alphabet[Int(triple & 63)] : UInt8(ascii: "="))
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}
