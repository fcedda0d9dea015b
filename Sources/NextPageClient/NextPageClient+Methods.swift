import Jansson

/// The methods of README "Methods", typed.
extension NextPageClient {
    /// The page after the last one loaded (the first on a fresh collection);
    /// `skipIfLoading` returns at once, with `skipped`, when a fetch is in flight.
    public func loadNext(_ collection: String, skipIfLoading: Bool = false, timeout: Duration? = nil) async throws -> Page {
        let params = Self.params(collection)
        if skipIfLoading { params.set("ifLoading", .string("skip")) }
        return try Page(await call("loadNext", params, timeout: timeout), method: "loadNext")
    }

    /// Resets the collection, then loads its first page (or the page after `lastId`, a string or a number).
    public func load(_ collection: String, lastId: JSON? = nil, timeout: Duration? = nil) async throws -> Page {
        let params = Self.params(collection)
        if let lastId { params.set("lastId", lastId) }
        return try Page(await call("load", params, timeout: timeout), method: "load")
    }

    /// Forgets the collection's pages and cursor; returns its fresh State.
    public func reset(_ collection: String) async throws -> CollectionState {
        try CollectionState(await call("reset", Self.params(collection)), method: "reset")
    }

    /// Where the collection stands.
    public func status(_ collection: String) async throws -> CollectionState {
        try CollectionState(await call("status", Self.params(collection)), method: "status")
    }

    /// The State of every defined collection.
    public func collections() async throws -> [CollectionState] {
        try await call("collections").elements.map { element throws(NextPageClientError) in
            try CollectionState(element, method: "collections")
        }
    }

    /// The `items` method: items loaded so far, from absolute `offset`, at most `limit`.
    public func itemSlice(_ collection: String, offset: Int = 0, limit: Int? = nil) async throws -> ItemSlice {
        let params = Self.params(collection)
        params.set("offset", .integer(offset))
        if let limit { params.set("limit", .integer(limit)) }
        return try ItemSlice(await call("items", params))
    }

    /// Defines (or replaces) collection `name` at run time from `definition`
    /// (a collection object of the config file).
    public func define(_ name: String, _ definition: JSON) async throws -> CollectionState {
        let params = definition.deepCopy()
        params.set("name", .string(name))
        return try CollectionState(await call("define", params), method: "define")
    }

    /// Pages to the end (or a limit) in one call; `onPage` gets each page as
    /// it lands, `onProgress` each `$/progress` value (both on the reader thread).
    public func loadAll(
        _ collection: String, maxItems: Int? = nil, maxPages: Int? = nil, timeout: Duration? = nil,
        onPage: (@Sendable (Page) -> Void)? = nil, onProgress: (@Sendable (LoadAllProgress) -> Void)? = nil
    ) async throws -> LoadAllResult {
        let params = Self.params(collection)
        if let maxItems { params.set("maxItems", .integer(maxItems)) }
        if let maxPages { params.set("maxPages", .integer(maxPages)) }
        var stops: [@Sendable () -> Void] = []
        defer { for stop in stops { stop() } }
        if let onPage {
            stops.append(on("page") { params in
                if params["collection"]?.string == collection, let page = try? Page(params, method: "page") { onPage(page) }
            })
        }
        if let onProgress {
            let token = "swift-\(Self.progressTokens.next())"
            params.set("progressToken", .string(token))
            stops.append(on("$/progress") { params in
                if params["token"]?.string == token, let value = params["value"], let progress = try? LoadAllProgress(value) { onProgress(progress) }
            })
        }
        return try LoadAllResult(await call("loadAll", params, timeout: timeout))
    }

    /// Pages with `loadNext` (`load` first when `restart`) until `hasNext` is false.
    public func pages(_ collection: String, restart: Bool = false) -> PageSequence {
        PageSequence(client: self, collection: collection, restart: restart)
    }

    /// Every item of `pages(_:restart:)`, one at a time.
    public func items(_ collection: String, restart: Bool = false) -> ItemSequence {
        ItemSequence(pages: pages(collection, restart: restart))
    }

    static func params(_ collection: String) -> JSON {
        .object(["collection": .string(collection)])
    }

    private static let progressTokens = Counter()
}
