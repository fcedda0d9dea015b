import Jansson

/// An error reply from nextpage: its JSON-RPC `code`, `message` and `data`
/// (README, "Methods"; `Schemas/openrpc.json`), and the method called.
///
///     do { _ = try await client.status("nope") }
///     catch let error as RPCError where error.code == .unknownCollection { print(error.data?["known"] ?? "") }
public struct RPCError: Error, Sendable, CustomStringConvertible {
    /// A JSON-RPC error code; open, so that a code this client does not name still reads.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// -32700: the server could not parse a message as JSON.
        public static let parseError = Code(rawValue: -32700)
        /// -32600: not a valid request object.
        public static let invalidRequest = Code(rawValue: -32600)
        /// -32601: no such method; `data` is `{"method"}`.
        public static let methodNotFound = Code(rawValue: -32601)
        /// -32602: bad params; `data` is `{"field", "expected"}`.
        public static let invalidParams = Code(rawValue: -32602)
        /// -32603: the server failed in a way it did not foresee.
        public static let internalError = Code(rawValue: -32603)
        /// -32001: no collection by that name; `data` is `{"collection", "known"}`.
        public static let unknownCollection = Code(rawValue: -32001)
        /// -32002: the source failed; `data` is `{"collection", "status"?, "attempts", "retryable", "message"}`.
        public static let upstreamFailed = Code(rawValue: -32002)
        /// -32003: a page was not JSON or lacked a pointer; `data` is `{"collection", "pointer"?, "line"?, "column"?}`.
        public static let pageNotUnderstood = Code(rawValue: -32003)
        /// -32004: `define` got an invalid collection; `data` is `{"field", "expected"}`.
        public static let invalidDefinition = Code(rawValue: -32004)
        /// -32800: cancelled (task cancellation, `reset` or `load`).
        public static let requestCancelled = Code(rawValue: -32800)
        /// -32801: the server is shutting down.
        public static let shuttingDown = Code(rawValue: -32801)

        public var description: String { String(rawValue) }
    }

    /// What went wrong, by number (README, "Methods").
    public let code: Code
    /// The server's description.
    public let message: String
    /// The error's `data`, when it has one.
    public let data: JSON?
    /// The method of the request this answers.
    public let method: String

    public init(code: Code, message: String, data: JSON?, method: String) {
        self.code = code
        self.message = message
        self.data = data
        self.method = method
    }

    /// The error of a reply's `error` member.
    init(reply error: JSON, method: String) {
        let code = error["code"]?.integer.map { Int($0) } ?? Code.internalError.rawValue
        self.init(code: Code(rawValue: code), message: error["message"]?.string ?? "", data: error["data"], method: method)
    }

    public var description: String { "\(method): \(message) (\(code))" }
}
