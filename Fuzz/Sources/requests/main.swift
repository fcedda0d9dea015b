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
import FuzzSupport
import Jansson
@testable import JSONRPC
import NextPage
@testable import NextPageServer
import ServerFuzzSupport

private let knownCodes = ServerFixtures.knownCodes
private let checkWire = ServerFixtures.checkWire

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
    let service = ServerFixtures.makeService()
    var tasks: [(id: RequestID?, task: Task<Answer, Never>)] = []
    var resets = false
    for request in ServerFixtures.requests(in: stream) {
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
    var pagesServed: [String: Set<Int64>] = [:]
    for (_, task) in tasks {
        let answer = await task.value
        guard answer.method == "loadNext", let collection = answer.collection, let result = try? answer.result?.parsed(),
              let page = result["page"]?.integer, result["items"]?.count ?? 0 > 0 else { continue }
        let fresh = pagesServed[collection, default: []].insert(page).inserted
        fuzzCheck(fresh || resets, "page \(page) of \(collection) served twice without a reset")
    }
    await ServerFixtures.checkSettled(service)
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzRequests(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let stream = Fuzzer.bytes(data, size)
    ServerFixtures.runToEnd { await run(stream) }
    return 0
}

Fuzzer.main(fuzzRequests)
