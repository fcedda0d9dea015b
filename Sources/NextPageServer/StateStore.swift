#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Jansson
import JSONRPC
import Logging
import NextPage

/// A state file that cannot be used: unreadable, not JSON, not a state
/// file, or not writable. Never a silent reset.
public struct StateFileError: Error, Sendable, CustomStringConvertible {
    public let path: String
    public let reason: String

    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    public var description: String { "state file \(path): \(reason)" }
}

/// The `--state` file: each collection's cursor, `hasNext` and counters,
/// so that a restarted server, or the next `nextpage next`, resumes where
/// the last one stopped.
///
/// The file is one JSON object:
///
///     {"version": 1, "collections": {"demo": {"hasNext": true, "lastId": "page-3",
///      "count": 50, "pages": 2, "lastError": null}}}
///
/// plus, for an `auto` collection whose walk has picked its paging,
/// `"paging": {"strategy", "items", ...}` (see `PagingPick`), so that a
/// resumed walk goes on the same way, and for an incremental collection
/// `"incremental": {"value", "seen", ...}` (see `IncrementalState`).
///
/// It is replaced atomically: the new content goes to a temporary file in
/// the same folder, which is flushed to disk (`fsync`), renamed over the
/// state file, and the folder is flushed too. A process killed at any moment
/// leaves either the old file or the new one, never a mix.
///
/// `record` is called on a collection's actor (see
/// `NextPageService.persist`) each time its state may have changed, so the
/// states of one collection arrive in the order they happened. With
/// `Commit.immediately` (the server) each change is renamed into place at
/// once, before the page is delivered. With `Commit.onRequest` (the shell
/// commands) a change is written to the temporary file and renamed into
/// place by `commit()`, which the caller runs after it has written the page
/// out: a page is then never counted as delivered before it was.
/// Entries of collections that are not defined are kept as they are.
///
/// A write that fails (a full disk, a file size limit) leaves the previous
/// file in place, whole and readable, and removes the partial temporary
/// file. The server keeps serving: `record` returns the failure (the
/// collection shows it as its `lastError`), it is logged once when writing
/// starts failing and once when it works again, and every later change
/// tries again, with every collection's newest state.
public final class StateStore: @unchecked Sendable {
    /// When a recorded change reaches the state file.
    public enum Commit: Sendable {
        /// At once, inside `record` (the server).
        case immediately
        /// When `commit()` is called (the shell commands).
        case onRequest
    }

    public static let version = 1

    /// The largest `count` or `pages` a state file may hold (2^53 - 1, the
    /// largest integer every JSON reader keeps exact). A file is input: a
    /// count near 2^63 would overflow the next page's offsets.
    static let maxCounter: Int64 = (1 << 53) - 1

    public let path: String
    public let commitMode: Commit
    private let logger: Logger?
    private let temporaryPath: String
    private let lock = Condition()
    // Guarded by `lock`.
    private var states: [String: NextPageState]
    private var prepared = false
    private var failure: StateFileError?
    /// Why the last write failed, while writes fail.
    private var failing: StateFileError?

    /// Opens the state file at `path`, reading it when it exists (a missing
    /// file is an empty state). Throws when it cannot be read, is not a
    /// state file, or its folder is not writable.
    public init(path: String, commit: Commit, logger: Logger? = nil) throws(StateFileError) {
        self.path = path
        self.commitMode = commit
        self.logger = logger
        let folder = ServerLauncher.directoryName(of: path)
        let base = path.split(separator: "/").last.map(String.init) ?? path
        self.temporaryPath = (folder == "/" ? "" : folder) + "/." + base + ".tmp"
        guard !path.isEmpty, !path.hasSuffix("/") else { throw StateFileError(path: path, reason: "not a file name") }
        let bytes: [UInt8]?
        do {
            // Regular files only: the state is replaced by renaming a new file over it.
            bytes = try ServerLauncher.readFile(path, limit: ServerLauncher.maxConfigBytes, regularOnly: true)
        } catch where error.code == ENOENT {
            bytes = nil
        } catch {
            throw StateFileError(path: path, reason: "cannot read: \(error.description)")
        }
        // An empty file (`STATE=$(mktemp)`) holds no state yet, as a missing one.
        let loaded = try bytes.map { bytes throws(StateFileError) in
            bytes.allSatisfy(JSONScanner.isWhitespace) ? [:] : try Self.decode(bytes, path: path)
        } ?? [:]
        states = loaded
        guard access(folder, W_OK | X_OK) == 0 else {
            throw StateFileError(path: path, reason: "cannot write in its folder '\(folder)': \(String(cString: strerror(errno)))")
        }
    }

    /// The saved state of every collection in the file, by name.
    public var saved: [String: NextPageState] { lock.locked { states } }

    /// The first write that failed, if any (the shell commands stop on it).
    public var writeFailure: StateFileError? { lock.locked { failure } }

    /// Records where collection `name` stands; writes the file when that
    /// changed, or when the last write failed (see the type's documentation
    /// for when it is committed). Returns why the write failed, if it did.
    @discardableResult
    public func record(_ name: String, _ state: NextPageState) -> StateFileError? {
        var state = state
        state.isLoading = false
        return lock.locked {
            guard states[name] != state || failing != nil else { return nil }
            states[name] = state
            var error = prepare()
            if error == nil && commitMode == .immediately { error = commitLocked() }
            if let error {
                if failure == nil { failure = error }
                if failing?.reason != error.reason {
                    logger?.error("cannot save the state file; the previous one stays in place", metadata: [
                        "path": "\(path)", "reason": "\(error.reason)",
                    ])
                }
            } else if failing != nil {
                logger?.notice("the state file is saved again", metadata: ["path": "\(path)"])
            }
            failing = error
            return error
        }
    }

    /// Renames the prepared file into place (`Commit.onRequest`); does nothing
    /// when nothing changed since the last commit.
    public func commit() throws(StateFileError) {
        let outcome: StateFileError? = lock.locked {
            if let failure { return failure }
            failure = commitLocked()
            return failure
        }
        if let outcome { throw outcome }
    }

    // MARK: Writing (lock held)

    /// Writes the temporary file and flushes it; returns what failed, if
    /// anything (and then removes the temporary file: nothing half written
    /// is ever renamed into place, and a full disk gets its space back).
    private func prepare() -> StateFileError? {
        prepared = false
        let bytes = Self.encode(states)
        let fd = open(temporaryPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return systemError("cannot create '\(temporaryPath)'") }
        func fail(_ what: String) -> StateFileError {
            let error = systemError(what)
            close(fd)
            unlink(temporaryPath)
            return error
        }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                return fail("cannot write '\(temporaryPath)'")
            }
            offset += n
        }
        guard fsync(fd) == 0 else { return fail("cannot flush '\(temporaryPath)'") }
        guard close(fd) == 0 else {
            let error = systemError("cannot close '\(temporaryPath)'")
            unlink(temporaryPath)
            return error
        }
        prepared = true
        return nil
    }

    /// Renames the prepared file into place; returns what failed, if anything.
    private func commitLocked() -> StateFileError? {
        guard prepared else { return nil }
        guard rename(temporaryPath, path) == 0 else { return systemError("cannot rename '\(temporaryPath)' over it") }
        prepared = false
        // Make the rename itself durable.
        let folder = open(ServerLauncher.directoryName(of: path), O_RDONLY | O_CLOEXEC)
        if folder >= 0 {
            _ = fsync(folder)
            close(folder)
        }
        return nil
    }

    private func systemError(_ what: String) -> StateFileError {
        StateFileError(path: path, reason: "\(what): \(String(cString: strerror(errno)))")
    }

    // MARK: Format

    /// The file's bytes for these states (collections sorted by name).
    static func encode(_ states: [String: NextPageState]) -> [UInt8] {
        let entries = states.sorted { $0.key < $1.key }.map { name, state -> (String, RawJSON?) in
            (name, RawJSON.object([
                "hasNext": .bool(state.hasNext),
                "lastId": state.lastId?.json ?? .null,
                "count": .integer(state.count),
                "pages": .integer(state.pages),
                "lastError": state.lastError.map(RawJSON.string) ?? .null,
                "emptyPages": state.emptyPages > 0 ? .integer(state.emptyPages) : nil,
                "paging": state.pick?.json,
                "incremental": state.incremental.map(encode),
            ]))
        }
        let document = RawJSON.object(["version": .integer(version), "collections": .object(entries)])
        return document.bytes + [UInt8(ascii: "\n")]
    }

    /// `{"value", "seen", "withoutValue"?, "boundary"?, "seenBoundary"?}`; digests as 16 hex digits, sorted.
    static func encode(_ incremental: IncrementalState) -> RawJSON {
        func digests(_ set: Set<UInt64>) -> RawJSON? {
            set.isEmpty ? nil : .array(set.sorted().map { .string(hex($0)) })
        }
        return .object([
            "value": incremental.value?.json ?? .null,
            "seen": incremental.seen?.json ?? .null,
            "withoutValue": incremental.withoutValue > 0 ? .integer(incremental.withoutValue) : nil,
            "boundary": digests(incremental.boundary),
            "seenBoundary": digests(incremental.seenBoundary),
        ])
    }

    static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// Reads a state file's bytes; errors name the field at fault.
    static func decode(_ bytes: [UInt8], path: String) throws(StateFileError) -> [String: NextPageState] {
        func invalid(_ field: String, _ expected: String) -> StateFileError {
            StateFileError(path: path, reason: "\(field): expected \(expected) (fix the file, or delete it to start over)")
        }
        let json: JSON
        do {
            json = try JSON.parse(bytes)
        } catch {
            throw StateFileError(
                path: path,
                reason: "not JSON (line \(error.line), column \(error.column): \(error.text)); fix the file, or delete it to start over")
        }
        guard json.kind == .object else { throw invalid("(top level)", "an object") }
        guard let version = json["version"], version.integer == Int64(Self.version) else {
            throw invalid("version", "\(Self.version)")
        }
        guard let collections = json["collections"], collections.kind == .object else {
            throw invalid("collections", "an object of saved collection states")
        }
        var states: [String: NextPageState] = [:]
        for (name, entry) in collections.members {
            let field = "collections.\(name)"
            guard entry.kind == .object else { throw invalid(field, "an object") }
            var state = NextPageState()
            guard let hasNext = entry["hasNext"]?.bool else { throw invalid("\(field).hasNext", "true or false") }
            state.hasNext = hasNext
            guard let lastIdJSON = entry["lastId"], case .success(let lastId) = Cursor.from(lastIdJSON) else {
                throw invalid("\(field).lastId", "a string, an integer or null")
            }
            state.lastId = lastId
            guard let count = entry["count"]?.integer, 0...Self.maxCounter ~= count, let countValue = Int(exactly: count) else {
                throw invalid("\(field).count", "an integer from 0 to \(Self.maxCounter)")
            }
            state.count = countValue
            guard let pages = entry["pages"]?.integer, 0...Self.maxCounter ~= pages, let pagesValue = Int(exactly: pages) else {
                throw invalid("\(field).pages", "an integer from 0 to \(Self.maxCounter)")
            }
            state.pages = pagesValue
            if let lastError = entry["lastError"], !lastError.isNull {
                guard let text = lastError.string else { throw invalid("\(field).lastError", "a string or null") }
                state.lastError = text
            }
            if let emptyPages = entry["emptyPages"] {
                guard let value = emptyPages.integer, 0...Self.maxCounter ~= value, let count = Int(exactly: value) else {
                    throw invalid("\(field).emptyPages", "an integer from 0 to \(Self.maxCounter)")
                }
                state.emptyPages = count
            }
            if let pick = entry["paging"], !pick.isNull {
                switch PagingPick.from(pick) {
                case .success(let value): state.pick = value
                case .failure(let error):
                    throw invalid("\(field).paging\(error.field.isEmpty ? "" : "." + error.field)", error.expected)
                }
            }
            if let incremental = entry["incremental"], !incremental.isNull {
                state.incremental = try decodeIncremental(incremental, field: "\(field).incremental", invalid: invalid)
            }
            states[name] = state
        }
        return states
    }

    private static func decodeIncremental(
        _ json: JSON, field: String, invalid: (String, String) -> StateFileError
    ) throws(StateFileError) -> IncrementalState {
        guard json.kind == .object else { throw invalid(field, "an object") }
        var state = IncrementalState()
        for key in ["value", "seen"] {
            guard let member = json[key], !member.isNull else { continue }
            guard let value = IncrementalValue(member) else { throw invalid("\(field).\(key)", "a string, a number or null") }
            if key == "value" { state.value = value } else { state.seen = value }
        }
        if let member = json["withoutValue"] {
            guard let count = member.integer, 0...maxCounter ~= count, let value = Int(exactly: count) else {
                throw invalid("\(field).withoutValue", "an integer from 0 to \(maxCounter)")
            }
            state.withoutValue = value
        }
        for key in ["boundary", "seenBoundary"] {
            guard let member = json[key], !member.isNull else { continue }
            guard member.kind == .array, member.count <= IncrementalState.maxBoundary else {
                throw invalid("\(field).\(key)", "an array of at most \(IncrementalState.maxBoundary) digests")
            }
            var digests: Set<UInt64> = []
            for element in member.elements {
                guard let text = element.string, text.utf8.count == 16, let digest = UInt64(text, radix: 16) else {
                    throw invalid("\(field).\(key)", "digests of 16 hex digits")
                }
                digests.insert(digest)
            }
            if key == "boundary" { state.boundary = digests } else { state.seenBoundary = digests }
        }
        return state
    }
}

extension PagedCollection {
    /// Records the current state in `store`, on the collection's actor, so
    /// that the store sees the collection's states in the order they
    /// happened. A write that fails becomes the collection's `lastError`:
    /// the page was delivered all the same, and the file keeps the place
    /// before it.
    func save(to store: StateStore) {
        guard let error = store.record(name, nextPageState) else { return }
        nextPageState.lastError = "\(error)"
    }
}
