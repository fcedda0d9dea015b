import Jansson
import JSONRPC
import Logging
import NextPageSchemas
import NextPage

/// The named collections of one server and the RPC methods of docs/methods.md.
///
/// Each method's order-sensitive part (taking a place in a collection's
/// line, resetting, defining) runs in `admit`, in arrival order; the rest
/// runs concurrently.
public final class NextPageService: RefusingRPCHandler {
    public static let version = "0.1.0"

    let registry: Registry
    let validator: DefinitionValidator
    let logger: Logger
    let upstream: UpstreamMode
    /// Where collection states are saved (`--state`), if anywhere.
    let stateStore: StateStore?
    /// What the `http` sources share (clock, credentials, rate limits).
    let environment: HTTPSourceEnvironment
    /// Where `loadAll` hands its pages instead of notifying them (the shell commands), if anywhere.
    let pageTap: PageTap?

    /// A service for `collections`; `http` sources reach upstream as
    /// `upstream` says (by default the network) and share what `environment`
    /// holds (by default the process's); `stateStore`, when given, is told
    /// every state change (see `persist`).
    public init(
        collections: [(name: String, definition: CollectionDefinition)], validator: DefinitionValidator, logger: Logger,
        upstream: UpstreamMode = .live, stateStore: StateStore? = nil, environment: HTTPSourceEnvironment = .shared,
        pageTap: PageTap? = nil
    ) {
        self.registry = Registry(collections.map {
            ($0.name, $0.definition.makeCollection(name: $0.name, upstream: upstream, logger: logger, environment: environment))
        })
        self.validator = validator
        self.logger = logger
        self.upstream = upstream
        self.stateStore = stateStore
        self.environment = environment
        self.pageTap = pageTap
    }

    /// A collection's State, with what its source said of its rate limit.
    static func state(_ collection: PagedCollection) async -> RawJSON {
        Wire.state(collection.name, await collection.state, rateLimit: collection.client.rateLimitStatus())
    }

    /// Every method this service answers.
    public static let methods = [
        "load", "loadNext", "reset", "status", "collections", "items", "define", "loadAll", "rpc.discover", "initialize",
    ]

    /// What `initialize` lists: the methods above, then those the
    /// connection handles itself (lifecycle and cancellation).
    public static let listedMethods = methods + ["initialized", "shutdown", "exit", "$/cancelRequest"]

    /// `Schemas/openrpc.json`, parsed once. Read only: the MCP tools are
    /// built from it (`MCPToolCatalog`).
    static let openRPCJSON: JSON = {
        guard let parsed = try? JSON.parse(EmbeddedSchemas.openrpc) else {
            preconditionFailure("the embedded OpenRPC document is not JSON")
        }
        return parsed
    }()

    /// `Schemas/openrpc.json`, compacted once so it fits on one NDJSON line.
    static let openRPCDocument = RawJSON(openRPCJSON)

    public func admitOrThrow(_ request: RPCRequest, context: RPCContext) async throws(RPCError) -> RPCWork {
        switch request.method {
        case "initialize":
            let result = RawJSON.object([
                "serverInfo": .object(["name": .string("nextpage"), "version": .string(Self.version)]),
                "capabilities": .object(["methods": .array(Self.listedMethods.map(RawJSON.string))]),
            ])
            return { @Sendable in result }
        case "rpc.discover":
            let document = Self.openRPCDocument
            return { @Sendable in document }
        case "collections":
            let all = await registry.all()
            var states: [RawJSON] = []
            for (_, collection) in all { states.append(await Self.state(collection)) }
            return { @Sendable [states] in .array(states) }
        case "define":
            return try await define(Params(request))
        case "load", "loadNext", "reset", "status", "items", "loadAll":
            let params = try Params(request)
            let name = try params.requiredString("collection")
            guard !name.isEmpty else { throw .invalidParams(field: "collection", expected: "a non-empty string") }
            guard let collection = await registry[name] else {
                throw Wire.unknownCollection(name, known: await registry.names())
            }
            return try await admitCollectionMethod(request.method, collection, params, context)
        default:
            throw RPCError.methodNotFound(request.method)
        }
    }

    private func admitCollectionMethod(_ method: String, _ collection: PagedCollection, _ params: Params, _ context: RPCContext) async throws(RPCError) -> RPCWork {
        let name = collection.name
        switch method {
        case "loadNext":
            let ifLoading: IfLoading
            if let value = try params.string("ifLoading") {
                guard let parsed = IfLoading(rawValue: value) else {
                    throw .invalidParams(field: "ifLoading", expected: "\"queue\" or \"skip\"")
                }
                ifLoading = parsed
            } else {
                ifLoading = .queue
            }
            let fields = try params.fields("fields")
            let ticket = await collection.enqueueLoadNext(ifLoading: ifLoading)
            // A cancel read before this call's page lands keeps it from landing, however fast the source.
            context.cancellation.add { ticket.giveUp() }
            return { @Sendable [self] in try await persisting(collection) { try await Self.page(collection, ticket, fields) } }
        case "load":
            let lastId = try params.cursor("lastId")
            let fields = try params.fields("fields")
            let ticket = await collection.enqueueLoad(lastId: lastId)
            context.cancellation.add { ticket.giveUp() }
            await persist(collection)
            return { @Sendable [self] in try await persisting(collection) { try await Self.page(collection, ticket, fields) } }
        case "reset":
            if try params.bool("forgetIncremental") == true {
                await collection.forgetIncremental()
            } else {
                await collection.reset()
            }
            await persist(collection)
            let state = await Self.state(collection)
            return { @Sendable in state }
        case "status":
            let state = await Self.state(collection)
            return { @Sendable in state }
        case "items":
            let offset = try params.integer("offset") ?? 0
            let limit = try params.integer("limit")
            let fields = try params.fields("fields")
            let slice = await collection.items(offset: offset, limit: limit)
            let items = fields.map { $0.project(slice.items) } ?? slice.items
            let result = RawJSON.object([
                "collection": .string(name),
                "items": items.json, "count": .integer(slice.count), "offset": .integer(slice.offset),
            ])
            return { @Sendable in result }
        case "loadAll":
            let maxItems = try params.integer("maxItems", min: 1)
            let maxPages = try params.integer("maxPages", min: 1)
            let token = try params.progressToken("progressToken")
            let first = await collection.enqueueLoadNext(ifLoading: .queue)
            context.cancellation.add { first.giveUp() }
            return { @Sendable [self] in
                try await loadAll(collection, first: first, maxItems: maxItems, maxPages: maxPages, progressToken: token, context: context)
            }
        default:
            throw RPCError.methodNotFound(method)
        }
    }

    private static func page(_ collection: PagedCollection, _ ticket: LoadTicket, _ fields: FieldProjection?) async throws -> RawJSON {
        do {
            return Wire.page(collection.name, try await collection.loadNext(ticket), fields: fields)
        } catch let error as LoadError {
            throw Wire.error(error, collection: collection.name)
        }
    }

    private func loadAll(
        _ collection: PagedCollection, first: LoadTicket, maxItems: Int?, maxPages: Int?, progressToken: RawJSON?, context: RPCContext
    ) async throws -> RawJSON {
        var pages = 0
        var count = 0
        var ticket = first
        var state = await collection.state
        // loadAll asks for page after page: let them be read ahead (with
        // `maxPages`, no further than its last page), and stop that as soon
        // as it ends (before a failure or cancellation is answered).
        var declared = maxPages.map { $0 - 1 } ?? 0
        func withdrawDemand() async {
            if maxPages == nil { await collection.streamingDemand(-1) } else { await collection.streamingDemand(pages: -declared) }
            declared = 0
        }
        if maxPages == nil { await collection.streamingDemand(1) } else { await collection.streamingDemand(pages: declared) }
        func progress(_ kind: String) {
            guard let progressToken else { return }
            context.notify("$/progress", .object([
                "token": progressToken,
                "value": .object(["kind": .string(kind), "pages": .integer(pages), "count": .integer(count)]),
            ]))
        }
        progress("begin")
        while true {
            let result: PageResult
            do {
                result = try await collection.loadNext(ticket)
            } catch let error as LoadError {
                await withdrawDemand()
                await persist(collection)
                // A progress that began ends, also when the call fails or is cancelled.
                progress("end")
                throw Wire.error(error, collection: collection.name)
            }
            state = result.state
            if result.landed {
                pages += 1
                count += result.items.count
                await persist(collection)
                if pageTap?.deliver(collection.name, result) != true {
                    context.notify("page", Wire.page(collection.name, result))
                }
                progress("report")
            }
            if !result.landed || !state.hasNext { break }
            if let maxPages, pages >= maxPages { break }
            if let maxItems, count >= maxItems { break }
            // Pages go out as notifications: no more while the client is behind reading them.
            await context.waitForOutputRoom()
            if declared > 0 {
                // The next page is asked for in line now, not beyond it.
                declared -= 1
                await collection.streamingDemand(pages: -1)
            }
            ticket = await collection.enqueueLoadNext(ifLoading: .queue)
        }
        await withdrawDemand()
        progress("end")
        // Where the collection stands now, as `status` and the last page say
        // (its pages and items since the last reset, not only this call's).
        return .object([
            "collection": .string(collection.name),
            "pages": .integer(state.pages), "count": .integer(state.count),
            "hasNext": .bool(state.hasNext), "lastId": state.lastId?.json ?? .null,
        ])
    }

    private func define(_ params: Params) async throws(RPCError) -> RPCWork {
        let name = try params.requiredString("name")
        guard !name.isEmpty else { throw .invalidParams(field: "name", expected: "a non-empty string") }
        guard let object = params.object else { throw .invalidParams(field: "params", expected: "a collection definition") }
        let definition: CollectionDefinition
        do {
            definition = try validator.validate(object, ignoring: ["name"])
        } catch {
            throw Wire.invalidDefinition(error)
        }
        let collection = definition.makeCollection(name: name, upstream: upstream, logger: logger, environment: environment)
        if let replaced = await registry.set(name, collection) {
            await replaced.reset()
        }
        await persist(collection)
        logger.info("defined collection", metadata: ["collection": "\(name)"])
        for warning in ServerLauncher.replayWarnings([(name, definition)]) { logger.warning("\(warning)") }
        let state = await Self.state(collection)
        return { @Sendable in state }
    }
}

extension NextPageService {
    /// What collection `name` holds now: `{"state": State, "items": [...],
    /// "offset": N}`, the items kept so far from absolute offset `offset`
    /// (an MCP resource's contents); nil for a collection not defined.
    func snapshot(_ name: String) async -> RawJSON? {
        guard let collection = await registry[name] else { return nil }
        let state = await Self.state(collection)
        let slice = await collection.items(offset: 0, limit: nil)
        return .object(["state": state, "items": slice.items.json, "offset": .integer(slice.offset)])
    }

    /// Puts every defined collection that has a saved state back where it
    /// stood (before any request is served).
    public func restoreSavedStates() async {
        guard let stateStore else { return }
        let saved = stateStore.saved
        for (name, collection) in await registry.all() {
            if let state = saved[name] { await collection.restore(state) }
        }
    }

    /// Tells the state store where `collection` stands now. Runs on the
    /// collection's actor, so the store sees its states in order; called
    /// after every page lands (before it is delivered) and after every call
    /// that may have moved the collection (reset, load, a failure). A write
    /// that fails is logged and shows as the collection's `lastError`; the
    /// reply is not changed by it.
    func persist(_ collection: PagedCollection) async {
        guard let stateStore else { return }
        await collection.save(to: stateStore)
    }

    /// Runs `body`, then persists the collection, whether `body` threw or not.
    func persisting(_ collection: PagedCollection, _ body: @Sendable () async throws -> RawJSON) async throws -> RawJSON {
        do {
            let result = try await body()
            await persist(collection)
            return result
        } catch {
            await persist(collection)
            throw error
        }
    }
}

/// The collections by name.
actor Registry {
    private var collections: [String: PagedCollection]

    init(_ collections: [(String, PagedCollection)]) {
        self.collections = Dictionary(collections, uniquingKeysWith: { _, last in last })
    }

    subscript(name: String) -> PagedCollection? { collections[name] }

    func names() -> [String] { collections.keys.sorted() }

    func all() -> [(String, PagedCollection)] { collections.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } }

    /// Defines or replaces; returns the collection replaced.
    func set(_ name: String, _ collection: PagedCollection) -> PagedCollection? {
        defer { collections[name] = collection }
        return collections[name]
    }
}
