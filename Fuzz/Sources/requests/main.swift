// Fuzz target: the request handler (`IncomingMessage.parse`, then
// `NextPageService.admit`, then the work it returns) fed arbitrary JSON-RPC
// messages, one per line.
//
// The service serves the built-in `demo` collection and the collections of
// `examples/nextpage.json` (file sources, one per strategy); `define` may
// add file sources under `examples/` and http sources answered from the
// recordings in `Tests/NextPageServerTests/HTTPFixtures` (never the
// network), and may not run commands. Works run concurrently, as in the
// server; `$/cancelRequest` cancels the work of an id.
//
// Checks that every request is answered with a result or a JSON-RPC error
// (never an internal error, never anything but `RPCError` or
// cancellation), that replies and notifications are valid JSON without a
// raw line break, that no collection is still loading once everything has
// been answered, and that without resets no page number is served twice.
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import FuzzSupport
import Jansson
@testable import JSONRPC
import Logging
import NextPage
@testable import NextPageServer

/// The repository's root, from this file's place in it.
private let root: String = {
    var path = "\(#filePath)"
    for _ in 0..<4 { path = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)]) }
    return path
}()
private let examples = root + "/examples"
private let recordings = root + "/Tests/NextPageServerTests/HTTPFixtures"

private let logger = Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() })

private let configured: [(name: String, definition: CollectionDefinition)] = {
    let validator = DefinitionValidator(baseDirectory: examples)
    do {
        return try ServerLauncher.loadConfig(examples + "/nextpage.json", validator: validator)
    } catch {
        fuzzLog("cannot load \(examples)/nextpage.json (\(error)); serving the demo only")
        return []
    }
}()

/// A fresh service for each input, so that every crash reproduces from its input alone.
private func makeService() -> NextPageService {
    let validator = DefinitionValidator(
        baseDirectory: examples, environment: ["GITHUB_TOKEN": "ghp_fuzz", "NOTION_TOKEN": "ntn_fuzz"], allowsCommands: false)
    return NextPageService(
        collections: [(Demo.name, Demo.definition)] + configured, validator: validator, logger: logger,
        upstream: .replay(directory: recordings))
}

/// The error codes of SPEC §6 (-32603, internal error, is a finding).
private let knownCodes: Set<Int> = [-32700, -32600, -32601, -32602, -32001, -32002, -32003, -32004, -32800, -32801]

private func checkWire(_ json: RawJSON, _ what: String) {
    fuzzCheck(!json.bytes.contains(0x0A) && !json.bytes.contains(0x0D), "\(what) holds a raw line break: \(json)")
    fuzzCheck((try? json.parsed()) != nil, "\(what) is not JSON: \(json)")
}

/// One answered request: its method, and its result or error.
private struct Answer: Sendable {
    let method: String
    let collection: String?
    let result: RawJSON?
}

private func perform(_ work: RPCWork, _ request: RPCRequest) async -> Answer {
    let collection = request.params?["collection"]?.string
    do {
        let result = try await work()
        if let id = request.id { checkWire(OutgoingMessage.result(id: id, result), "reply to \(request.method)") }
        return Answer(method: request.method, collection: collection, result: result)
    } catch let error as RPCError {
        fuzzCheck(knownCodes.contains(error.code), "\(request.method) failed with code \(error.code): \(error.message)")
        checkWire(OutgoingMessage.error(id: request.id ?? .null, error), "error reply to \(request.method)")
    } catch is CancellationError {
    } catch {
        fuzzCheck(false, "\(request.method) threw \(error), not an RPCError")
    }
    return Answer(method: request.method, collection: collection, result: nil)
}

private func run(_ stream: [UInt8]) async {
    let service = makeService()
    var framer = MessageFramer(mode: .ndjson)
    var tasks: [(id: RequestID?, task: Task<Answer, Never>)] = []
    var resets = false
    for event in framer.feed(stream) + framer.finish() {
        guard case .message(let body) = event else { continue }
        let entries: [IncomingMessage.Entry]
        switch IncomingMessage.parse(body) {
        case .parseError(let error):
            checkWire(OutgoingMessage.error(id: nil, .parseError(error)), "parse error")
            continue
        case .single(let entry): entries = [entry]
        case .batch(let batch): entries = batch
        }
        for case .request(let request) in entries {
            switch request.method {
            case "$/cancelRequest":
                if let value = request.params?["id"], let id = RequestID(value) {
                    for entry in tasks where entry.id == id { entry.task.cancel() }
                }
                resets = true
                continue
            case "exit", "shutdown", "initialized":
                continue
            case "reset", "load", "define":
                resets = true
            default:
                break
            }
            let context = RPCContext(id: request.id) { method, params in
                checkWire(OutgoingMessage.notification(method: method, params: params), "notification \(method)")
            }
            let work = await service.admit(request, context: context)
            tasks.append((request.id, Task { await perform(work, request) }))
        }
    }
    var pagesServed: [String: Set<Int64>] = [:]
    for (_, task) in tasks {
        let answer = await task.value
        guard answer.method == "loadNext", let collection = answer.collection, let result = try? answer.result?.parsed(),
              let page = result["page"]?.integer, result["items"]?.count ?? 0 > 0 else { continue }
        let fresh = pagesServed[collection, default: []].insert(page).inserted
        fuzzCheck(fresh || resets, "page \(page) of \(collection) served twice without a reset")
    }
    for (name, collection) in await service.registry.all() {
        let state = await collection.state
        fuzzCheck(!state.isLoading, "\(name) is still loading after every request was answered")
        fuzzCheck(state.count >= 0 && state.pages >= 0, "\(name) has negative counters: \(state)")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzRequests(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let stream = Fuzzer.bytes(data, size)
    let done = DispatchSemaphore(value: 0)
    Task {
        await run(stream)
        done.signal()
    }
    done.wait()
    return 0
}

Fuzzer.main(fuzzRequests)
