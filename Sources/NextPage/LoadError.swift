/// Why a page could not be loaded; each stage has its own case.
///
/// The server turns these into JSON-RPC errors (-32002, -32003, -32800, -32004).
public enum LoadError: Error, Sendable, Equatable {
    /// The source failed: network, status, timeout, missing file, command exit.
    case upstream(UpstreamFailure)
    /// The source answered with a page that is not understood.
    case undecodable(PageDecodingFailure)
    /// The load was cancelled (by the caller, `reset` or `load`); nothing landed.
    case cancelled
    /// The page shows that the definition cannot walk the source (an `auto`
    /// first page that matches no known way of paging): the field of the
    /// definition at fault and what was expected of it.
    case definition(field: String, expected: String)

    /// A one-line description for `lastError` and logs.
    public var message: String {
        switch self {
        case .upstream(let failure): return failure.message
        case .undecodable(let failure): return failure.message
        case .cancelled: return "cancelled"
        case .definition(let field, let expected): return "\(field): expected \(expected)"
        }
    }
}

/// The details of an upstream failure (JSON-RPC error -32002).
public struct UpstreamFailure: Error, Sendable, Equatable {
    /// HTTP status, when the source answered with one.
    public var status: Int?
    /// How many attempts were made.
    public var attempts: Int
    /// Whether trying again later may succeed.
    public var retryable: Bool
    public var message: String
    /// When trying again may succeed, in Unix seconds: the reset of a rate
    /// limit, or what `Retry-After` asked for, when that was too far away
    /// to wait for.
    public var retryAt: Double?

    public init(status: Int? = nil, attempts: Int = 1, retryable: Bool, message: String, retryAt: Double? = nil) {
        self.status = status
        self.attempts = attempts
        self.retryable = retryable
        self.message = message
        self.retryAt = retryAt
    }
}

/// The details of a page that could not be understood (JSON-RPC error -32003).
public struct PageDecodingFailure: Error, Sendable, Equatable {
    /// The JSON Pointer that named nothing or the wrong kind of value.
    public var pointer: String?
    /// Where jansson stopped, when the page is not JSON.
    public var line: Int?
    public var column: Int?
    public var message: String

    public init(pointer: String? = nil, line: Int? = nil, column: Int? = nil, message: String) {
        self.pointer = pointer
        self.line = line
        self.column = column
        self.message = message
    }
}
