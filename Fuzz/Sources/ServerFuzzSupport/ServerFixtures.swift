// What the fuzz targets that drive a real `NextPageService` share: the
// service they drive, the messages of an input, and the checks every reply
// and notification must pass.
import Dispatch
import FuzzSupport
import Jansson
@testable import JSONRPC
import Logging
import NextPage
@testable import NextPageServer

public enum ServerFixtures {
    /// The repository's root, from this file's place in it.
    static let root: String = {
        var path = "\(#filePath)"
        for _ in 0..<4 { path = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)]) }
        return path
    }()
    static let examples = root + "/examples"

    public static let logger = Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() })

    /// The collections of `examples/nextpage.json` (file sources, one per strategy).
    static let configured: [(name: String, definition: CollectionDefinition)] = {
        let validator = DefinitionValidator(baseDirectory: examples)
        do {
            return try ServerLauncher.loadConfig(examples + "/nextpage.json", validator: validator)
        } catch {
            fuzzLog("cannot load \(examples)/nextpage.json (\(error)); serving the demo only")
            return []
        }
    }()

    /// A fresh service for each input, so that every crash reproduces from
    /// its input alone: the built-in `demo` and the collections of
    /// `examples/nextpage.json`; `define` may add file sources under
    /// `examples/` and http sources answered from the recordings in
    /// `Tests/NextPageServerTests/HTTPFixtures` (never the network), and may
    /// not run commands.
    public static func makeService() -> NextPageService {
        let validator = DefinitionValidator(
            baseDirectory: examples, environment: ["GITHUB_TOKEN": "ghp_fuzz", "NOTION_TOKEN": "ntn_fuzz"], allowsCommands: false)
        return NextPageService(
            collections: [(Demo.name, Demo.definition)] + configured, validator: validator, logger: logger,
            upstream: .replay(directory: root + "/Tests/NextPageServerTests/HTTPFixtures"))
    }

    /// The error codes a reply may carry: those of docs/methods.md, Errors (-32603, an internal
    /// error, is a finding).
    public static let knownCodes: Set<Int> = [-32700, -32600, -32601, -32602, -32001, -32002, -32003, -32004, -32800, -32801]

    /// A message or reply as it would go out: JSON, without a raw line break.
    public static func checkWire(_ json: RawJSON, _ what: String) {
        fuzzCheck(!json.bytes.contains(0x0A) && !json.bytes.contains(0x0D), "\(what) holds a raw line break: \(json)")
        fuzzCheck((try? json.parsed()) != nil, "\(what) is not JSON: \(json)")
    }

    /// The requests and notifications of an input, one message per line, in
    /// order (a batch's members in place); a line that is not JSON must be
    /// answerable with a valid parse error.
    public static func requests(in stream: [UInt8]) -> [RPCRequest] {
        var framer = MessageFramer(mode: .ndjson)
        var requests: [RPCRequest] = []
        for event in framer.feed(stream) + framer.finish() {
            guard case .message(let body) = event else { continue }
            switch IncomingMessage.parse(body) {
            case .parseError(let error):
                checkWire(OutgoingMessage.error(id: nil, .parseError(error)), "parse error")
            case .single(let entry):
                if case .request(let request) = entry { requests.append(request) }
            case .batch(let batch):
                for case .request(let request) in batch { requests.append(request) }
            }
        }
        return requests
    }

    /// Runs `body` (an input's whole run) to its end on a task, as libFuzzer wants: synchronously.
    public static func runToEnd(_ body: @escaping @Sendable () async -> Void) {
        let done = DispatchSemaphore(value: 0)
        Task {
            await body()
            done.signal()
        }
        done.wait()
    }

    /// Checks that no collection of `service` is still loading once everything was answered.
    public static func checkSettled(_ service: NextPageService) async {
        for (name, collection) in await service.registry.all() {
            let state = await collection.state
            fuzzCheck(!state.isLoading, "\(name) is still loading after every request was answered")
            fuzzCheck(state.count >= 0 && state.pages >= 0, "\(name) has negative counters: \(state)")
        }
    }
}
