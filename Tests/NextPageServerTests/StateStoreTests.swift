import Foundation
import Jansson
import JSONRPC
import Logging
import NextPage
@testable import NextPageServer
import XCTest

/// The state file: its format, its errors, when it is written, and a
/// service that restores from it.
final class StateStoreTests: XCTestCase {
    private var dir = ""

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "nextpage-state-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    private func state(hasNext: Bool = true, lastId: Cursor?, count: Int, pages: Int, lastError: String? = nil) -> NextPageState {
        var state = NextPageState()
        state.hasNext = hasNext
        state.lastId = lastId
        state.count = count
        state.pages = pages
        state.lastError = lastError
        return state
    }

    private func text(_ path: String) throws -> String { try String(contentsOfFile: path, encoding: .utf8) }

    func testTheFormatRoundTripsWithLiteralJSON() throws {
        let states = [
            "b": state(lastId: .integer(103), count: 3, pages: 1),
            "a": state(hasNext: false, lastId: nil, count: 8, pages: 3, lastError: "source returned the cursor 'x' again"),
            "c": state(lastId: .string("page-2"), count: 25, pages: 1),
        ]
        let bytes = StateStore.encode(states)
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self), #"""
            {"version":1,"collections":{"a":{"hasNext":false,"lastId":null,"count":8,"pages":3,"lastError":"source returned the cursor 'x' again"},"b":{"hasNext":true,"lastId":103,"count":3,"pages":1,"lastError":null},"c":{"hasNext":true,"lastId":"page-2","count":25,"pages":1,"lastError":null}}}

            """#)
        XCTAssertEqual(try StateStore.decode(bytes, path: "f"), states)
        // Empty pages in a row are kept once there are any.
        var empty = state(lastId: .string("e3"), count: 0, pages: 3)
        empty.emptyPages = 3
        let emptyBytes = StateStore.encode(["e": empty])
        XCTAssertTrue(String(decoding: emptyBytes, as: UTF8.self).contains(#""lastError":null,"emptyPages":3}"#))
        XCTAssertEqual(try StateStore.decode(emptyBytes, path: "f"), ["e": empty])
    }

    func testAFileThatIsNotAStateFileIsAnErrorNamingTheField() {
        let cases: [(String, String)] = [
            ("[]", "(top level): expected an object"),
            (#"{"collections": {}}"#, "version: expected 1"),
            (#"{"version": 2, "collections": {}}"#, "version: expected 1"),
            (#"{"version": 1}"#, "collections: expected an object of saved collection states"),
            (#"{"version": 1, "collections": {"c": []}}"#, "collections.c: expected an object"),
            (#"{"version": 1, "collections": {"c": {"hasNext": 1}}}"#, "collections.c.hasNext: expected true or false"),
            (#"{"version": 1, "collections": {"c": {"hasNext": true, "lastId": [1]}}}"#, "collections.c.lastId: expected a string, an integer or null"),
            (#"{"version": 1, "collections": {"c": {"hasNext": true, "lastId": null, "count": -1}}}"#, "collections.c.count: expected an integer from 0 to 9007199254740991"),
            (#"{"version": 1, "collections": {"c": {"hasNext": true, "lastId": null, "count": 9007199254740992}}}"#, "collections.c.count: expected an integer from 0 to 9007199254740991"),
            (#"{"version": 1, "collections": {"c": {"hasNext": true, "lastId": null, "count": 1, "pages": "1"}}}"#, "collections.c.pages: expected an integer from 0 to 9007199254740991"),
            (#"{"version": 1, "collections": {"c": {"hasNext": true, "lastId": null, "count": 1, "pages": 9223372036854775807}}}"#, "collections.c.pages: expected an integer from 0 to 9007199254740991"),
            (#"{"version": 1, "collections": {"c": {"hasNext": true, "lastId": null, "count": 1, "pages": 1, "lastError": 5}}}"#, "collections.c.lastError: expected a string or null"),
        ]
        for (text, expected) in cases {
            XCTAssertThrowsError(try StateStore.decode(Array(text.utf8), path: "s.json"), text) { error in
                XCTAssertEqual("\(error)", "state file s.json: \(expected) (fix the file, or delete it to start over)", text)
            }
        }
        XCTAssertThrowsError(try StateStore.decode(Array("{\"version\":".utf8), path: "s.json")) { error in
            XCTAssert("\(error)".hasPrefix("state file s.json: not JSON (line 1, column"), "\(error)")
        }
    }

    func testAMissingFileIsEmptyAndAnUnreadableOneIsAnError() throws {
        let store = try StateStore(path: dir + "/new.json", commit: .immediately)
        XCTAssertEqual(store.saved, [:])
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/new.json"), "opening writes nothing")
        // An empty file (as `mktemp` makes one) holds no state yet either; a blank one too.
        for (name, text) in [("empty.json", ""), ("blank.json", " \n")] {
            XCTAssertTrue(FileManager.default.createFile(atPath: dir + "/" + name, contents: Data(text.utf8)))
            XCTAssertEqual(try StateStore(path: dir + "/" + name, commit: .immediately).saved, [:], name)
        }
        try FileManager.default.createDirectory(atPath: dir + "/folder.json", withIntermediateDirectories: true)
        XCTAssertThrowsError(try StateStore(path: dir + "/folder.json", commit: .immediately)) { error in
            XCTAssertEqual("\(error)", "state file \(dir)/folder.json: cannot read: Is a directory")
        }
    }

    func testAStateFileThatIsAFIFOOrADeviceIsRefusedWithoutWaiting() throws {
        // Opening a FIFO for reading waited for a writer forever; /dev/zero was read until memory ran out.
        let fifo = dir + "/state.fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        XCTAssertThrowsError(try StateStore(path: fifo, commit: .immediately)) { error in
            XCTAssertEqual("\(error)", "state file \(fifo): cannot read: not a regular file")
        }
        try FileManager.default.createSymbolicLink(atPath: dir + "/zero.json", withDestinationPath: "/dev/zero")
        XCTAssertThrowsError(try StateStore(path: dir + "/zero.json", commit: .immediately)) { error in
            XCTAssertEqual("\(error)", "state file \(dir)/zero.json: cannot read: not a regular file")
        }
    }

    func testConfigAndTranscriptReadsStopAtTheirLimit() throws {
        let validator = DefinitionValidator(baseDirectory: dir)
        XCTAssertThrowsError(try ServerLauncher.loadConfig("/dev/zero", validator: validator)) { error in
            XCTAssertEqual("\(error)", "/dev/zero: cannot read: larger than \(ServerLauncher.maxConfigBytes) bytes")
        }
        let big = dir + "/big.json"
        XCTAssertTrue(FileManager.default.createFile(atPath: big, contents: Data(count: 1001)))
        XCTAssertThrowsError(try ServerLauncher.readFile(big, limit: 1000)) { error in
            XCTAssertEqual((error as? ServerLauncher.ReadError)?.description, "larger than 1000 bytes")
        }
        XCTAssertEqual(try ServerLauncher.readFile(big, limit: 1001).count, 1001)
        // A FIFO is read once its writer has written, even if the writer comes after the open.
        let fifo = dir + "/config.fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let writer = Thread {
            usleep(200_000)
            let fd = open(fifo, O_WRONLY)
            _ = "{}".withCString { write(fd, $0, 2) }
            close(fd)
        }
        writer.start()
        XCTAssertEqual(try ServerLauncher.readFile(fifo, limit: 1000), Array("{}".utf8))
        XCTAssertThrowsError(try Transcript.read("/dev/zero")) { error in
            XCTAssertTrue("\(error)".hasSuffix("cannot read: larger than \(ServerLauncher.maxTranscriptBytes) bytes"), "\(error)")
        }
    }

    func testImmediateCommitReplacesTheFileOnEveryChangeAndOnlyThen() throws {
        let path = dir + "/s.json"
        try Data(#"{"version":1,"collections":{"other":{"hasNext":false,"lastId":null,"count":2,"pages":1,"lastError":null}}}"#.utf8)
            .write(to: URL(fileURLWithPath: path))
        let store = try StateStore(path: path, commit: .immediately)
        var loading = state(lastId: .string("p2"), count: 3, pages: 1)
        loading.isLoading = true
        store.record("c", loading)
        XCTAssertEqual(try text(path), #"{"version":1,"collections":{"c":{"hasNext":true,"lastId":"p2","count":3,"pages":1,"lastError":null},"other":{"hasNext":false,"lastId":null,"count":2,"pages":1,"lastError":null}}}"# + "\n",
                       "entries of other collections are kept")
        let before = try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? Int
        store.record("c", state(lastId: .string("p2"), count: 3, pages: 1))
        let after = try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? Int
        XCTAssertEqual(before, after, "an unchanged state (isLoading aside) is not written again")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["s.json"])
        XCTAssertNil(store.writeFailure)
    }

    func testCommitOnRequestWritesNothingVisibleUntilCommit() throws {
        let path = dir + "/s.json"
        let store = try StateStore(path: path, commit: .onRequest)
        store.record("c", state(lastId: .string("p2"), count: 3, pages: 1))
        XCTAssertFalse(FileManager.default.fileExists(atPath: path), "prepared, not committed")
        try store.commit()
        XCTAssertEqual(try StateStore.decode(Array(try text(path).utf8), path: path)["c"]?.lastId, .string("p2"))
        store.record("c", state(lastId: .string("p3"), count: 6, pages: 2))
        XCTAssertEqual(try StateStore.decode(Array(try text(path).utf8), path: path)["c"]?.lastId, .string("p2"))
        try store.commit()
        XCTAssertEqual(try StateStore.decode(Array(try text(path).utf8), path: path)["c"]?.lastId, .string("p3"))
        try store.commit()
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["s.json"])
    }

    func testAServiceRestoresSavedCollectionsAndKeepsOffsetsAbsolute() async throws {
        try FileManager.default.createDirectory(atPath: dir + "/pages", withIntermediateDirectories: true)
        for (name, items, next) in [("first", "[1,2]", "\"p2\""), ("p2", "[3,4]", "\"p3\""), ("p3", "[5]", "null")] {
            try Data(#"{"items":\#(items),"next_cursor":\#(next)}"#.utf8).write(to: URL(fileURLWithPath: "\(dir)/pages/\(name).json"))
        }
        let definition = CollectionDefinition(source: .file(directory: dir + "/pages"), paging: Paging(strategy: .cursor))
        func service(_ store: StateStore) -> NextPageService {
            NextPageService(collections: [("c", definition)], validator: DefinitionValidator(), logger: Logger(label: "test"), stateStore: store)
        }
        func call(_ service: NextPageService, _ method: String, _ params: String) async throws -> String {
            let request = RPCRequest(id: RequestID(raw: .integer(1)), method: method, params: try JSON.parse(params))
            return try await service.admit(request, context: RPCContext(id: request.id) { _, _ in })().description
        }
        let path = dir + "/s.json"
        let first = service(try StateStore(path: path, commit: .immediately))
        _ = try await call(first, "loadNext", #"{"collection":"c"}"#)
        XCTAssertEqual(try StateStore.decode(Array(try text(path).utf8), path: path)["c"], state(lastId: .string("p2"), count: 2, pages: 1))

        let second = service(try StateStore(path: path, commit: .immediately))
        await second.restoreSavedStates()
        let status = try await call(second, "status", #"{"collection":"c"}"#)
        XCTAssertEqual(status, #"{"collection":"c","hasNext":true,"isLoading":false,"lastId":"p2","count":2,"pages":1,"lastError":null}"#)
        let page = try await call(second, "loadNext", #"{"collection":"c"}"#)
        XCTAssertEqual(page, #"{"collection":"c","items":[3,4],"page":2,"hasNext":true,"lastId":"p3","count":4}"#)
        let items = try await call(second, "items", #"{"collection":"c"}"#)
        XCTAssertEqual(items, #"{"collection":"c","items":[3,4],"count":4,"offset":2}"#)
        // Integral reals are integers (JSON Schema's "integer"); a fraction is not.
        let real = try await call(second, "items", #"{"collection":"c","offset":3.0,"limit":1e0}"#)
        XCTAssertEqual(real, #"{"collection":"c","items":[4],"count":4,"offset":3}"#)
        do {
            _ = try await call(second, "items", #"{"collection":"c","limit":1.5}"#)
            XCTFail("1.5 is not an integer")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, -32602)
        }
        // An empty collection name is bad params (the schema's minLength 1), not an unknown collection.
        do {
            _ = try await call(second, "status", #"{"collection":""}"#)
            XCTFail("an empty name is refused")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, -32602)
        }
    }
}
