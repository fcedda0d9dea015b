import Jansson
import JSONRPC
import Logging
import NextPage

/// Serves the Model Context Protocol (docs/mcp.md) over the same connection as
/// nextpage's own methods, by mapping MCP's requests onto `NextPageService`:
/// a tool call is the service method of the same name, run as that method
/// is, its result wrapped as MCP wants it; a resource is a collection. Every
/// other request (nextpage's own methods) goes to the service unchanged.
///
/// Nothing here pages or keeps collections: it translates envelopes,
/// errors and notifications, and nothing more.
public final class MCPAdapter: RefusingRPCHandler {
    let service: NextPageService
    let session: MCPSession
    /// Whether the `define` tool is offered (`--allow-define`).
    let allowsDefine: Bool
    let logger: Logger

    /// Entries of `tools/list` and `resources/list` per page (MCP's `cursor` / `nextCursor`).
    static let listPageSize = 100
    /// Collections named in a tool's description, at most.
    static let namesInDescriptions = 20

    /// An adapter in front of `service`; `mcp`: the process runs as
    /// `nextpage mcp` (the peer speaks MCP from its first message);
    /// `allowDefine`: offer the `define` tool.
    public init(service: NextPageService, mcp: Bool = false, allowDefine: Bool = false, logger: Logger) {
        self.service = service
        self.session = MCPSession(mcp: mcp)
        self.allowsDefine = allowDefine
        self.logger = logger
    }

    /// The tools of the embedded OpenRPC document, built once, when an MCP
    /// request first needs them (a peer that never speaks MCP never pays for
    /// parsing the document and building the tools).
    static let catalog = MCPToolCatalog(openRPC: NextPageService.openRPCJSON)

    /// The tools offered, from `catalog`.
    var tools: MCPToolCatalog { Self.catalog }

    public func admitOrThrow(_ request: RPCRequest, context: RPCContext) async throws(RPCError) -> RPCWork {
        let method = request.method
        if method.hasPrefix("notifications/") {
            // What a client tells (initialized, roots changed, ...): nothing to do.
            // Cancellation is the connection's (`notifications/cancelled`).
            // Sent with an id it is answered: with the 2026-07-28 envelope as
            // every result of that revision is (complete), else with null.
            let era = request.id == nil ? nil : try? session.era(of: request.params)
            guard case .modern = era else { return { @Sendable in .null } }
            let result = decorate(.object([]), era: era)
            return { @Sendable in result }
        }
        switch method {
        case "initialize":
            let version = request.params?["protocolVersion"]
            guard version?.string != nil || (session.isMCP && version == nil) else { break }
            let negotiated = MCPSession.negotiate(version?.string)
            session.initialized(at: negotiated)
            let result = try await initializeResult(version: negotiated)
            return { @Sendable in result }
        case "server/discover":
            return try await discover(request)
        case "ping":
            let era = try? session.era(of: request.params)
            let result = decorate(.object([]), era: era)
            return { @Sendable in result }
        case "tools/list", "tools/call", "resources/list", "resources/read", "resources/templates/list", "logging/setLevel":
            let era = try session.era(of: request.params)
            return try await admitMCP(method, request, era: era, context: context)
        case "define":
            // nextpage's own `define`: an MCP peer hears that the lists changed.
            let work = await service.admit(request, context: context)
            return { @Sendable [self] in
                let result = try await work()
                announceListsChanged(context)
                return result
            }
        default:
            break
        }
        return await service.admit(request, context: context)
    }

    private func admitMCP(_ method: String, _ request: RPCRequest, era: MCPSession.Era, context: RPCContext) async throws(RPCError) -> RPCWork {
        let params = try Params(request)
        switch method {
        case "tools/list":
            let result = try await listTools(cursor: params.cursor(), era: era)
            return { @Sendable in result }
        case "tools/call":
            return try await callTool(request, params, era: era, context: context)
        case "resources/list":
            let result = try await listResources(cursor: params.cursor(), era: era)
            return { @Sendable in result }
        case "resources/templates/list":
            let result = decorate(.object(["resourceTemplates": .array([MCPResources.template])]), era: era, cacheable: true)
            return { @Sendable in result }
        case "resources/read":
            return try await readResource(params, era: era)
        case "logging/setLevel":
            try setLevel(params, context: context)
            let result = decorate(.object([]), era: era)
            return { @Sendable in result }
        default:
            throw RPCError.methodNotFound(method)
        }
    }

    // MARK: Lifecycle

    private func initializeResult(version: String) async throws(RPCError) -> RawJSON {
        .object([
            "protocolVersion": .string(version),
            "capabilities": Self.capabilities,
            "serverInfo": Self.serverInfo,
            "instructions": .string(await instructions()),
        ])
    }

    /// `server/discover` (2026-07-28): the revisions served with an
    /// envelope, the capabilities and who this is.
    private func discover(_ request: RPCRequest) async throws(RPCError) -> RPCWork {
        let meta = request.params?["_meta"]
        if let requested = meta?[MCPSession.protocolVersionKey] {
            guard let text = requested.string else {
                throw .invalidParams(field: "_meta.\(MCPSession.protocolVersionKey)", expected: "a protocol revision string")
            }
            guard MCPSession.modernVersions.contains(text) else { throw MCPSession.unsupported(text) }
        }
        let result = decorate(.object([
            "supportedVersions": .array(MCPSession.modernVersions.map(RawJSON.string)),
            "capabilities": Self.capabilities,
            "serverInfo": Self.serverInfo,
            "instructions": .string(await instructions()),
        ]), era: .modern(MCPSession.modernVersions.last!), cacheable: true)
        return { @Sendable in result }
    }

    static let capabilities = RawJSON.object([
        "tools": .object(["listChanged": .true]),
        "resources": .object(["listChanged": .true]),
        "logging": .object([]),
    ])

    static let serverInfo = RawJSON.object(["name": .string("nextpage"), "version": .string(NextPageService.version)])

    /// What an agent should know to use the tools well.
    private func instructions() async -> String {
        let names = await service.registry.names()
        let listed = names.prefix(Self.namesInDescriptions).joined(separator: ", ") + (names.count > Self.namesInDescriptions ? ", ..." : "")
        return """
            nextpage pages through paginated sources (APIs, files, commands) one page at a time, \
            keeping each collection's place. Call loadNext with a collection to get its next page \
            (items, hasNext, lastId); loadAll to page on to the end (at most maxItems, \(loadAllDefault) by default \
            here); items to read again what was loaded; status to see where a collection stands; \
            reset or load to start over. Pass fields (JSON Pointers such as "/title") to get only \
            the members you need. Each collection is also a resource, nextpage://collections/NAME. \
            Collections: \(listed.isEmpty ? "none" : listed).
            """
    }

    private var loadAllDefault: String {
        tools["loadAll"]?.defaults.first { $0.0 == "maxItems" }.map { $0.1.description } ?? "no limit"
    }

    // MARK: Tools

    private func offered(_ tool: MCPToolCatalog.Tool) -> Bool {
        !tool.requiresAllowDefine || allowsDefine
    }

    private func listTools(cursor: Int, era: MCPSession.Era) async throws(RPCError) -> RawJSON {
        let offered = tools.tools.filter(offered)
        let names = await service.registry.names()
        let listed = names.prefix(Self.namesInDescriptions).joined(separator: ", ") + (names.count > Self.namesInDescriptions ? ", ..." : "")
        let page = try Self.page(of: offered, from: cursor)
        let entries = page.entries.map { tool -> RawJSON in
            var description = tool.description
            if tool.takesCollection { description += "\n\nCollections: \(listed.isEmpty ? "none" : listed)." }
            return .object([
                "name": .string(tool.name),
                "title": tool.title.map(RawJSON.string),
                "description": .string(description),
                "inputSchema": tool.inputSchema,
                "outputSchema": tool.outputSchema,
                "annotations": tool.annotations,
            ])
        }
        return decorate(.object([
            "tools": .array(entries),
            "nextCursor": page.next.map { .string(String($0)) },
        ]), era: era, cacheable: true)
    }

    private func callTool(_ request: RPCRequest, _ params: Params, era: MCPSession.Era, context: RPCContext) async throws(RPCError) -> RPCWork {
        let name = try params.requiredString("name")
        guard let tool = tools[name], offered(tool) else {
            let known = tools.tools.filter(offered).map(\.name)
            throw .invalidParams(field: "name", expected: "a tool of this server (\(known.joined(separator: ", "))); got \"\(name)\"")
        }
        let arguments = try params.arguments(allowed: tool.parameters, defaults: tool.defaults)
        let progressToken = try params.progressToken("progressToken")
        // The method runs as it would when called by name, its notifications
        // turned into MCP's: a page that lands is progress, when asked for.
        let inner = RPCRequest(id: request.id, method: tool.name, params: arguments)
        let progress = MCPProgress(token: progressToken, notify: context.notify)
        let innerContext = RPCContext(
            id: request.id, notify: { method, params in if method == "page", let params { progress.page(params) } },
            waitForOutputRoom: context.waitForOutputRoom, cancellation: context.cancellation)
        let work = await service.admit(inner, context: innerContext)
        return { @Sendable [self] in
            let result: RawJSON
            do {
                result = try await work()
            } catch let error as RPCError {
                // Arguments that do not fit, and the server's own state, stay
                // JSON-RPC errors; so does the end of a call its client
                // cancelled (which the connection leaves unanswered).
                if [RPCError.invalidParamsCode, RPCError.shuttingDownCode, RPCError.internalErrorCode].contains(error.code) || Task.isCancelled {
                    throw error
                }
                return decorate(Self.toolError(error), era: era)
            }
            if tool.name == "load" || tool.name == "loadNext" { progress.page(result) }
            if tool.name == "define" { announceListsChanged(context) }
            let structured = tool.resultMember.map { RawJSON.object([$0: result]) } ?? result
            return decorate(.object([
                "content": .array([.object(["type": .string("text"), "text": .string(String(decoding: result.bytes, as: UTF8.self))])]),
                "structuredContent": structured,
                "isError": .false,
            ]), era: era)
        }
    }

    /// A failed call as MCP wants it: a result the model can read, with the
    /// JSON-RPC error (docs/methods.md, Errors) as its structured content.
    static func toolError(_ error: RPCError) -> RawJSON {
        .object([
            "content": .array([.object(["type": .string("text"), "text": .string(error.message)])]),
            "structuredContent": error.json,
            "isError": .true,
        ])
    }

    /// Tells an MCP peer that the tools (whose descriptions name the
    /// collections) and the resources changed.
    private func announceListsChanged(_ context: RPCContext) {
        guard session.isMCP else { return }
        context.notify("notifications/tools/list_changed", nil)
        context.notify("notifications/resources/list_changed", nil)
    }

    // MARK: Resources

    private func listResources(cursor: Int, era: MCPSession.Era) async throws(RPCError) -> RawJSON {
        let names = await service.registry.names()
        let page = try Self.page(of: names, from: cursor)
        return decorate(.object([
            "resources": .array(page.entries.map(MCPResources.entry)),
            "nextCursor": page.next.map { .string(String($0)) },
        ]), era: era, cacheable: true)
    }

    private func readResource(_ params: Params, era: MCPSession.Era) async throws(RPCError) -> RPCWork {
        let uri = try params.requiredString("uri")
        guard let name = MCPResources.collectionName(uri), let snapshot = await service.snapshot(name) else {
            // Resource not found is -32602 (as from MCP 2026-07-28; earlier
            // revisions suggested -32002, which is nextpage's upstream failure).
            let known = await service.registry.names().prefix(Self.namesInDescriptions).map(MCPResources.uri)
            throw .invalidParams(field: "uri", expected: "the URI of a collection (\(known.joined(separator: ", "))); got \(uri)")
        }
        let result = decorate(.object([
            "contents": .array([.object([
                "uri": .string(uri), "mimeType": .string("application/json"),
                "text": .string(String(decoding: snapshot.bytes, as: UTF8.self)),
            ])]),
        ]), era: era, cacheable: true)
        return { @Sendable in result }
    }

    // MARK: Logging

    private func setLevel(_ params: Params, context: RPCContext) throws(RPCError) {
        let name = try params.requiredString("level")
        guard let level = MCPLogLevel(rawValue: name) else {
            throw .invalidParams(field: "level", expected: "one of \(MCPLogLevel.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let notify = context.notify
        LogForwarding.shared.start(level: level.loggerLevel) { level, message, metadata in
            var data: [(String, RawJSON?)] = [("message", .string(message))]
            for (key, value) in metadata where key != "message" { data.append((key, .string(value))) }
            notify("notifications/message", .object([
                "level": .string(MCPLogLevel(level).rawValue), "logger": .string("nextpage"), "data": .object(data),
            ]))
        }
    }

    // MARK: Results

    /// A result as its era wants it: from 2026-07-28 every result says it is
    /// complete and who answered, and lists say how long they may be cached
    /// (not at all: collections change at run time).
    func decorate(_ result: RawJSON, era: MCPSession.Era?, cacheable: Bool = false) -> RawJSON {
        guard case .modern = era else { return result }
        var members: [(String, RawJSON?)] = [("resultType", .string("complete"))]
        if cacheable {
            members.append(("ttlMs", .integer(0)))
            members.append(("cacheScope", .string("private")))
        }
        members.append(("_meta", .object([MCPSession.serverInfoKey: Self.serverInfo])))
        return result.merging(members)
    }

    /// The entries of a list from `cursor` on, and the cursor of the rest.
    static func page<T>(of entries: [T], from cursor: Int) throws(RPCError) -> (entries: ArraySlice<T>, next: Int?) {
        guard cursor <= entries.count else { throw .invalidParams(field: "cursor", expected: "a nextCursor of an earlier list") }
        let end = min(entries.count, cursor + listPageSize)
        return (entries[cursor..<end], end < entries.count ? end : nil)
    }
}
