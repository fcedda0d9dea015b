// Fuzz target: the MCP adapter (`MCPAdapter.admit` in front of a real
// `NextPageService`, then the work it returns) fed arbitrary JSON-RPC
// messages, one per line: MCP's handshake and envelope, tools/call with any
// arguments, resources, logging, cancellation, and nextpage's own methods
// mixed in, as an agent's host might send them.
//
// The service is `ServerFixtures.makeService()`'s; the define tool is offered.
//
// Checks that every request is answered once, with a result or a JSON-RPC
// error of a known code (never an internal error); that replies and
// notifications are valid JSON without a raw line break; that a tool call's
// result has MCP's shape (text content, structuredContent an object,
// isError a boolean, a failure carrying a known code); that a request with
// the 2026-07-28 envelope gets `resultType: "complete"`; that only MCP's
// and nextpage's own notifications are sent; and that no collection is
// still loading once everything has been answered.
import FuzzSupport
import Jansson
@testable import JSONRPC
import NextPage
@testable import NextPageServer
import ServerFuzzSupport

/// the codes of docs/methods.md (Errors) and MCP's -32022.
private let knownCodes = ServerFixtures.knownCodes.union([-32022])
private let knownNotifications: Set<String> = [
    "page", "$/progress", "notifications/progress", "notifications/message",
    "notifications/tools/list_changed", "notifications/resources/list_changed",
]
private let checkWire = ServerFixtures.checkWire

/// Whether a request carries the 2026-07-28 envelope the adapter accepts.
private func isModern(_ request: RPCRequest) -> Bool {
    guard let meta = request.params?["_meta"], meta.kind == .object else { return false }
    return meta[MCPSession.protocolVersionKey]?.string == "2026-07-28" && meta[MCPSession.clientCapabilitiesKey]?.kind == .object
}

private func checkToolResult(_ result: JSON, _ what: String) {
    guard result.kind == .object, let content = result["content"], content.kind == .array, content.count == 1,
          content[0]?["type"]?.string == "text", content[0]?["text"]?.string != nil,
          let structured = result["structuredContent"], structured.kind == .object,
          let isError = result["isError"]?.bool else {
        fuzzCheck(false, "\(what): not a CallToolResult: \(RawJSON(result))")
        return
    }
    if isError {
        let code = structured["code"]?.integer.map(Int.init) ?? 0
        fuzzCheck(knownCodes.contains(code) && code != -32602, "\(what): an error result with code \(code)")
    }
}

private func perform(_ work: RPCWork, _ request: RPCRequest) async {
    do {
        let result = try await work()
        if let id = request.id { checkWire(OutgoingMessage.result(id: id, result), "reply to \(request.method)") }
        guard request.id != nil, let parsed = try? result.parsed() else { return }
        if request.method == "tools/call" { checkToolResult(parsed, "tools/call") }
        if isModern(request) && request.method.contains("/") {
            fuzzCheck(parsed["resultType"]?.string == "complete", "\(request.method) with the envelope: no resultType")
        }
    } catch let error as RPCError {
        fuzzCheck(knownCodes.contains(error.code), "\(request.method) failed with code \(error.code): \(error.message)")
        checkWire(OutgoingMessage.error(id: request.id ?? .null, error), "error reply to \(request.method)")
    } catch is CancellationError {
    } catch {
        fuzzCheck(false, "\(request.method) threw \(error), not an RPCError")
    }
}

private func run(_ stream: [UInt8]) async {
    let adapter = MCPAdapter(service: ServerFixtures.makeService(), mcp: true, allowDefine: true, logger: ServerFixtures.logger)
    var tasks: [(id: RequestID?, task: Task<Void, Never>, actions: CancelActions)] = []
    for request in ServerFixtures.requests(in: stream) {
        if let form = Connection.cancelNotifications[request.method] {
            if let value = request.params?[form.member], let id = RequestID(value) {
                for entry in tasks where entry.id == id {
                    entry.actions.fire()
                    entry.task.cancel()
                }
            }
            continue
        }
        if ["exit", "shutdown", "initialized"].contains(request.method) { continue }
        let actions = CancelActions()
        let context = RPCContext(id: request.id, notify: { method, params in
            fuzzCheck(knownNotifications.contains(method), "an unexpected notification \(method)")
            checkWire(OutgoingMessage.notification(method: method, params: params), "notification \(method)")
        }, cancellation: actions)
        let work = await adapter.admit(request, context: context)
        tasks.append((request.id, Task { await perform(work, request) }, actions))
    }
    for entry in tasks { await entry.task.value }
    LogForwarding.shared.stop()
    await ServerFixtures.checkSettled(adapter.service)
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzMCP(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let stream = Fuzzer.bytes(data, size)
    ServerFixtures.runToEnd { await run(stream) }
    return 0
}

Fuzzer.main(fuzzMCP)
