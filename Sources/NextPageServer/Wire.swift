import Jansson
import JSONRPC
import NextPage

/// The wire shapes of docs/methods.md (Page, State) and the one conversion from
/// internal errors to JSON-RPC errors (docs/methods.md, Errors).
enum Wire {
    /// A State; `rateLimit` when the source reported one (docs/config.md).
    static func state(_ collection: String, _ state: NextPageState, rateLimit: RateLimitStatus? = nil) -> RawJSON {
        .object([
            "collection": .string(collection),
            "hasNext": .bool(state.hasNext),
            "isLoading": .bool(state.isLoading),
            "lastId": state.lastId?.json ?? .null,
            "count": .integer(state.count),
            "pages": .integer(state.pages),
            "lastError": state.lastError.map(RawJSON.string) ?? .null,
            // What an `auto` collection's walk picked from its first page (null before it).
            "paging": state.picksPaging ? state.pick?.json ?? .null : nil,
            "incremental": state.incremental.map { incremental in
                .object([
                    "value": incremental.value?.json ?? .null,
                    "seen": incremental.seen?.json ?? .null,
                    "withoutValue": .integer(incremental.withoutValue),
                ])
            },
            "rateLimit": rateLimit.map { limit in
                .object([
                    "remaining": limit.remaining.map(RawJSON.integer) ?? .null,
                    "resetAt": limit.resetAt.map { .integer(unixSeconds($0)) } ?? .null,
                ])
            },
        ])
    }

    /// Unix seconds as a whole number, rounded up (a retry at `retryAt` is
    /// never early).
    static func unixSeconds(_ value: Double) -> Int {
        guard value.isFinite else { return value > 0 ? Int(Int32.max) : 0 }
        return Int(min(max(value.rounded(.up), 0), 1e15))
    }

    /// A Page; with `fields`, its items projected (docs/methods.md).
    static func page(_ collection: String, _ result: PageResult, fields: FieldProjection? = nil) -> RawJSON {
        .object([
            "collection": .string(collection),
            "items": (fields.map { $0.project(result.items) } ?? result.items).json,
            "page": .integer(result.page),
            "hasNext": .bool(result.state.hasNext),
            "lastId": result.state.lastId?.json ?? .null,
            "count": .integer(result.state.count),
            "skipped": result.skipped ? .true : nil,
            // Why this page stopped a source that claimed more (a repeated cursor, too many empty pages).
            "lastError": result.stopReason.map(RawJSON.string),
        ])
    }

    static func error(_ error: LoadError, collection: String) -> RPCError {
        switch error {
        case .upstream(let failure):
            return RPCError(code: -32002, message: "Upstream failed: \(failure.message)", data: .object([
                "collection": .string(collection),
                "status": failure.status.map(RawJSON.integer),
                "attempts": .integer(failure.attempts),
                "retryable": .bool(failure.retryable),
                "message": .string(failure.message),
                "retryAt": failure.retryAt.map { .integer(unixSeconds($0)) },
            ]))
        case .undecodable(let failure):
            return RPCError(code: -32003, message: "Upstream page not understood: \(failure.message)", data: .object([
                "collection": .string(collection),
                "pointer": failure.pointer.map(RawJSON.string),
                "line": failure.line.map(RawJSON.integer),
                "column": failure.column.map(RawJSON.integer),
                "message": .string(failure.message),
            ]))
        case .cancelled:
            return .cancelled
        case .definition(let field, let expected):
            return RPCError(
                code: -32004, message: "Invalid collection definition of \(collection), as its first page shows: \(field): expected \(expected)",
                data: .object(["field": .string(field), "expected": .string(expected)]))
        }
    }

    static func unknownCollection(_ name: String, known: [String]) -> RPCError {
        RPCError(code: -32001, message: "Unknown collection: \(name)", data: .object([
            "collection": .string(name),
            "known": .array(known.sorted().map(RawJSON.string)),
        ]))
    }

    static func invalidDefinition(_ error: DefinitionError) -> RPCError {
        RPCError(code: -32004, message: "Invalid collection definition: \(error)", data: .object([
            "field": .string(error.field), "expected": .string(error.expected),
        ]))
    }
}

/// Typed access to a request's named params, with -32602 errors naming the field.
struct Params {
    let object: JSON?
    /// The request's `progressToken` beside `params`, if any.
    let progressTokenBeside: JSON?

    init(_ request: RPCRequest) throws(RPCError) {
        if let params = request.params, params.kind != .object {
            throw RPCError.invalidParams(field: "params", expected: "an object of named params")
        }
        object = request.params
        progressTokenBeside = request.progressToken
    }

    func string(_ key: String) throws(RPCError) -> String? {
        guard let value = object?[key], !value.isNull else { return nil }
        guard let text = value.string else { throw .invalidParams(field: key, expected: "a string") }
        return text
    }

    func requiredString(_ key: String) throws(RPCError) -> String {
        guard let text = try string(key) else { throw .invalidParams(field: key, expected: "a string") }
        return text
    }

    func integer(_ key: String, min: Int = 0) throws(RPCError) -> Int? {
        guard let value = object?[key], !value.isNull else { return nil }
        guard let number = value.integralValue, number >= min, let result = Int(exactly: number) else {
            throw .invalidParams(field: key, expected: "an integer ≥ \(min)")
        }
        return result
    }

    func cursor(_ key: String) throws(RPCError) -> Cursor? {
        guard let value = object?[key] else { return nil }
        switch Cursor.from(value) {
        case .success(let cursor): return cursor
        case .failure: throw .invalidParams(field: key, expected: "a string, an integer or null")
        }
    }

    func bool(_ key: String) throws(RPCError) -> Bool? {
        guard let value = object?[key], !value.isNull else { return nil }
        guard let flag = value.bool else { throw .invalidParams(field: key, expected: "true or false") }
        return flag
    }

    func raw(_ key: String) -> JSON? { object?[key] }

    /// A `fields` projection: an array of JSON Pointers (null or absent: none).
    func fields(_ key: String) throws(RPCError) -> FieldProjection? {
        guard let value = object?[key], !value.isNull else { return nil }
        let expected = "an array of JSON Pointers to members of an item, such as [\"/title\", \"/user/login\"]"
        guard value.kind == .array else { throw .invalidParams(field: key, expected: expected) }
        var pointers: [String] = []
        for (index, element) in value.elements.enumerated() {
            guard let pointer = element.string else { throw .invalidParams(field: "\(key)[\(index)]", expected: "a JSON Pointer string") }
            pointers.append(pointer)
        }
        do {
            return try FieldProjection(pointers: pointers)
        } catch {
            throw .invalidParams(field: key, expected: error.description)
        }
    }

    /// A progress token: a string or an integer, as in LSP; in params, in
    /// `params._meta` (as MCP sends it), or else beside the params
    /// (`{"params": {...}, "progressToken": T}`).
    func progressToken(_ key: String) throws(RPCError) -> RawJSON? {
        let meta = object?["_meta"].flatMap { $0.kind == .object ? $0[key] : nil }
        for (field, value) in [(key, object?[key]), ("_meta." + key, meta), (key, progressTokenBeside)] {
            guard let value, !value.isNull else { continue }
            guard value.kind == .string || value.kind == .integer else {
                throw .invalidParams(field: field, expected: "a string or an integer")
            }
            return RawJSON(value)
        }
        return nil
    }
}
