import JSONRPC
import Jansson

/// What one stdio peer has told the MCP adapter about itself: whether it
/// speaks MCP, through which revision, and how requests carry it.
///
/// MCP has two eras. Up to 2025-11-25 a session starts with `initialize`
/// (`protocolVersion`) and later requests rely on it. From 2026-07-28 there
/// is no handshake: each request carries the revision and the client's
/// capabilities in `params._meta`. Both are served on one connection.
final class MCPSession: @unchecked Sendable {
    /// The revisions reached through the `initialize` handshake, oldest first.
    static let handshakeVersions = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
    /// The revisions whose requests carry their own envelope.
    static let modernVersions = ["2026-07-28"]

    static let protocolVersionKey = "io.modelcontextprotocol/protocolVersion"
    static let clientCapabilitiesKey = "io.modelcontextprotocol/clientCapabilities"
    static let clientInfoKey = "io.modelcontextprotocol/clientInfo"
    static let logLevelKey = "io.modelcontextprotocol/logLevel"
    static let serverInfoKey = "io.modelcontextprotocol/serverInfo"

    /// How one request reaches the adapter.
    enum Era: Equatable {
        /// After `initialize`, at the negotiated revision.
        case handshake(String)
        /// With its own `_meta` envelope, at that revision.
        case modern(String)
    }

    private let lock = Lock()
    // Guarded by `lock`.
    private var negotiated: String?
    private var speaksMCP: Bool

    /// `mcp`: the process runs as `nextpage mcp`, so the peer speaks MCP from the start.
    init(mcp: Bool) {
        speaksMCP = mcp
    }

    /// Whether the peer speaks MCP (it sent MCP's `initialize` or a
    /// request with the envelope, or the process runs as `nextpage mcp`):
    /// only then are MCP notifications sent unasked (`list_changed`).
    var isMCP: Bool { lock.locked { speaksMCP } }

    /// The revision an `initialize` asking for `requested` gets: the same
    /// when it is a handshake revision, else the latest one.
    static func negotiate(_ requested: String?) -> String {
        guard let requested, handshakeVersions.contains(requested) else { return handshakeVersions.last! }
        return requested
    }

    /// Records a completed `initialize` at `version`.
    func initialized(at version: String) {
        lock.locked {
            negotiated = version
            speaksMCP = true
        }
    }

    /// The era of an MCP request, or the error MCP names when it has none:
    /// an envelope at a revision not served is -32022 (UnsupportedProtocolVersion),
    /// an envelope without the client's capabilities, or a request that
    /// neither follows `initialize` nor carries an envelope, is -32602.
    func era(of params: JSON?) throws(RPCError) -> Era {
        let meta = params?["_meta"].flatMap { $0.kind == .object ? $0 : nil }
        if let version = meta?[Self.protocolVersionKey] {
            guard let text = version.string else {
                throw .invalidParams(field: "_meta.\(Self.protocolVersionKey)", expected: "a protocol revision string")
            }
            guard Self.modernVersions.contains(text) else { throw Self.unsupported(text) }
            guard meta?[Self.clientCapabilitiesKey]?.kind == .object else {
                throw .invalidParams(
                    field: "_meta.\(Self.clientCapabilitiesKey)", expected: "the client's capabilities (an object), which every \(text) request carries")
            }
            lock.locked { speaksMCP = true }
            return .modern(text)
        }
        if let negotiated = lock.locked({ negotiated }) { return .handshake(negotiated) }
        throw .invalidParams(
            field: "_meta.\(Self.protocolVersionKey)",
            expected: "an MCP session: send initialize (with protocolVersion) first, or carry the \(Self.modernVersions.last!) envelope in each request's _meta")
    }

    /// -32022: the envelope names a revision this server does not serve.
    static func unsupported(_ requested: String) -> RPCError {
        RPCError(code: -32022, message: "Unsupported protocol version: \(requested)", data: .object([
            "supported": .array(modernVersions.map(RawJSON.string)), "requested": .string(requested),
        ]))
    }
}
