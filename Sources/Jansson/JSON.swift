import CJansson
import JanssonArena

/// An owning reference to a jansson value (`json_t *`).
///
/// Each `JSON` holds exactly one reference and releases it in `deinit`.
/// Initialisers say whether they take a reference over (`owning:`) or add one
/// of their own (`retaining:`). Raw pointers never leave this module. The one
/// exception is the root passed to the body of `parseScratch`: its tree is
/// owned, and released whole, by the scratch scope it was parsed in.
///
/// Values are built (mutated) by one owner and are read-only once shared;
/// jansson's reference counts are atomic, so shared read-only values may be
/// read from several threads.
public final class JSON: @unchecked Sendable {
    /// The kinds of JSON value.
    public enum Kind: Sendable, Equatable {
        case object, array, string, integer, real, bool, null
    }

    let raw: OpaquePointer
    /// False only for the root of a tree in a scratch scope, which the
    /// scope releases whole (see `parseScratch`).
    private let releases: Bool

    /// Takes over a reference the caller owns (a "new reference" in jansson's terms).
    init(owning raw: OpaquePointer) {
        self.raw = raw
        self.releases = true
    }

    /// Adds a reference of its own to a borrowed value (a "borrowed reference").
    init(retaining raw: OpaquePointer) {
        self.raw = OpaquePointer(np_json_incref(UnsafeMutablePointer(raw)))!
        self.releases = true
    }

    /// The root of a tree that its scratch scope releases.
    private init(scratchRoot raw: OpaquePointer) {
        self.raw = raw
        self.releases = false
    }

    deinit {
        if releases { np_json_decref(UnsafeMutablePointer(raw)) }
    }

    var pointer: UnsafeMutablePointer<json_t> { UnsafeMutablePointer(raw) }

    // MARK: Parsing

    /// Parses one JSON text from memory with `json_loadb`.
    ///
    /// Any JSON value is accepted at the top level; trailing non-whitespace
    /// is an error. An object that repeats a key keeps the last value (in
    /// the place of the first); `memberCount` tells whether any did.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONParseError) -> JSON {
        JSON(owning: OpaquePointer(try load(bytes)))
    }

    /// `json_loadb` with the flags of `parse`: a new reference, or the error.
    private static func load(_ bytes: UnsafeRawBufferPointer) throws(JSONParseError) -> UnsafeMutablePointer<json_t> {
        var error = json_error_t()
        let base = bytes.baseAddress?.assumingMemoryBound(to: CChar.self)
        let flags = JSON_DECODE_ANY | JSON_ALLOW_NUL
        // json_loadb needs a non-null buffer even for zero bytes.
        let value: UnsafeMutablePointer<json_t>? = withUnsafePointer(to: 0 as CChar) { empty in
            json_loadb(base ?? empty, bytes.count, Int(flags), &error)
        }
        guard let value else { throw JSONParseError(error) }
        return value
    }

    /// Parses one JSON text (as `parse`) for `body` to read, and releases
    /// the tree when `body` returns.
    ///
    /// The tree is built in a scratch scope of this thread's arena and
    /// released whole, by dropping the scope, rather than value by value:
    /// for a tree read once and thrown away, walking it to free each value
    /// costs about as much again as building it. So nothing of the tree may
    /// outlive `body`: neither the value passed in nor any value taken from
    /// it (checked: a reference left over stops the process; in debug builds
    /// every value of the tree is checked). Where no scratch scope can be
    /// opened (inside an arena scope, or in builds with sanitizers) the
    /// tree is released as usual.
    public static func parseScratch<T>(_ bytes: [UInt8], _ body: (JSON) -> T) throws(JSONParseError) -> T {
        let scratch = np_scratch_begin() != 0
        defer { if scratch { np_scratch_end() } }
        // withUnsafeBytes rethrows untyped errors: the typed one is carried out in a Result.
        let loaded: Result<UnsafeMutablePointer<json_t>, JSONParseError> = bytes.withUnsafeBytes { buffer in
            Result { () throws(JSONParseError) in try load(buffer) }
        }
        let value = try loaded.get()
        guard scratch else { return body(JSON(owning: OpaquePointer(value))) }
        var root = JSON(scratchRoot: OpaquePointer(value))
        let result = body(root)
        precondition(isKnownUniquelyReferenced(&root), "a scratch tree's root outlived the scope that releases it")
        assert(np_json_unshared(value) != 0, "a value of a scratch tree outlived the scope that releases it")
        return result
    }

    /// Parses one JSON text from an array of bytes.
    public static func parse(_ bytes: [UInt8]) throws(JSONParseError) -> JSON {
        do {
            return try bytes.withUnsafeBytes { buffer in try JSON.parse(buffer) }
        } catch let error as JSONParseError {
            throw error
        } catch {
            preconditionFailure("unreachable: \(error)")
        }
    }

    /// Parses one JSON text from a string.
    public static func parse(_ text: String) throws(JSONParseError) -> JSON {
        try parse(Array(text.utf8))
    }

    // MARK: Inspection

    /// The kind of this value.
    public var kind: Kind {
        switch np_json_typeof(pointer) {
        case Int32(JSON_OBJECT.rawValue): return .object
        case Int32(JSON_ARRAY.rawValue): return .array
        case Int32(JSON_STRING.rawValue): return .string
        case Int32(JSON_INTEGER.rawValue): return .integer
        case Int32(JSON_REAL.rawValue): return .real
        case Int32(JSON_TRUE.rawValue), Int32(JSON_FALSE.rawValue): return .bool
        default: return .null
        }
    }

    public var isNull: Bool { kind == .null }

    /// The string's contents, or `nil` when this is not a string.
    public var string: String? {
        guard kind == .string, let chars = json_string_value(pointer) else { return nil }
        let length = json_string_length(pointer)
        return chars.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }

    /// The integer, or `nil` when this is not an integer.
    public var integer: Int64? {
        kind == .integer ? Int64(json_integer_value(pointer)) : nil
    }

    /// The integer, or a real with no fraction that fits one (`10.0`, `1e2`:
    /// JSON Schema's "integer"); `nil` otherwise.
    public var integralValue: Int64? {
        integer ?? number.flatMap(Int64.init(exactly:))
    }

    /// The number as a double (integers converted), or `nil` when not a number.
    public var number: Double? {
        switch kind {
        case .integer, .real: return json_number_value(pointer)
        default: return nil
        }
    }

    /// The boolean, or `nil` when this is not `true` or `false`.
    public var bool: Bool? {
        kind == .bool ? np_json_typeof(pointer) == Int32(JSON_TRUE.rawValue) : nil
    }

    /// Number of members of an object or elements of an array; 0 otherwise.
    public var count: Int {
        switch kind {
        case .object: return json_object_size(pointer)
        case .array: return json_array_size(pointer)
        default: return 0
        }
    }

    /// Members of every object in this value, nested ones included: one
    /// per key. Fewer than the `"key":value` pairs of the text it was
    /// parsed from exactly when an object there repeated a key.
    public var memberCount: Int {
        np_json_member_count(pointer)
    }

    /// The member named `key` of an object, or `nil`.
    public subscript(key: String) -> JSON? {
        guard kind == .object else { return nil }
        var key = key
        let found = key.withUTF8 { Self.member(of: pointer, named: $0) }
        return found.map { JSON(retaining: OpaquePointer($0)) }
    }

    /// The element at `index` of an array, or `nil`.
    public subscript(index: Int) -> JSON? {
        guard kind == .array, index >= 0, index < json_array_size(pointer),
              let found = json_array_get(pointer, index) else { return nil }
        return JSON(retaining: OpaquePointer(found))
    }

    /// The elements of an array (empty for other kinds).
    public var elements: [JSON] {
        guard kind == .array else { return [] }
        let size = json_array_size(pointer)
        var result: [JSON] = []
        result.reserveCapacity(size)
        for index in 0..<size {
            result.append(JSON(retaining: OpaquePointer(json_array_get(pointer, index)!)))
        }
        return result
    }

    /// The members of an object in jansson's (insertion) order.
    public var members: [(key: String, value: JSON)] {
        guard kind == .object else { return [] }
        var result: [(key: String, value: JSON)] = []
        var iterator = json_object_iter(pointer)
        while let current = iterator {
            let keyLength = json_object_iter_key_len(current)
            let keyChars = json_object_iter_key(current)!
            let key = keyChars.withMemoryRebound(to: UInt8.self, capacity: keyLength) {
                String(decoding: UnsafeBufferPointer(start: $0, count: keyLength), as: UTF8.self)
            }
            let value = JSON(retaining: OpaquePointer(json_object_iter_value(current)!))
            result.append((key, value))
            iterator = json_object_iter_next(pointer, current)
        }
        return result
    }

    /// Looks up an RFC 6901 JSON Pointer (`""` is the whole value).
    ///
    /// Returns `nil` when the pointer is malformed or names nothing.
    public func pointer(_ path: String) -> JSON? {
        if path.isEmpty { return self }
        var path = path
        let found = path.withUTF8 { Self.follow($0, from: pointer) }
        return found.map { JSON(retaining: OpaquePointer($0)) }
    }

    /// The value `path` (a non-empty RFC 6901 pointer, as UTF-8) names below
    /// `root`, or nil when it is malformed or names nothing. Walks jansson's
    /// values directly: nothing is allocated unless a token has `~` escapes.
    private static func follow(
        _ path: UnsafeBufferPointer<UInt8>, from root: UnsafeMutablePointer<json_t>
    ) -> UnsafeMutablePointer<json_t>? {
        guard path.first == UInt8(ascii: "/") else { return nil }
        var current = root
        var start = 1
        var unescaped: [UInt8] = []
        while true {
            var end = start
            var escaped = false
            while end < path.count && path[end] != UInt8(ascii: "/") {
                if path[end] == UInt8(ascii: "~") { escaped = true }
                end += 1
            }
            let token = UnsafeBufferPointer(rebasing: path[start..<end])
            let next: UnsafeMutablePointer<json_t>?
            if escaped {
                guard JSONPointer.unescape(token, into: &unescaped) else { return nil }
                next = unescaped.withUnsafeBufferPointer { child(of: current, at: $0) }
            } else {
                next = child(of: current, at: token)
            }
            guard let next else { return nil }
            current = next
            if end == path.count { return current }
            start = end + 1
        }
    }

    /// The member of an object, or the element of an array, that one
    /// unescaped pointer token names.
    private static func child(
        of value: UnsafeMutablePointer<json_t>, at token: UnsafeBufferPointer<UInt8>
    ) -> UnsafeMutablePointer<json_t>? {
        switch np_json_typeof(value) {
        case Int32(JSON_OBJECT.rawValue):
            return member(of: value, named: token)
        case Int32(JSON_ARRAY.rawValue):
            guard let index = JSONPointer.arrayIndex(token) else { return nil }
            return json_array_get(value, index)
        default:
            return nil
        }
    }

    /// The member of `object` whose key is `key` (UTF-8, may hold NUL bytes).
    private static func member(
        of object: UnsafeMutablePointer<json_t>, named key: UnsafeBufferPointer<UInt8>
    ) -> UnsafeMutablePointer<json_t>? {
        // jansson takes no null key, not even for the empty one.
        guard let base = key.baseAddress else { return json_object_getn(object, "", 0) }
        return base.withMemoryRebound(to: CChar.self, capacity: key.count) {
            json_object_getn(object, $0, key.count)
        }
    }

    // MARK: Output

    /// The compact encoding of this value (no whitespace, no raw newlines).
    public func dump() -> [UInt8] {
        let flags = Int(JSON_COMPACT | JSON_ENCODE_ANY)
        let size = json_dumpb(pointer, nil, 0, flags)
        guard size > 0 else { return Array("null".utf8) }
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            initialized = buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: size) {
                json_dumpb(pointer, $0, size, flags)
            }
        }
    }

    /// The compact encoding as a string.
    public var compactString: String { String(decoding: dump(), as: UTF8.self) }

    /// The compact encoding, with each real number in the shortest form
    /// that reads back as the same double (`0.1`, where jansson writes
    /// `0.10000000000000001`): for JSON a server may read as decimals, such
    /// as a request body. Everything else is written as `dump()` writes it.
    public func dumpShortestReals() -> [UInt8] {
        var out: [UInt8] = []
        appendShortestReals(to: &out)
        return out
    }

    private func appendShortestReals(to out: inout [UInt8]) {
        switch kind {
        case .object:
            out.append(UInt8(ascii: "{"))
            for (index, member) in members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: JSON.string(member.key).dump())
                out.append(UInt8(ascii: ":"))
                member.value.appendShortestReals(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        case .array:
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                element.appendShortestReals(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .real:
            // Swift's description is the shortest round-trip form (`1.1`, `1e-05`, `100.0`).
            out.append(contentsOf: Array((number ?? 0).description.utf8))
        default:
            out.append(contentsOf: dump())
        }
    }

    /// Structural equality (jansson's `json_equal`).
    public func isEqual(to other: JSON) -> Bool {
        json_equal(pointer, other.pointer) == 1
    }
}

// MARK: Building

extension JSON {
    /// A new empty object.
    public static func object() -> JSON { JSON(owning: OpaquePointer(json_object()!)) }

    /// A new object with the given members, in order.
    public static func object(_ members: KeyValuePairs<String, JSON>) -> JSON {
        let object = JSON.object()
        for (key, value) in members { object.set(key, value) }
        return object
    }

    /// A new array with the given elements.
    public static func array(_ elements: [JSON] = []) -> JSON {
        let array = JSON(owning: OpaquePointer(json_array()!))
        for element in elements { array.append(element) }
        return array
    }

    public static func string(_ value: String) -> JSON {
        var value = value
        let raw = value.withUTF8 { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                withUnsafePointer(to: 0 as CChar) { empty in json_stringn_nocheck(chars.baseAddress ?? empty, chars.count) }
            }
        }
        return JSON(owning: OpaquePointer(raw!))
    }

    public static func integer(_ value: Int64) -> JSON { JSON(owning: OpaquePointer(json_integer(json_int_t(value))!)) }
    public static func integer(_ value: Int) -> JSON { integer(Int64(value)) }
    public static func real(_ value: Double) -> JSON {
        guard let raw = json_real(value) else { return null() }
        return JSON(owning: OpaquePointer(raw))
    }
    public static func bool(_ value: Bool) -> JSON { JSON(owning: OpaquePointer((value ? json_true() : json_false())!)) }
    public static func null() -> JSON { JSON(owning: OpaquePointer(json_null()!)) }

    /// Sets an object member (the object keeps its own reference to `value`).
    public func set(_ key: String, _ value: JSON) {
        precondition(kind == .object, "set(_:_:) on a non-object")
        _ = key.utf8CString.withUnsafeBufferPointer { buffer in
            json_object_setn(pointer, buffer.baseAddress!, buffer.count - 1, value.pointer)
        }
    }

    /// Removes an object member, if present.
    public func remove(_ key: String) {
        guard kind == .object else { return }
        _ = json_object_del(pointer, key)
    }

    /// Appends to an array (the array keeps its own reference to `value`).
    public func append(_ value: JSON) {
        precondition(kind == .array, "append(_:) on a non-array")
        _ = json_array_append(pointer, value.pointer)
    }

    /// A deep copy that shares nothing with this value.
    public func deepCopy() -> JSON {
        JSON(owning: OpaquePointer(json_deep_copy(pointer)!))
    }
}

// MARK: Arenas

extension JSON {
    /// Runs `body` with a jansson arena scope open on this thread.
    ///
    /// Values parsed or built inside take their memory from a per-thread
    /// arena, so a page's tree is built and dropped without a `malloc` and a
    /// `free` per value. `body` is synchronous so the scope stays on one
    /// thread. Values may still outlive the scope: an arena chunk lives
    /// until the last value carved from it is released, on any thread; the
    /// saving comes from releasing them inside.
    public static func withArena<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        np_arena_begin()
        defer { np_arena_end() }
        return try body()
    }
}
