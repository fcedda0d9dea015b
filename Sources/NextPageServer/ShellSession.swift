import Jansson
import JSONRPC
import Logging
import NextPage

/// The shell commands' way into nextpage (`nextpage next`, `all`, `reset`):
/// the same `NextPageService` a server runs, with the same collections and
/// state file, called in process through its RPC methods. A page reached
/// from the shell went through exactly the code a JSON-RPC client reaches.
public final class ShellSession: Sendable {
    public let service: NextPageService
    /// The state file, committed by the caller after it has written a page out.
    public let stateStore: StateStore?
    /// Where `loadAll`'s pages go when a command takes them (`nextpage all`).
    public let pageTap: PageTap

    /// Loads the collections (`configPath`, or `./nextpage.json`, or the
    /// demo, as `serve` does) and the state file, and restores saved states.
    /// Without `prefetch`, no collection fetches a page before it is asked
    /// for: a command that loads one page and exits would fetch the next
    /// one for nobody (and the next run would fetch it again). Items are
    /// not kept (`maxItems` 0): no shell command serves `items`.
    public init(configPath: String?, statePath: String?, upstream: UpstreamMode, logger: Logger, prefetch: Bool = true) async throws {
        let loaded = try ServerLauncher.collections(configPath: configPath, upstream: upstream)
        for warning in ServerLauncher.replayWarnings(loaded.collections) { logger.warning("\(warning)") }
        let store = try statePath.map { path throws(StateFileError) in try StateStore(path: path, commit: .onRequest, logger: logger) }
        let tap = PageTap()
        let collections = loaded.collections.map { name, definition in
            var definition = definition
            if !prefetch { definition.options.prefetch = 0 }
            // No shell command serves `items`: nothing is kept for it.
            definition.options.maxItems = 0
            return (name: name, definition: definition)
        }
        service = NextPageService(
            collections: collections, validator: loaded.validator, logger: logger, upstream: upstream, stateStore: store,
            pageTap: tap)
        pageTap = tap
        stateStore = store
        await service.restoreSavedStates()
    }

    /// Calls one method with named `params`; notifications it sends go to
    /// `notify`, in order, before it returns.
    public func call(
        _ method: String, _ params: RawJSON,
        notify: @escaping @Sendable (_ method: String, _ params: RawJSON?) -> Void = { _, _ in }
    ) async throws(RPCError) -> RawJSON {
        let parsed: JSON
        do {
            parsed = try params.parsed()
        } catch {
            throw RPCError.parseError(error)
        }
        let id = RequestID(raw: .integer(1))
        let request = RPCRequest(id: id, method: method, params: parsed)
        let work = await service.admit(request, context: RPCContext(id: id, notify: notify))
        do {
            return try await work()
        } catch let error as RPCError {
            throw error
        } catch is CancellationError {
            throw RPCError.cancelled
        } catch {
            throw RPCError.internalError("\(error)")
        }
    }

    /// Commits the state file after a page was written out (see `StateStore`).
    public func commit() throws(StateFileError) {
        try stateStore?.commit()
    }
}
