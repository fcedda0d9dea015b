/// A compact JSON text held as bytes, ready to be written out.
///
/// Replies are assembled from `RawJSON` pieces so that items read from a
/// page are forwarded as the bytes they were dumped to, not rebuilt. Every
/// constructor produces valid compact JSON without raw newlines.
public struct RawJSON: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// The encoded bytes.
    public var bytes: [UInt8]

    /// Wraps bytes the caller guarantees are one valid compact JSON text.
    public init(trusted bytes: [UInt8]) { self.bytes = bytes }

    /// The compact encoding of a jansson value.
    public init(_ json: JSON) { self.bytes = json.dump() }

    public static let null = RawJSON(trusted: Array("null".utf8))
    public static let `true` = RawJSON(trusted: Array("true".utf8))
    public static let `false` = RawJSON(trusted: Array("false".utf8))
    public static let emptyArray = RawJSON(trusted: Array("[]".utf8))

    public static func bool(_ value: Bool) -> RawJSON { value ? .true : .false }
    public static func integer(_ value: Int) -> RawJSON { RawJSON(trusted: Array(String(value).utf8)) }
    public static func integer(_ value: Int64) -> RawJSON { RawJSON(trusted: Array(String(value).utf8)) }

    public static func string(_ value: String) -> RawJSON {
        var out: [UInt8] = []
        out.reserveCapacity(value.utf8.count + 2)
        appendString(value, to: &out)
        return RawJSON(trusted: out)
    }

    /// This object with `members` added after its own (`nil` values left
    /// out); the caller keeps the keys distinct. Not an object: unchanged.
    public func merging(_ members: [(String, RawJSON?)]) -> RawJSON {
        guard bytes.first == UInt8(ascii: "{"), bytes.last == UInt8(ascii: "}") else { return self }
        let added = RawJSON.object(members).bytes.dropFirst().dropLast()
        guard !added.isEmpty else { return self }
        var out = Array(bytes.dropLast())
        if out.count > 1 { out.append(UInt8(ascii: ",")) }
        out.append(contentsOf: added)
        out.append(UInt8(ascii: "}"))
        return RawJSON(trusted: out)
    }

    /// An object with members in the given order; `nil` values are left out.
    public static func object(_ members: KeyValuePairs<String, RawJSON?>) -> RawJSON {
        object(members.map { ($0.key, $0.value) })
    }

    /// An object with members in the given order; `nil` values are left out.
    public static func object(_ members: [(String, RawJSON?)]) -> RawJSON {
        // Sized once: a page's items are copied into the object a single time.
        var size = 2
        for (key, value) in members {
            guard let value else { continue }
            size += key.utf8.count + 4 + value.bytes.count
        }
        var out: [UInt8] = []
        out.reserveCapacity(size)
        out.append(UInt8(ascii: "{"))
        var first = true
        for (key, value) in members {
            guard let value else { continue }
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            appendString(key, to: &out)
            out.append(UInt8(ascii: ":"))
            out.append(contentsOf: value.bytes)
        }
        out.append(UInt8(ascii: "}"))
        return RawJSON(trusted: out)
    }

    /// An array of the given elements.
    public static func array<C: Collection>(_ elements: C) -> RawJSON where C.Element == RawJSON {
        var size = 2
        for element in elements { size += element.bytes.count + 1 }
        var out: [UInt8] = []
        out.reserveCapacity(size)
        out.append(UInt8(ascii: "["))
        var first = true
        for element in elements {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            out.append(contentsOf: element.bytes)
        }
        out.append(UInt8(ascii: "]"))
        return RawJSON(trusted: out)
    }

    /// Parses the bytes back into a jansson value.
    public func parsed() throws(JSONParseError) -> JSON { try JSON.parse(bytes) }

    public var description: String { String(decoding: bytes, as: UTF8.self) }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Appends `value` as a JSON string literal.
    public static func appendString(_ value: String, to out: inout [UInt8]) {
        let hex = hexDigits
        out.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [92, 34])
            case UInt8(ascii: "\\"): out.append(contentsOf: [92, 92])
            case 0x0A: out.append(contentsOf: [92, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [92, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [92, UInt8(ascii: "t")])
            case 0..<0x20, 0x7F:
                out.append(contentsOf: [92, UInt8(ascii: "u"), 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
