import Jansson
import JSONRPC
import Logging
import NextPage

extension Params {
    /// MCP's list `cursor`: absent, or a `nextCursor` this server gave.
    func cursor() throws(RPCError) -> Int {
        guard let text = try string("cursor") else { return 0 }
        guard let offset = Int(text), offset >= 0, String(offset) == text else {
            throw .invalidParams(field: "cursor", expected: "a nextCursor of an earlier list")
        }
        return offset
    }

    /// A tool call's `arguments`: an object (absent or null: none) whose
    /// members are among `allowed`, with `defaults` added for those left out.
    func arguments(allowed: Set<String>, defaults: [(String, RawJSON)]) throws(RPCError) -> JSON {
        let given = object?["arguments"].flatMap { $0.isNull ? nil : $0 }
        if let given, given.kind != .object { throw .invalidParams(field: "arguments", expected: "an object") }
        let arguments = given?.deepCopy() ?? JSON.object()
        for (key, _) in arguments.members where !allowed.contains(key) {
            let names = allowed.sorted().joined(separator: ", ")
            throw .invalidParams(field: "arguments.\(key)", expected: names.isEmpty ? "no arguments" : "one of \(names)")
        }
        for (key, value) in defaults where arguments[key] == nil {
            guard let parsed = try? JSON.parse(value.bytes) else { continue }
            arguments.set(key, parsed)
        }
        return arguments
    }
}

/// Turns the pages a tool call lands into MCP's `notifications/progress`,
/// when the call asked for them (`_meta.progressToken`): `progress` is the
/// collection's items so far, `message` says which page.
final class MCPProgress: Sendable {
    let token: RawJSON?
    let notify: @Sendable (_ method: String, _ params: RawJSON?) -> Void

    init(token: RawJSON?, notify: @escaping @Sendable (_ method: String, _ params: RawJSON?) -> Void) {
        self.token = token
        self.notify = notify
    }

    /// Reports one Page (a reply or a `page` notification).
    func page(_ page: RawJSON) {
        guard let token else { return }
        // The counts sit after the items: found by the scanner, not a parse of the page.
        let (count, number, collection) = page.bytes.withUnsafeBufferPointer { bytes in
            (Self.integer(at: "count", in: bytes), Self.integer(at: "page", in: bytes), Self.text(at: "collection", in: bytes))
        }
        guard let count else { return }
        let message = "\(collection ?? "collection") page \(number.map(String.init) ?? "?"): \(count) items so far"
        notify("notifications/progress", .object([
            "progressToken": token, "progress": .integer(count), "message": .string(message),
        ]))
    }

    private static func integer(at key: String, in bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard case .value(let range) = JSONScanner.lookup(at: [key], in: bytes) else { return nil }
        return Int(String(decoding: bytes[range], as: UTF8.self))
    }

    private static func text(at key: String, in bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard case .value(let range) = JSONScanner.lookup(at: [key], in: bytes) else { return nil }
        return (try? JSON.parse(Array(bytes[range])))?.string
    }
}

/// Collections as MCP resources: `nextpage://collections/NAME`, the name
/// percent-encoded outside RFC 3986's unreserved characters.
enum MCPResources {
    static let prefix = "nextpage://collections/"

    static let template = RawJSON.object([
        "uriTemplate": .string(prefix + "{name}"),
        "name": .string("collection"),
        "title": .string("A collection"),
        "description": .string("A collection's State and the items it has loaded so far."),
        "mimeType": .string("application/json"),
    ])

    static func uri(_ name: String) -> String {
        var out = prefix
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 15, radix: 16, uppercase: true)
            }
        }
        return out
    }

    /// The collection a URI names, or nil when it names none (any form of
    /// percent-encoding is read).
    static func collectionName(_ uri: String) -> String? {
        guard uri.hasPrefix(prefix) else { return nil }
        let encoded = Array(uri.utf8.dropFirst(prefix.utf8.count))
        var bytes: [UInt8] = []
        var index = 0
        while index < encoded.count {
            if encoded[index] == UInt8(ascii: "%") {
                guard index + 2 < encoded.count,
                      let value = UInt8(String(decoding: encoded[index + 1...index + 2], as: UTF8.self), radix: 16) else { return nil }
                bytes.append(value)
                index += 3
            } else {
                bytes.append(encoded[index])
                index += 1
            }
        }
        guard !bytes.isEmpty, let name = String(validating: bytes, as: UTF8.self) else { return nil }
        return name
    }

    static func entry(_ name: String) -> RawJSON {
        .object([
            "uri": .string(uri(name)),
            "name": .string(name),
            "description": .string("The collection \(name): its State and the items loaded so far."),
            "mimeType": .string("application/json"),
        ])
    }
}

/// MCP's log levels (RFC 5424's), and swift-log's counterparts.
enum MCPLogLevel: String, CaseIterable {
    case debug, info, notice, warning, error, critical, alert, emergency

    /// The swift-log level from which lines are sent.
    var loggerLevel: Logger.Level {
        switch self {
        case .debug: return .debug
        case .info: return .info
        case .notice: return .notice
        case .warning: return .warning
        case .error: return .error
        case .critical, .alert, .emergency: return .critical
        }
    }

    /// The MCP level of a swift-log line (`trace` is sent as `debug`).
    init(_ level: Logger.Level) {
        switch level {
        case .trace, .debug: self = .debug
        case .info: self = .info
        case .notice: self = .notice
        case .warning: self = .warning
        case .error: self = .error
        case .critical: self = .critical
        }
    }
}
