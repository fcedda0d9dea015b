#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Jansson
import NextPage

/// The one validator for collection definitions, shared by the config file
/// and `define`. Errors name the field as a dotted path
/// (`collections.friends.paging.strategy`) and say what was expected.
public struct DefinitionValidator: Sendable {
    /// Folder that relative `source.dir` paths are resolved against (`nil`: the working directory).
    public var baseDirectory: String?
    /// Variables for `${env:NAME}` in `http` and `command` sources (`nil`, the default: the process's environment).
    public var environment: [String: String]?
    /// Whether `command` sources are accepted (default `true`). The config
    /// file always may run commands; `define` only when the server runs with
    /// `--allow-commands`, so its validator has this set to `false` otherwise.
    public var allowsCommands: Bool
    /// Set while a config file is validated: an unset `${env:NAME}` is
    /// written down here (and expands to nothing) instead of rejecting the
    /// file, and its collection is served as unavailable.
    var unsetVariables: UnsetVariables?

    public init(baseDirectory: String? = nil, environment: [String: String]? = nil, allowsCommands: Bool = true) {
        self.baseDirectory = baseDirectory
        self.environment = environment
        self.allowsCommands = allowsCommands
    }

    /// `path` relative to `baseDirectory` (an absolute path, or any path
    /// when there is no base, stays as given). Leading `./` are dropped, so
    /// messages name `./pages` rather than `././pages`; the result keeps a
    /// slash whenever `path` had one, so a program path is never looked up
    /// in `PATH`.
    func resolve(_ path: String) -> String {
        guard !path.hasPrefix("/"), let base = baseDirectory else { return path }
        var rest = Substring(path)
        while rest.hasPrefix("./") { rest = rest.dropFirst(2) }
        if rest.isEmpty { return base.hasSuffix("/") ? base : base + "/" }
        if rest == "." { return base }
        if base == "." { return "./" + rest }
        return base.hasSuffix("/") ? base + rest : base + "/" + rest
    }

    /// Source types this build can serve.
    public static let sourceTypes = ["file", "http", "command"]
    static let httpSourceKeys: Set<String> = [
        "type", "url", "method", "body", "query", "headers", "timeout", "retries", "maxBodyBytes",
        "auth", "rateLimit", "maxRateLimitWait",
    ]
    static let commandSourceKeys: Set<String> = ["type", "argv", "env", "timeout", "maxBodyBytes"]
    static let fileSourceKeys: Set<String> = ["type", "dir", "maxBodyBytes"]
    static let collectionKeys: Set<String> = [
        "source", "paging", "pageSize", "pageSizeParam", "maxItems", "prefetch", "dedupe",
        "onRepeatedCursor", "maxEmptyPages", "incremental", "concurrency",
    ]
    static let pagingKeys: Set<String> = [
        "strategy", "param", "limitParam", "start", "bodyPointer", "header", "items", "next", "id", "hasNext", "total",
        "nextHeader",
    ]

    /// Validates a whole config file: `{"collections": {NAME: definition, ...}}`.
    public func validateConfig(_ json: JSON) throws(DefinitionError) -> [(name: String, definition: CollectionDefinition)] {
        guard json.kind == .object else { throw DefinitionError(field: "(top level)", expected: "an object") }
        for (key, _) in json.members where key != "collections" && key != "$schema" {
            throw DefinitionError(field: key, expected: "no such field (known: collections)")
        }
        if let schema = json["$schema"], schema.kind != .string {
            throw DefinitionError(field: "$schema", expected: "a string")
        }
        guard let collections = json["collections"] else {
            throw DefinitionError(field: "collections", expected: "an object of collection definitions")
        }
        guard collections.kind == .object else {
            throw DefinitionError(field: "collections", expected: "an object of collection definitions")
        }
        var result: [(name: String, definition: CollectionDefinition)] = []
        for (name, value) in collections.members {
            let prefix = "collections.\(name)"
            guard !name.isEmpty else { throw DefinitionError(field: prefix, expected: "a non-empty collection name") }
            // A variable the environment lacks here may be set where the file
            // is used, and it should not keep the other collections from being
            // served: the collection is kept, and its fetches say what is missing.
            var validator = self
            let unset = UnsetVariables()
            validator.unsetVariables = unset
            var definition = try validator.validate(value, at: prefix)
            if let first = unset.found.first {
                definition.unavailable = "environment variable \(first.name) is not set (for ${env:\(first.name)} in \(first.field))"
            }
            result.append((name, definition))
        }
        return result
    }

    /// Validates one definition (the object of SPEC §5). `path` prefixes field names
    /// (empty for `define`, `collections.NAME` for a config file); `ignoring` lists keys
    /// that belong to the caller (`name` in `define`).
    public func validate(_ json: JSON, at path: String = "", ignoring: Set<String> = []) throws(DefinitionError) -> CollectionDefinition {
        func field(_ name: String) -> String { path.isEmpty ? name : "\(path).\(name)" }
        guard json.kind == .object else { throw DefinitionError(field: path.isEmpty ? "(definition)" : path, expected: "an object") }
        for (key, _) in json.members where !Self.collectionKeys.contains(key) && !ignoring.contains(key) {
            throw DefinitionError(field: field(key), expected: "no such field (known: \(Self.collectionKeys.sorted().joined(separator: ", ")))")
        }
        let reader = FieldReader(object: json, path: path)

        // source
        guard let sourceJSON = json["source"], sourceJSON.kind == .object else {
            throw DefinitionError(field: field("source"), expected: "an object with \"type\"")
        }
        let source = try validateSource(sourceJSON, at: field("source"))

        // paging
        guard let pagingJSON = json["paging"], pagingJSON.kind == .object else {
            throw DefinitionError(field: field("paging"), expected: "an object with \"strategy\"")
        }
        let pagingPath = field("paging")
        for (key, _) in pagingJSON.members where !Self.pagingKeys.contains(key) {
            throw DefinitionError(field: "\(pagingPath).\(key)", expected: "no such field (known: \(Self.pagingKeys.sorted().joined(separator: ", ")))")
        }
        let pagingReader = FieldReader(object: pagingJSON, path: pagingPath)
        let strategyNames = Paging.Strategy.allCases.map(\.rawValue)
        guard let strategyName = try pagingReader.string("strategy", required: true),
              let strategy = Paging.Strategy(rawValue: strategyName) else {
            throw DefinitionError(field: "\(pagingPath).strategy", expected: "one of \(strategyNames.joined(separator: ", "))")
        }
        if let reason = strategy.implementation.needsResponseHeaders {
            switch source {
            case .file: throw DefinitionError(field: "\(pagingPath).strategy", expected: "a strategy the file source can serve (\(reason))")
            case .command: throw DefinitionError(field: "\(pagingPath).strategy", expected: "a strategy the command source can serve (\(reason))")
            case .http, .bundled: break
            }
        }
        if case .http(let http) = source {
            try validateCursorPlacement(pagingJSON, strategy: strategy, source: http, pagingPath: pagingPath, sourcePath: field("source"))
        }
        let nextHeader = try validateNextHeader(pagingJSON, strategy: strategy, source: source, pagingPath: pagingPath)
        let dedupe = try reader.bool("dedupe") ?? false
        var paging = Paging(
            strategy: strategy,
            param: try pagingReader.string("param", nonEmpty: true),
            limitParam: try pagingReader.string("limitParam", nonEmpty: true),
            start: try pagingReader.integer("start", min: 0).map(Int64.init),
            bodyPointer: try pagingReader.pointer("bodyPointer"),
            header: try pagingReader.string("header", nonEmpty: true),
            items: try pagingReader.pointer("items"),
            next: try pagingReader.pointer("next"),
            id: try pagingReader.pointer("id"),
            hasNext: try pagingReader.pointer("hasNext"),
            total: try pagingReader.pointer("total"),
            nextHeader: nextHeader)
        if dedupe && paging.id == nil { paging.id = "/id" }

        var options = CollectionOptions()
        options.pageSize = try reader.integer("pageSize", min: 1)
        options.pageSizeParam = try reader.string("pageSizeParam", nonEmpty: true)
        options.maxItems = try reader.integer("maxItems", min: 0) ?? options.maxItems
        options.prefetch = try reader.integer("prefetch", min: 0, max: 2) ?? 0
        options.dedupe = dedupe
        if let policy = try reader.string("onRepeatedCursor") {
            guard let value = CollectionOptions.RepeatedCursorPolicy(rawValue: policy) else {
                throw DefinitionError(field: field("onRepeatedCursor"), expected: "one of stop, error")
            }
            options.onRepeatedCursor = value
        }
        options.maxEmptyPages = try reader.integer("maxEmptyPages", min: 0) ?? options.maxEmptyPages
        options.incremental = try validateIncremental(json["incremental"], source: source, paging: paging, options: options, at: field("incremental"))
        options.concurrency = try reader.integer("concurrency", min: 1, max: 32) ?? 1
        return CollectionDefinition(source: source, paging: paging, options: options)
    }

    private func validateSource(_ json: JSON, at path: String) throws(DefinitionError) -> CollectionDefinition.Source {
        let reader = FieldReader(object: json, path: path)
        let types = Self.sourceTypes.joined(separator: ", ")
        guard let type = try reader.string("type", required: true, expected: "one of \(types)"),
              Self.sourceTypes.contains(type) else {
            throw DefinitionError(field: "\(path).type", expected: "one of \(types)")
        }
        if type == "http" { return .http(try validateHTTPSource(json, at: path)) }
        if type == "command" {
            guard allowsCommands else {
                throw DefinitionError(
                    field: "\(path).type",
                    expected: "one of file, http (command sources can be defined at run time only when the server runs with --allow-commands; the config file may always use them)")
            }
            return .command(try validateCommandSource(json, at: path))
        }
        for (key, _) in json.members where !Self.fileSourceKeys.contains(key) {
            throw DefinitionError(field: "\(path).\(key)", expected: "no such field for a file source (known: \(Self.fileSourceKeys.sorted().joined(separator: ", ")))")
        }
        guard let dir = try reader.string("dir", required: true, nonEmpty: true, expected: "a directory path") else {
            throw DefinitionError(field: "\(path).dir", expected: "a directory path")
        }
        let resolved = resolve(dir)
        var info = stat()
        guard stat(resolved, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw DefinitionError(field: "\(path).dir", expected: "an existing directory ('\(resolved)' is not one)")
        }
        let maxBodyBytes = try reader.integer("maxBodyBytes", min: 1) ?? FileClient.defaultMaxBodyBytes
        return .file(directory: resolved, maxBodyBytes: maxBodyBytes)
    }
}

extension DefinitionValidator {
    /// Validates `{"type": "http", ...}` and expands `${env:NAME}` in its url,
    /// query values and header values.
    func validateHTTPSource(_ json: JSON, at path: String) throws(DefinitionError) -> HTTPSource {
        let reader = FieldReader(object: json, path: path)
        for (key, _) in json.members where !Self.httpSourceKeys.contains(key) {
            throw DefinitionError(
                field: reader.name(key), expected: "no such field for an http source (known: \(Self.httpSourceKeys.sorted().joined(separator: ", ")))")
        }
        // Every value from the environment is a secret, but where it names
        // the endpoint: a whole URL, or the host.
        var fromEnvironment: [String] = []
        let url = try expand(
            try reader.string("url", required: true, expected: "an http or https URL")!, field: reader.name("url"),
            whenUnset: "http://unset.invalid/", values: &fromEnvironment)
        let host = HTTPURL.parts(url).authority.map { $0.split(separator: "@").last.map(String.init) ?? "" } ?? ""
        fromEnvironment.removeAll { $0.contains("://") || host.contains($0) }
        guard HTTPURL.isHTTP(url) else { throw DefinitionError(field: reader.name("url"), expected: "an http or https URL") }

        let methods = HTTPSource.Method.allCases.map(\.rawValue).joined(separator: ", ")
        var method = HTTPSource.Method.get
        if let name = try reader.string("method", expected: "one of \(methods)") {
            guard let parsed = HTTPSource.Method(rawValue: name) else {
                throw DefinitionError(field: reader.name("method"), expected: "one of \(methods)")
            }
            method = parsed
        }

        var body: RawJSON?
        if let value = json["body"] {
            guard value.kind == .object else { throw DefinitionError(field: reader.name("body"), expected: "a JSON object") }
            guard method == .post else { throw DefinitionError(field: reader.name("body"), expected: "no body with method GET (add \"method\": \"POST\")") }
            body = RawJSON(value)
        }

        var query: [(name: String, value: String)] = []
        if let object = json["query"] {
            guard object.kind == .object else { throw DefinitionError(field: reader.name("query"), expected: "an object of strings") }
            for (name, value) in object.members {
                let field = "\(reader.name("query")).\(name)"
                guard !name.isEmpty else { throw DefinitionError(field: field, expected: "a non-empty parameter name") }
                guard let text = value.string else { throw DefinitionError(field: field, expected: "a string") }
                query.append((name, try expand(text, field: field, values: &fromEnvironment)))
            }
        }

        var headers: [(name: String, value: String)] = []
        if let object = json["headers"] {
            guard object.kind == .object else { throw DefinitionError(field: reader.name("headers"), expected: "an object of strings") }
            for (name, value) in object.members {
                let field = "\(reader.name("headers")).\(name)"
                guard Self.isHeaderName(name) else { throw DefinitionError(field: field, expected: "a header name (letters, digits and !#$%&'*+-.^_`|~)") }
                guard let text = value.string else { throw DefinitionError(field: field, expected: "a string") }
                let expanded = try expand(text, field: field, values: &fromEnvironment)
                guard !expanded.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) else {
                    throw DefinitionError(field: field, expected: "a header value without line breaks")
                }
                headers.append((name, expanded))
            }
        }

        let timeout = try reader.seconds("timeout") ?? HTTPSource.defaultTimeout
        let retries = try reader.integer("retries", min: 0, max: 100) ?? HTTPSource.defaultRetries
        let maxBodyBytes = try reader.integer("maxBodyBytes", min: 1) ?? HTTPSource.defaultMaxBodyBytes
        let auth = try json["auth"].map { auth throws(DefinitionError) in try validateAuth(auth, at: reader.name("auth")) }
        let rateLimit = try json["rateLimit"].map { rate throws(DefinitionError) in try validateRequestRate(rate, at: reader.name("rateLimit")) }
        let maxRateLimitWait = try reader.waitSeconds("maxRateLimitWait") ?? HTTPSource.defaultMaxRateLimitWait
        return HTTPSource(
            url: url, method: method, body: body, query: query, headers: headers,
            timeout: timeout, retries: retries, maxBodyBytes: maxBodyBytes, environmentValues: fromEnvironment,
            auth: auth, rateLimit: rateLimit, maxRateLimitWait: maxRateLimitWait)
    }

    /// Checks where the cursor goes against the http source: one place at
    /// most, a body place only in a POST body, none for URL cursors.
    func validateCursorPlacement(
        _ paging: JSON, strategy: Paging.Strategy, source: HTTPSource, pagingPath: String, sourcePath: String
    ) throws(DefinitionError) {
        let bodyPointer = paging["bodyPointer"]?.string
        let header = paging["header"]?.string
        if bodyPointer != nil && header != nil {
            throw DefinitionError(field: "\(pagingPath).header", expected: "either bodyPointer or header, not both")
        }
        if strategy.implementation.cursorIsURL {
            if bodyPointer != nil {
                throw DefinitionError(field: "\(pagingPath).bodyPointer", expected: "no bodyPointer with the \(strategy.rawValue) strategy (its cursor is the next URL)")
            }
            if header != nil {
                throw DefinitionError(field: "\(pagingPath).header", expected: "no header with the \(strategy.rawValue) strategy (its cursor is the next URL)")
            }
        }
        if let header, !Self.isHeaderName(header) {
            throw DefinitionError(field: "\(pagingPath).header", expected: "a header name (letters, digits and !#$%&'*+-.^_`|~)")
        }
        if let bodyPointer {
            guard source.method == .post else {
                throw DefinitionError(field: "\(pagingPath).bodyPointer", expected: "a POST source (\"\(sourcePath).method\": \"POST\")")
            }
            let probe = (try? source.body?.parsed()) ?? JSON.object()
            guard !bodyPointer.isEmpty, HTTPPageClient.insert(.string("probe"), at: bodyPointer, into: probe) else {
                throw DefinitionError(
                    field: "\(pagingPath).bodyPointer",
                    expected: "a JSON Pointer to a member inside \(sourcePath).body (missing objects are created)")
            }
        }
    }

    /// Expands `${env:NAME}`; an unset variable is an error naming the field
    /// and the variable. In a config file it is noted in `unsetVariables`
    /// instead and expands to nothing, or the whole field becomes
    /// `whenUnset`, when given: a value the field's other checks accept
    /// (the collection cannot fetch anyway).
    func expand(_ text: String, field: String, whenUnset placeholder: String? = nil) throws(DefinitionError) -> String {
        var values: [String] = []
        return try expand(text, field: field, whenUnset: placeholder, values: &values)
    }

    /// `expand`, adding to `values` what each variable expanded to.
    func expand(
        _ text: String, field: String, whenUnset placeholder: String? = nil, values: inout [String]
    ) throws(DefinitionError) -> String {
        let unsetBefore = unsetVariables?.found.count ?? 0
        do {
            let expanded = try HTTPSource.expandEnvironment(text) { name in
                let value = environment.map { $0[name] } ?? getenv(name).map { String(cString: $0) }
                if value == nil, let unsetVariables {
                    unsetVariables.note(name, in: field)
                    return ""
                }
                if let value { values.append(value) }
                return value
            }
            if let placeholder, let unsetVariables, unsetVariables.found.count > unsetBefore { return placeholder }
            return expanded
        } catch {
            throw DefinitionError(field: field, expected: "environment variable \(error.name) to be set (for ${env:\(error.name)})")
        }
    }

    /// Whether `name` is an HTTP field name (RFC 9110 token).
    static func isHeaderName(_ name: String) -> Bool {
        !name.isEmpty && name.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "!#$%&'*+-.^_`|~".unicodeScalars.contains(scalar))
        }
    }
}

/// Reads typed optional fields of one object, naming the field in errors.
struct FieldReader {
    let object: JSON
    let path: String

    func name(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    func string(_ key: String, required: Bool = false, nonEmpty: Bool = false, expected: String? = nil) throws(DefinitionError) -> String? {
        let what = expected ?? (nonEmpty ? "a non-empty string" : "a string")
        guard let value = object[key] else {
            if required { throw DefinitionError(field: name(key), expected: what) }
            return nil
        }
        guard let text = value.string, !(nonEmpty && text.isEmpty) else { throw DefinitionError(field: name(key), expected: what) }
        return text
    }

    func integer(_ key: String, min: Int, max: Int? = nil) throws(DefinitionError) -> Int? {
        guard let value = object[key] else { return nil }
        let what = max.map { "an integer from \(min) to \($0)" } ?? "an integer ≥ \(min)"
        guard let number = value.integralValue, number >= min, max.map({ number <= $0 }) ?? true,
              let result = Int(exactly: number) else {
            throw DefinitionError(field: name(key), expected: what)
        }
        return result
    }

    /// A duration: a number of seconds above 0, at most a day.
    func seconds(_ key: String) throws(DefinitionError) -> Double? {
        guard let value = object[key] else { return nil }
        guard let seconds = value.number, seconds > 0, seconds <= 86_400 else {
            throw DefinitionError(field: name(key), expected: "a number of seconds > 0 (at most 86400)")
        }
        return seconds
    }

    /// A wait: a number of seconds from 0 (no waiting) to a day.
    func waitSeconds(_ key: String) throws(DefinitionError) -> Double? {
        guard let value = object[key] else { return nil }
        guard let seconds = value.number, seconds >= 0, seconds <= 86_400 else {
            throw DefinitionError(field: name(key), expected: "a number of seconds ≥ 0 (at most 86400)")
        }
        return seconds
    }

    func bool(_ key: String) throws(DefinitionError) -> Bool? {
        guard let value = object[key] else { return nil }
        guard let flag = value.bool else { throw DefinitionError(field: name(key), expected: "true or false") }
        return flag
    }

    func pointer(_ key: String) throws(DefinitionError) -> String? {
        guard let value = object[key] else { return nil }
        guard let text = value.string, JSONPointer.isValid(text) else {
            throw DefinitionError(field: name(key), expected: "a JSON Pointer (\"\" or starting with \"/\")")
        }
        return text
    }
}

/// The `${env:NAME}` of one definition that the environment does not set,
/// in the order they were met.
final class UnsetVariables: @unchecked Sendable {
    // Written only by the one validation that owns it, synchronously.
    private(set) var found: [(name: String, field: String)] = []

    func note(_ name: String, in field: String) {
        found.append((name, field))
    }
}
