import Jansson

/// A JSON-RPC error object: an open set of codes (like sourcekit-lsp's
/// `ErrorCode`), a message and optional `data`.
public struct RPCError: Error, Sendable, Equatable {
    public var code: Int
    public var message: String
    public var data: RawJSON?

    public init(code: Int, message: String, data: RawJSON? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    public static let parseErrorCode = -32700
    public static let invalidRequestCode = -32600
    public static let methodNotFoundCode = -32601
    public static let invalidParamsCode = -32602
    public static let internalErrorCode = -32603
    public static let requestCancelledCode = -32800
    public static let shuttingDownCode = -32801

    /// -32700, with where jansson stopped.
    public static func parseError(_ error: JSONParseError) -> RPCError {
        RPCError(code: parseErrorCode, message: "Parse error: \(error.text)", data: .object([
            "line": .integer(error.line), "column": .integer(error.column),
            "position": .integer(error.position), "text": .string(error.text),
        ]))
    }

    /// -32700 for input that ended inside an LSP message: `data` says where
    /// it ended, counted as jansson counts (line and column of the body
    /// bytes that arrived, columns in characters, position in bytes), or
    /// -1 for a line and column that are not known (no body was kept).
    public static func truncated(expected: Int?, received: Int, body: [UInt8]) -> RPCError {
        let what = expected.map { "\(received) of \($0) bytes" } ?? "\(received) bytes of headers"
        let text = "input ended inside a message (\(what))"
        var line = -1, column = -1, position = 0
        if expected != nil {
            position = received
            if !body.isEmpty || received == 0 {
                line = 1
                column = 0
                for byte in body {
                    if byte == UInt8(ascii: "\n") {
                        line += 1
                        column = 0
                    } else if byte & 0xC0 != 0x80 {
                        column += 1
                    }
                }
            }
        }
        return RPCError(code: parseErrorCode, message: "Parse error: \(text)", data: .object([
            "line": .integer(line), "column": .integer(column), "position": .integer(position), "text": .string(text),
        ]))
    }

    /// -32600, with what is wrong.
    public static func invalidRequest(_ reason: String) -> RPCError {
        RPCError(code: invalidRequestCode, message: "Invalid Request: \(reason)", data: .string(reason))
    }

    /// -32601, naming the method.
    public static func methodNotFound(_ method: String) -> RPCError {
        RPCError(code: methodNotFoundCode, message: "Method not found: \(method)", data: .object(["method": .string(method)]))
    }

    /// -32602, naming the field and what was expected.
    public static func invalidParams(field: String, expected: String) -> RPCError {
        RPCError(code: invalidParamsCode, message: "Invalid params: \(field): expected \(expected)",
                 data: .object(["field": .string(field), "expected": .string(expected)]))
    }

    /// -32603.
    public static func internalError(_ message: String) -> RPCError {
        RPCError(code: internalErrorCode, message: "Internal error: \(message)")
    }

    /// -32800.
    public static let cancelled = RPCError(code: requestCancelledCode, message: "Request cancelled")

    /// -32801.
    public static let shuttingDown = RPCError(code: shuttingDownCode, message: "Server is shutting down")

    /// The error object as JSON.
    public var json: RawJSON {
        .object(["code": .integer(code), "message": .string(message), "data": data])
    }
}
