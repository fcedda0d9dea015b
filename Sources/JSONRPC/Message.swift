import Jansson

/// A request id (string, number or null), kept as compact JSON so replies
/// echo it with its type: strings and integers as they arrived, a number
/// with a fraction or exponent in the shortest form that reads back as the
/// same double (`0.1` stays `0.1`; `1e3` becomes `1000.0`).
public struct RequestID: Hashable, Sendable, CustomStringConvertible {
    /// The compact JSON of the id.
    public let raw: RawJSON

    public init(raw: RawJSON) { self.raw = raw }

    public static let null = RequestID(raw: .null)

    /// An id from a JSON value: only strings, numbers and null are ids.
    public init?(_ json: JSON) {
        switch json.kind {
        // An integer is written here, not by jansson's dump (printf).
        case .integer: self.raw = .integer(json.integer ?? 0)
        case .string, .null: self.raw = RawJSON(json)
        case .real: self.raw = RawJSON(trusted: Array((json.number ?? 0).description.utf8))
        default: return nil
        }
    }

    public var description: String { raw.description }
}

/// A valid JSON-RPC request or notification.
public struct RPCRequest: Sendable {
    /// `nil` for a notification (no `id` member); `.null` for `"id": null`, which is a request.
    public let id: RequestID?
    public let method: String
    /// `params` when present: an object or an array.
    public let params: JSON?
    /// A `progressToken` member beside `params` (rather than inside it),
    /// when the request has one.
    public let progressToken: JSON?

    public init(id: RequestID?, method: String, params: JSON?, progressToken: JSON? = nil) {
        self.id = id
        self.method = method
        self.params = params
        self.progressToken = progressToken
    }

    public var isNotification: Bool { id == nil }
}

/// One incoming message, classified by the JSON-RPC 2.0 rules.
public enum IncomingMessage: Sendable {
    /// Not JSON at all.
    case parseError(JSONParseError)
    /// A single entry (request, notification or invalid object).
    case single(Entry)
    /// A non-empty batch of entries.
    case batch([Entry])

    /// One element of a message.
    public enum Entry: Sendable {
        case request(RPCRequest)
        /// Not a valid request object; answered with -32600, with its `id`
        /// when it has a valid one (JSON-RPC 2.0: the id is null only when
        /// it cannot be detected), else `id: null`.
        case invalid(String, id: RequestID? = nil)
    }

    /// The most members a batch may have. Each member runs as a request of
    /// its own and the batch's reply is held until all are done, so a larger
    /// batch (a few megabytes of `[1,1,...]`) is refused whole, with one
    /// -32600 error, instead of taking gigabytes.
    public static let maxBatchMembers = 10_000

    /// Parses and classifies a message body.
    public static func parse(_ body: [UInt8]) -> IncomingMessage {
        let json: JSON
        do {
            json = try JSON.parse(body)
        } catch {
            return .parseError(error)
        }
        if json.kind == .array {
            let count = json.count
            if count == 0 { return .single(.invalid("empty batch")) }
            if count > maxBatchMembers {
                return .single(.invalid("a batch of \(count) members; at most \(maxBatchMembers) are allowed"))
            }
            let elements = json.elements
            return .batch(elements.map(entry))
        }
        return .single(entry(json))
    }

    static func entry(_ json: JSON) -> Entry {
        guard json.kind == .object else { return .invalid("a request must be an object") }
        var id: RequestID?
        if let idValue = json["id"] {
            guard let valid = RequestID(idValue) else { return .invalid("\"id\" must be a string, a number or null") }
            id = valid
        }
        guard json["jsonrpc"]?.string == "2.0" else { return .invalid("\"jsonrpc\" must be \"2.0\"", id: id) }
        guard let methodValue = json["method"] else { return .invalid("\"method\" is missing", id: id) }
        guard let method = methodValue.string else { return .invalid("\"method\" must be a string", id: id) }
        // `"params": null` is no params (Emacs's jsonrpc.el sends `shutdown` and `exit` so).
        let params = json["params"].flatMap { $0.isNull ? nil : $0 }
        if let params, params.kind != .object && params.kind != .array {
            return .invalid("\"params\" must be an object or an array", id: id)
        }
        return .request(RPCRequest(id: id, method: method, params: params, progressToken: json["progressToken"]))
    }
}

/// Builders for outgoing messages.
public enum OutgoingMessage {
    private static let version = RawJSON.string("2.0")
    private static let resultHead = Array(#"{"jsonrpc":"2.0","id":"#.utf8)
    private static let resultMiddle = Array(#","result":"#.utf8)

    /// `{"jsonrpc":"2.0","id":ID,"result":RESULT}`, with the result copied once.
    public static func result(id: RequestID, _ result: RawJSON) -> RawJSON {
        var out: [UInt8] = []
        out.reserveCapacity(resultHead.count + id.raw.bytes.count + resultMiddle.count + result.bytes.count + 1)
        out.append(contentsOf: resultHead)
        out.append(contentsOf: id.raw.bytes)
        out.append(contentsOf: resultMiddle)
        out.append(contentsOf: result.bytes)
        out.append(UInt8(ascii: "}"))
        return RawJSON(trusted: out)
    }

    public static func error(id: RequestID?, _ error: RPCError) -> RawJSON {
        .object(["jsonrpc": version, "id": (id ?? .null).raw, "error": error.json])
    }

    public static func notification(method: String, params: RawJSON?) -> RawJSON {
        .object(["jsonrpc": version, "method": .string(method), "params": params])
    }
}
