import Jansson
import NextPage

extension DefinitionValidator {
    /// The fields of each kind of `source.auth`.
    static let authKeys: [String: Set<String>] = [
        "bearer": ["type", "token"],
        "basic": ["type", "username", "password"],
        "header": ["type", "name", "value"],
        "command": ["type", "argv", "scheme", "timeout"],
        "oauth2": ["type", "tokenUrl", "clientId", "clientSecret", "scopes", "refreshToken", "clientAuth"],
    ]
    static let requestRateKeys: Set<String> = ["requestsPerSecond", "burst"]

    /// Validates `source.auth` (docs/config.md) and expands `${env:NAME}` in its
    /// values; `nil` when it has errors (recorded). A `command` credential
    /// helper is a program to run: `define` accepts it only when the server
    /// runs with `--allow-commands`, as it does command sources.
    func validateAuth(_ json: JSON, at path: String) throws(DefinitionError) -> HTTPAuth? {
        let typeNames = HTTPAuth.typeNames
        let types = typeNames.joined(separator: ", ")
        guard json.kind == .object else { throw DefinitionError(field: path, expected: "an object with \"type\" (one of \(types))") }
        let reader = FieldReader(object: json, path: path)
        guard let type = try reader.string("type", required: true, expected: "one of \(types)"), let keys = Self.authKeys[type] else {
            throw DefinitionError(field: reader.name("type"), expected: "one of \(types)", choices: typeNames)
        }
        let before = errorCount
        for (key, _) in json.members where !keys.contains(key) {
            try report(.unknownField(reader.name(key), known: keys, what: "no such field for \(type) auth"))
        }
        /// A required string, expanded, without line breaks (it goes in a
        /// header); `credential`: a replay never sends it. When it is not,
        /// the error is recorded and a placeholder returned.
        func value(_ key: String, what: String = "a non-empty string", allowEmpty: Bool = false, credential: Bool = true) throws(DefinitionError) -> String {
            try attempt("unset") { () throws(DefinitionError) -> String in
                let field = reader.name(key)
                guard let text = try reader.string(key, required: true, nonEmpty: !allowEmpty, expected: what) else {
                    throw DefinitionError(field: field, expected: what)
                }
                let expanded = try expand(text, field: field, whenUnset: "unset", credential: credential)
                guard allowEmpty || !expanded.isEmpty else { throw DefinitionError(field: field, expected: what) }
                guard !expanded.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) else {
                    throw DefinitionError(field: field, expected: "a value without line breaks or NUL (it is sent in a header)")
                }
                return expanded
            }
        }

        let auth: HTTPAuth
        switch type {
        case "bearer":
            auth = .bearer(token: try value("token", what: "a non-empty token"))
        case "basic":
            let username = try value("username", allowEmpty: true)
            if username.contains(":") {
                try report(DefinitionError(field: reader.name("username"), expected: "a user name without \":\" (RFC 7617)"))
            }
            auth = .basic(username: username, password: try value("password", what: "a string", allowEmpty: true))
        case "header":
            let name = try attempt("X-Unset") { () throws(DefinitionError) -> String in
                guard let name = try reader.string("name", required: true, expected: "a header name"), Self.isHeaderName(name) else {
                    throw DefinitionError(field: reader.name("name"), expected: "a header name (letters, digits and !#$%&'*+-.^_`|~)")
                }
                return name
            }
            auth = .header(name: name, value: try value("value", what: "a string", allowEmpty: true))
        case "command":
            guard allowsCommands else {
                throw DefinitionError(
                    field: reader.name("type"),
                    expected: "one of bearer, basic, header, oauth2 (a command credential helper can be defined at run time only when the server runs with --allow-commands; the config file may always use one)")
            }
            let argv = try attempt([]) { () throws(DefinitionError) in try validateArgv(json["argv"], at: reader.name("argv")) }
            var scheme = CredentialCommand.defaultScheme
            if json["scheme"] != nil { scheme = try value("scheme", what: "a string (\"Bearer\"; empty: the token alone)", allowEmpty: true) }
            if scheme.contains(" ") {
                try report(DefinitionError(field: reader.name("scheme"), expected: "one word (\"Bearer\", \"token\"; empty: the token alone)"))
            }
            let timeout = try attempt(nil) { () throws(DefinitionError) in try reader.seconds("timeout") } ?? CredentialCommand.defaultTimeout
            auth = .command(CredentialCommand(argv: argv, scheme: scheme, timeout: timeout))
        default:
            let urlField = reader.name("tokenUrl")
            let tokenURL = try attempt("") { () throws(DefinitionError) -> String in
                guard let text = try reader.string("tokenUrl", required: true, expected: "an http or https URL") else {
                    throw DefinitionError(field: urlField, expected: "an http or https URL")
                }
                let tokenURL = try expand(text, field: urlField, whenUnset: "http://unset.invalid/")
                guard HTTPURL.isHTTP(tokenURL) else { throw DefinitionError(field: urlField, expected: "an http or https URL") }
                return tokenURL
            }
            // The client id goes in the token request's body with "clientAuth": "body" (which a replay matches), else in a header.
            let clientId = try value("clientId", credential: json["clientAuth"]?.string != "body")
            let clientSecret = try value("clientSecret", what: "a string", allowEmpty: true)
            var scopes: [String] = []
            if let list = json["scopes"] {
                let what = "an array of scopes (non-empty strings without spaces)"
                if list.kind != .array { try report(DefinitionError(field: reader.name("scopes"), expected: what)) }
                for (index, element) in list.kind == .array ? list.elements.enumerated().map({ $0 }) : [] {
                    guard let scope = element.string, !scope.isEmpty, !scope.contains(" "),
                          !scope.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
                        try report(DefinitionError(field: "\(reader.name("scopes")).\(index)", expected: "a scope (a non-empty string without spaces)"))
                        continue
                    }
                    scopes.append(scope)
                }
            }
            var refreshToken: String?
            if json["refreshToken"] != nil { refreshToken = try value("refreshToken", what: "a non-empty refresh token") }
            let clientAuthentication = try attempt(.basic) { () throws(DefinitionError) -> OAuth2Settings.ClientAuthentication in
                guard let name = try reader.string("clientAuth", expected: "one of basic, body") else { return .basic }
                guard let parsed = OAuth2Settings.ClientAuthentication(rawValue: name) else {
                    throw DefinitionError(field: reader.name("clientAuth"), expected: "one of basic, body", choices: ["basic", "body"])
                }
                return parsed
            }
            auth = .oauth2(OAuth2Settings(
                tokenURL: tokenURL, clientId: clientId, clientSecret: clientSecret, scopes: scopes, refreshToken: refreshToken,
                clientAuthentication: clientAuthentication))
        }
        return errorCount == before ? auth : nil
    }

    /// A credential helper's argv: a program (a relative path with a `/`
    /// resolved against the config's folder) and its arguments, expanded.
    private func validateArgv(_ list: JSON?, at field: String) throws(DefinitionError) -> [String] {
        let expected = "a non-empty array of strings: the program, then its arguments"
        guard let list, list.kind == .array, !list.elements.isEmpty else { throw DefinitionError(field: field, expected: expected) }
        let before = errorCount
        var argv: [String] = []
        for (index, element) in list.elements.enumerated() {
            try attempt(()) { () throws(DefinitionError) in
                guard let text = element.string else { throw DefinitionError(field: "\(field).\(index)", expected: "a string") }
                let expanded = try expand(text, field: "\(field).\(index)", whenUnset: index == 0 ? "unset-program" : nil)
                guard !expanded.utf8.contains(0) else { throw DefinitionError(field: "\(field).\(index)", expected: "a string without NUL characters") }
                argv.append(expanded)
            }
        }
        guard errorCount == before else { return [] }
        guard !argv[0].isEmpty else { throw DefinitionError(field: "\(field).0", expected: "a program name or path (not empty)") }
        if argv[0].contains("/") { argv[0] = resolve(argv[0]) }
        return argv
    }

    /// Validates `source.rateLimit`: `{"requestsPerSecond": R, "burst": B}`.
    func validateRequestRate(_ json: JSON, at path: String) throws(DefinitionError) -> RequestRate? {
        guard json.kind == .object else {
            throw DefinitionError(field: path, expected: "an object with \"requestsPerSecond\" (and \"burst\")")
        }
        let reader = FieldReader(object: json, path: path)
        let before = errorCount
        for (key, _) in json.members where !Self.requestRateKeys.contains(key) {
            try report(.unknownField(reader.name(key), known: Self.requestRateKeys))
        }
        let rate = json["requestsPerSecond"]?.number
        if rate == nil || !(rate! > 0 && rate! <= 1_000_000) {
            try report(DefinitionError(field: reader.name("requestsPerSecond"), expected: "a number of requests per second > 0 (at most 1000000)"))
        }
        let burst = try attempt(nil) { () throws(DefinitionError) in try reader.integer("burst", min: 1, max: 1_000_000) } ?? 1
        guard errorCount == before, let rate else { return nil }
        return RequestRate(requestsPerSecond: rate, burst: burst)
    }
}
