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
///
/// Validation goes on past an error wherever the other checks still mean
/// something (an unknown key does not stop the check of the others; a bad
/// `source` skips only the checks that depend on it), so `checkConfig`
/// reports every error of a file at once; `validate` and `validateConfig`
/// throw the first one.
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
    /// Set under `--replay-upstream`: an unset `${env:NAME}` that only
    /// credentials use (header values, `source.auth` values), which a replay
    /// never sends, leaves the collection usable (`CollectionDefinition.unsetForReplay`);
    /// one in the URL or the query (which the recording must match) does not.
    public var replaysUpstream = false
    /// Where the errors of the validation under way go (each public entry
    /// point makes its own list); without one, the first error is thrown.
    var errors: DefinitionErrorList?

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

    /// Validates a whole config file: `{"collections": {NAME: definition, ...}}`;
    /// throws its first error.
    public func validateConfig(_ json: JSON) throws(DefinitionError) -> [(name: String, definition: CollectionDefinition)] {
        let checked = checkConfig(json)
        if let first = checked.errors.first { throw first }
        return checked.collections
    }

    /// Checks a whole config file: every error, in the order of the file
    /// (and no collections when there is one), or its collections.
    public func checkConfig(_ json: JSON) -> (collections: [(name: String, definition: CollectionDefinition)], errors: [DefinitionError]) {
        var validator = self
        let errors = DefinitionErrorList(root: json, isConfig: true)
        validator.errors = errors
        var collections: [(name: String, definition: CollectionDefinition)] = []
        do {
            collections = try validator.collectionsOfConfig(json)
        } catch {
            errors.record(error)
        }
        return (errors.count == 0 ? collections : [], errors.errors)
    }

    private func collectionsOfConfig(_ json: JSON) throws(DefinitionError) -> [(name: String, definition: CollectionDefinition)] {
        guard json.kind == .object else { throw DefinitionError(field: "(top level)", expected: "an object") }
        for (key, _) in json.members where key != "collections" && key != "$schema" {
            var error = DefinitionError(field: key, expected: "no such field (known: collections)", choices: ["collections", "$schema"])
            error.choicesAreFields = true
            try report(error)
        }
        if let schema = json["$schema"], schema.kind != .string {
            try report(DefinitionError(field: "$schema", expected: "a string"))
        }
        guard let collections = json["collections"], collections.kind == .object else {
            throw DefinitionError(field: "collections", expected: "an object of collection definitions")
        }
        var result: [(name: String, definition: CollectionDefinition)] = []
        for (name, value) in collections.members {
            let prefix = "collections.\(name)"
            guard !name.isEmpty else {
                try report(DefinitionError(field: prefix, expected: "a non-empty collection name"))
                continue
            }
            // A variable the environment lacks here may be set where the file
            // is used, and it should not keep the other collections from being
            // served: the collection is kept, and its fetches say what is missing.
            var validator = self
            let unset = UnsetVariables()
            validator.unsetVariables = unset
            guard var definition = try part({ () throws(DefinitionError) in try validator.definition(value, at: prefix, ignoring: []) }) else {
                continue
            }
            // A replay sends no credentials: those may stay unset.
            let blocking = replaysUpstream ? unset.found.filter { !$0.credential } : unset.found
            if let first = blocking.first {
                definition.unavailable = "environment variable \(first.name) is not set (for ${env:\(first.name)} in \(first.field))"
            } else {
                definition.unsetForReplay = unset.found
            }
            result.append((name, definition))
        }
        return result
    }

    /// Validates one definition (the object of docs/config.md). `path` prefixes field names
    /// (empty for `define`, `collections.NAME` for a config file); `ignoring` lists keys
    /// that belong to the caller (`name` in `define`). Throws the first error.
    public func validate(_ json: JSON, at path: String = "", ignoring: Set<String> = []) throws(DefinitionError) -> CollectionDefinition {
        let checked = check(json, at: path, ignoring: ignoring)
        if let first = checked.errors.first { throw first }
        guard let definition = checked.definition else {
            // Every definition left out has an error recorded; this is not reached.
            throw DefinitionError(field: path.isEmpty ? "(definition)" : path, expected: "a valid collection definition")
        }
        return definition
    }

    /// Checks one definition (see `validate`): every error, or the definition.
    /// Under `replaysUpstream`, an unset `${env:NAME}` that only credentials
    /// use is noted in `unsetForReplay`; any other is an error.
    public func check(_ json: JSON, at path: String = "", ignoring: Set<String> = []) -> (definition: CollectionDefinition?, errors: [DefinitionError]) {
        var validator = self
        let errors = DefinitionErrorList(root: json, rootPath: path, isConfig: false)
        validator.errors = errors
        let unset = replaysUpstream && unsetVariables == nil ? UnsetVariables() : unsetVariables
        validator.unsetVariables = unset
        var definition: CollectionDefinition?
        do {
            definition = try validator.definition(json, at: path, ignoring: ignoring)
        } catch {
            errors.record(error)
        }
        if replaysUpstream, unsetVariables == nil, let unset {
            if let first = unset.found.first(where: { !$0.credential }) {
                errors.record(DefinitionError(field: first.field, expected: "environment variable \(first.name) to be set (for ${env:\(first.name)})"))
            } else {
                definition?.unsetForReplay = unset.found
            }
        }
        return errors.count == 0 ? (definition, []) : (nil, errors.errors)
    }

    /// Records `error` and goes on (or throws it, without a list of errors).
    func report(_ error: DefinitionError) throws(DefinitionError) {
        guard let errors else { throw error }
        errors.record(error)
    }

    /// Runs a check whose failure need not stop the others: its error is
    /// recorded and `fallback` returned (without a list of errors, thrown).
    func attempt<T>(_ fallback: T, _ check: () throws(DefinitionError) -> T) throws(DefinitionError) -> T {
        do {
            return try check()
        } catch {
            try report(error)
            return fallback
        }
    }

    /// What `check` gives, or `nil` when it failed or recorded an error
    /// (the checks that depend on it are then moot).
    func part<T>(_ check: () throws(DefinitionError) -> T?) throws(DefinitionError) -> T? {
        let before = errorCount
        let value = try attempt(nil, check)
        return errorCount == before ? value : nil
    }

    /// How many errors were recorded so far.
    var errorCount: Int { errors?.count ?? 0 }

    /// Validates one definition at `path`, recording its errors; `nil` when it has any.
    func definition(_ json: JSON, at path: String, ignoring: Set<String>) throws(DefinitionError) -> CollectionDefinition? {
        func field(_ name: String) -> String { path.isEmpty ? name : "\(path).\(name)" }
        guard json.kind == .object else { throw DefinitionError(field: path.isEmpty ? "(definition)" : path, expected: "an object") }
        let before = errorCount
        for (key, _) in json.members where !Self.collectionKeys.contains(key) && !ignoring.contains(key) {
            try report(.unknownField(field(key), known: Self.collectionKeys))
        }
        let reader = FieldReader(object: json, path: path)

        // source: when it is missing or invalid, the checks that depend on it are skipped.
        var source: CollectionDefinition.Source?
        if let sourceJSON = json["source"], sourceJSON.kind == .object {
            source = try part { () throws(DefinitionError) in try validateSource(sourceJSON, at: field("source")) }
        } else {
            try report(DefinitionError(field: field("source"), expected: "an object with \"type\""))
        }

        // paging
        let pagingPath = field("paging")
        let pagingJSON = json["paging"].flatMap { $0.kind == .object ? $0 : nil }
        var strategy: Paging.Strategy?
        var nextHeader: String?
        if let pagingJSON {
            for (key, _) in pagingJSON.members where !Self.pagingKeys.contains(key) {
                try report(.unknownField("\(pagingPath).\(key)", known: Self.pagingKeys))
            }
            let pagingReader = FieldReader(object: pagingJSON, path: pagingPath)
            let strategyNames = Paging.Strategy.allCases.map(\.rawValue)
            strategy = try attempt(nil) { () throws(DefinitionError) -> Paging.Strategy? in
                guard let name = try pagingReader.string("strategy", required: true), let strategy = Paging.Strategy(rawValue: name) else {
                    throw DefinitionError(field: "\(pagingPath).strategy", expected: "one of \(strategyNames.joined(separator: ", "))", choices: strategyNames)
                }
                return strategy
            }
            if let strategy, let source, let reason = strategy.implementation.needsResponseHeaders {
                switch source {
                case .file: try report(DefinitionError(field: "\(pagingPath).strategy", expected: "a strategy the file source can serve (\(reason))"))
                case .command: try report(DefinitionError(field: "\(pagingPath).strategy", expected: "a strategy the command source can serve (\(reason))"))
                case .http, .bundled: break
                }
            }
            if let strategy, case .http(let http)? = source {
                try attempt(()) { () throws(DefinitionError) in
                    try validateCursorPlacement(pagingJSON, strategy: strategy, source: http, pagingPath: pagingPath, sourcePath: field("source"))
                }
            }
            nextHeader = try attempt(nil) { () throws(DefinitionError) in
                try validateNextHeader(pagingJSON, strategy: strategy, source: source, pagingPath: pagingPath)
            }
        } else {
            try report(DefinitionError(field: pagingPath, expected: "an object with \"strategy\""))
        }
        let dedupe = try attempt(false) { () throws(DefinitionError) in try reader.bool("dedupe") ?? false }
        var paging: Paging?
        if let pagingJSON {
            let pagingReader = FieldReader(object: pagingJSON, path: pagingPath)
            let param = try attempt(nil) { () throws(DefinitionError) in try pagingReader.string("param", nonEmpty: true) }
            let limitParam = try attempt(nil) { () throws(DefinitionError) in try pagingReader.string("limitParam", nonEmpty: true) }
            let start = try attempt(nil) { () throws(DefinitionError) in try pagingReader.integer("start", min: 0).map(Int64.init) }
            let bodyPointer = try attempt(nil) { () throws(DefinitionError) in try pagingReader.pointer("bodyPointer") }
            let header = try attempt(nil) { () throws(DefinitionError) in try pagingReader.string("header", nonEmpty: true) }
            let items = try attempt(nil) { () throws(DefinitionError) in try pagingReader.pointer("items") }
            let next = try attempt(nil) { () throws(DefinitionError) in try pagingReader.pointer("next") }
            let id = try attempt(nil) { () throws(DefinitionError) in try pagingReader.pointer("id") }
            let hasNext = try attempt(nil) { () throws(DefinitionError) in try pagingReader.pointer("hasNext") }
            let total = try attempt(nil) { () throws(DefinitionError) in try pagingReader.pointer("total") }
            if let strategy {
                paging = Paging(
                    strategy: strategy, param: param, limitParam: limitParam, start: start, bodyPointer: bodyPointer, header: header,
                    items: items, next: next, id: id, hasNext: hasNext, total: total, nextHeader: nextHeader)
                if dedupe && paging?.id == nil { paging?.id = "/id" }
            }
        }

        var options = CollectionOptions()
        options.pageSize = try attempt(nil) { () throws(DefinitionError) in try reader.integer("pageSize", min: 1) }
        options.pageSizeParam = try attempt(nil) { () throws(DefinitionError) in try reader.string("pageSizeParam", nonEmpty: true) }
        options.maxItems = try attempt(nil) { () throws(DefinitionError) in try reader.integer("maxItems", min: 0) } ?? options.maxItems
        options.prefetch = try attempt(nil) { () throws(DefinitionError) in try reader.integer("prefetch", min: 0, max: 2) } ?? 0
        options.dedupe = dedupe
        try attempt(()) { () throws(DefinitionError) in
            if let policy = try reader.string("onRepeatedCursor") {
                guard let value = CollectionOptions.RepeatedCursorPolicy(rawValue: policy) else {
                    throw DefinitionError(field: field("onRepeatedCursor"), expected: "one of stop, error", choices: ["stop", "error"])
                }
                options.onRepeatedCursor = value
            }
        }
        options.maxEmptyPages = try attempt(nil) { () throws(DefinitionError) in try reader.integer("maxEmptyPages", min: 0) } ?? options.maxEmptyPages
        let incremental = try attempt(nil) { () throws(DefinitionError) in
            try validateIncremental(json["incremental"], source: source, paging: paging, options: options, at: field("incremental"))
        }
        options.incremental = incremental
        options.concurrency = try attempt(nil) { () throws(DefinitionError) in try reader.integer("concurrency", min: 1, max: 32) } ?? 1
        guard errorCount == before, let source, let paging else { return nil }
        return CollectionDefinition(source: source, paging: paging, options: options)
    }

    /// Validates `source`; `nil` when it has errors (recorded).
    private func validateSource(_ json: JSON, at path: String) throws(DefinitionError) -> CollectionDefinition.Source? {
        let reader = FieldReader(object: json, path: path)
        let types = Self.sourceTypes.joined(separator: ", ")
        let type = try attempt(nil) { () throws(DefinitionError) -> String? in
            guard let type = try reader.string("type", required: true, expected: "one of \(types)"),
                  Self.sourceTypes.contains(type) else {
                throw DefinitionError(field: "\(path).type", expected: "one of \(types)", choices: Self.sourceTypes)
            }
            return type
        }
        guard let type else {
            // Which fields belong depends on the type: only those no source has are known to be wrong.
            let anySource = Self.httpSourceKeys.union(Self.commandSourceKeys).union(Self.fileSourceKeys)
            for (key, _) in json.members where !anySource.contains(key) {
                try report(.unknownField(reader.name(key), known: anySource, what: "no such field for any source"))
            }
            return nil
        }
        if type == "http" { return try validateHTTPSource(json, at: path).map { .http($0) } }
        if type == "command" {
            guard allowsCommands else {
                throw DefinitionError(
                    field: "\(path).type",
                    expected: "one of file, http (command sources can be defined at run time only when the server runs with --allow-commands; the config file may always use them)")
            }
            return try validateCommandSource(json, at: path).map { .command($0) }
        }
        let before = errorCount
        for (key, _) in json.members where !Self.fileSourceKeys.contains(key) {
            try report(.unknownField("\(path).\(key)", known: Self.fileSourceKeys, what: "no such field for a file source"))
        }
        let directory = try attempt(nil) { () throws(DefinitionError) -> String? in
            guard let dir = try reader.string("dir", required: true, nonEmpty: true, expected: "a directory path") else {
                throw DefinitionError(field: "\(path).dir", expected: "a directory path")
            }
            let resolved = resolve(dir)
            var info = stat()
            guard stat(resolved, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
                throw DefinitionError(field: "\(path).dir", expected: "an existing directory ('\(resolved)' is not one)")
            }
            return resolved
        }
        let maxBodyBytes = try attempt(nil) { () throws(DefinitionError) in try reader.integer("maxBodyBytes", min: 1) } ?? FileClient.defaultMaxBodyBytes
        guard errorCount == before, let directory else { return nil }
        return .file(directory: directory, maxBodyBytes: maxBodyBytes)
    }
}

extension DefinitionValidator {
    /// Validates `{"type": "http", ...}` and expands `${env:NAME}` in its url,
    /// query values and header values; `nil` when it has errors (recorded).
    /// Under `replaysUpstream`, a header whose value uses an unset variable
    /// is left out (a replay does not compare it).
    func validateHTTPSource(_ json: JSON, at path: String) throws(DefinitionError) -> HTTPSource? {
        let reader = FieldReader(object: json, path: path)
        let before = errorCount
        for (key, _) in json.members where !Self.httpSourceKeys.contains(key) {
            try report(.unknownField(reader.name(key), known: Self.httpSourceKeys, what: "no such field for an http source"))
        }
        // Every value from the environment is a secret, but where it names
        // the endpoint: a whole URL, or the host.
        var fromEnvironment: [String] = []
        let url = try attempt(nil) { () throws(DefinitionError) -> String? in
            let url = try expand(
                try reader.string("url", required: true, expected: "an http or https URL")!, field: reader.name("url"),
                whenUnset: "http://unset.invalid/", values: &fromEnvironment)
            let host = HTTPURL.parts(url).authority.map { $0.split(separator: "@").last.map(String.init) ?? "" } ?? ""
            fromEnvironment.removeAll { $0.contains("://") || host.contains($0) }
            guard HTTPURL.isHTTP(url) else { throw DefinitionError(field: reader.name("url"), expected: "an http or https URL") }
            return url
        }

        let methodNames = HTTPSource.Method.allCases.map(\.rawValue)
        let methods = methodNames.joined(separator: ", ")
        let method = try attempt(nil) { () throws(DefinitionError) -> HTTPSource.Method? in
            guard let name = try reader.string("method", expected: "one of \(methods)") else { return .get }
            guard let parsed = HTTPSource.Method(rawValue: name) else {
                throw DefinitionError(field: reader.name("method"), expected: "one of \(methods)", choices: methodNames)
            }
            return parsed
        }

        var body: RawJSON?
        if let value = json["body"] {
            if value.kind != .object {
                try report(DefinitionError(field: reader.name("body"), expected: "a JSON object"))
            } else if let method, method != .post {
                try report(DefinitionError(field: reader.name("body"), expected: "no body with method GET (add \"method\": \"POST\")"))
            } else {
                body = RawJSON(value)
            }
        }

        var query: [(name: String, value: String)] = []
        if let object = json["query"] {
            if object.kind != .object { try report(DefinitionError(field: reader.name("query"), expected: "an object of strings")) }
            for (name, value) in object.kind == .object ? object.members : [] {
                let field = "\(reader.name("query")).\(name)"
                try attempt(()) { () throws(DefinitionError) in
                    guard !name.isEmpty else { throw DefinitionError(field: field, expected: "a non-empty parameter name") }
                    guard let text = value.string else { throw DefinitionError(field: field, expected: "a string") }
                    query.append((name, try expand(text, field: field, values: &fromEnvironment)))
                }
            }
        }

        var headers: [(name: String, value: String)] = []
        if let object = json["headers"] {
            if object.kind != .object { try report(DefinitionError(field: reader.name("headers"), expected: "an object of strings")) }
            for (name, value) in object.kind == .object ? object.members : [] {
                let field = "\(reader.name("headers")).\(name)"
                try attempt(()) { () throws(DefinitionError) in
                    guard Self.isHeaderName(name) else { throw DefinitionError(field: field, expected: "a header name (letters, digits and !#$%&'*+-.^_`|~)") }
                    guard let text = value.string else { throw DefinitionError(field: field, expected: "a string") }
                    let unsetBefore = unsetVariables?.found.count ?? 0
                    let expanded = try expand(text, field: field, values: &fromEnvironment, credential: true)
                    guard !expanded.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) else {
                        throw DefinitionError(field: field, expected: "a header value without line breaks")
                    }
                    if replaysUpstream, (unsetVariables?.found.count ?? 0) > unsetBefore { return }
                    headers.append((name, expanded))
                }
            }
        }

        let timeout = try attempt(nil) { () throws(DefinitionError) in try reader.seconds("timeout") } ?? HTTPSource.defaultTimeout
        let retries = try attempt(nil) { () throws(DefinitionError) in try reader.integer("retries", min: 0, max: 100) } ?? HTTPSource.defaultRetries
        let maxBodyBytes = try attempt(nil) { () throws(DefinitionError) in try reader.integer("maxBodyBytes", min: 1) } ?? HTTPSource.defaultMaxBodyBytes
        var auth: HTTPAuth?
        if let value = json["auth"] {
            auth = try part { () throws(DefinitionError) in try validateAuth(value, at: reader.name("auth")) }
        }
        var rateLimit: RequestRate?
        if let value = json["rateLimit"] {
            rateLimit = try part { () throws(DefinitionError) in try validateRequestRate(value, at: reader.name("rateLimit")) }
        }
        let maxRateLimitWait = try attempt(nil) { () throws(DefinitionError) in try reader.waitSeconds("maxRateLimitWait") }
            ?? HTTPSource.defaultMaxRateLimitWait
        guard errorCount == before, let url, let method else { return nil }
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
    /// `credential`: the field is one that a replay never sends (a header
    /// value, a credential of `source.auth`).
    func expand(_ text: String, field: String, whenUnset placeholder: String? = nil, credential: Bool = false) throws(DefinitionError) -> String {
        var values: [String] = []
        return try expand(text, field: field, whenUnset: placeholder, values: &values, credential: credential)
    }

    /// `expand`, adding to `values` what each variable expanded to.
    func expand(
        _ text: String, field: String, whenUnset placeholder: String? = nil, values: inout [String], credential: Bool = false
    ) throws(DefinitionError) -> String {
        let unsetBefore = unsetVariables?.found.count ?? 0
        do {
            let expanded = try HTTPSource.expandEnvironment(text) { name in
                let value = environment.map { $0[name] } ?? getenv(name).map { String(cString: $0) }
                if value == nil, let unsetVariables {
                    unsetVariables.note(UnsetVariable(name: name, field: field, credential: credential))
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

/// An `${env:NAME}` the environment does not set, and the field that uses it.
public struct UnsetVariable: Sendable, Equatable {
    /// The variable's name (`GITHUB_TOKEN`).
    public var name: String
    /// The field, as a dotted path (`collections.issues.source.headers.Authorization`).
    public var field: String
    /// Whether the field is one a replay never sends: a header value, or a
    /// credential of `source.auth` (not its token URL, nor a credential
    /// helper's argv, which runs under a replay too).
    public var credential: Bool
}

/// The `${env:NAME}` of one definition that the environment does not set,
/// in the order they were met.
final class UnsetVariables: @unchecked Sendable {
    // Written only by the one validation that owns it, synchronously.
    private(set) var found: [UnsetVariable] = []

    func note(_ variable: UnsetVariable) {
        found.append(variable)
    }
}
