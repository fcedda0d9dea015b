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

    /// Validates `source.auth` (SPEC §10) and expands `${env:NAME}` in its
    /// values. A `command` credential helper is a program to run: `define`
    /// accepts it only when the server runs with `--allow-commands`, as it
    /// does command sources.
    func validateAuth(_ json: JSON, at path: String) throws(DefinitionError) -> HTTPAuth {
        let types = HTTPAuth.typeNames.joined(separator: ", ")
        guard json.kind == .object else { throw DefinitionError(field: path, expected: "an object with \"type\" (one of \(types))") }
        let reader = FieldReader(object: json, path: path)
        guard let type = try reader.string("type", required: true, expected: "one of \(types)"), let keys = Self.authKeys[type] else {
            throw DefinitionError(field: reader.name("type"), expected: "one of \(types)")
        }
        for (key, _) in json.members where !keys.contains(key) {
            throw DefinitionError(
                field: reader.name(key), expected: "no such field for \(type) auth (known: \(keys.sorted().joined(separator: ", ")))")
        }
        /// A required string, expanded, without line breaks (it goes in a header).
        func value(_ key: String, what: String = "a non-empty string", allowEmpty: Bool = false) throws(DefinitionError) -> String {
            let field = reader.name(key)
            guard let text = try reader.string(key, required: true, nonEmpty: !allowEmpty, expected: what) else {
                throw DefinitionError(field: field, expected: what)
            }
            let expanded = try expand(text, field: field, whenUnset: "unset")
            guard allowEmpty || !expanded.isEmpty else { throw DefinitionError(field: field, expected: what) }
            guard !expanded.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) else {
                throw DefinitionError(field: field, expected: "a value without line breaks or NUL (it is sent in a header)")
            }
            return expanded
        }

        switch type {
        case "bearer":
            return .bearer(token: try value("token", what: "a non-empty token"))
        case "basic":
            let username = try value("username", allowEmpty: true)
            guard !username.contains(":") else {
                throw DefinitionError(field: reader.name("username"), expected: "a user name without \":\" (RFC 7617)")
            }
            return .basic(username: username, password: try value("password", what: "a string", allowEmpty: true))
        case "header":
            guard let name = try reader.string("name", required: true, expected: "a header name"), Self.isHeaderName(name) else {
                throw DefinitionError(field: reader.name("name"), expected: "a header name (letters, digits and !#$%&'*+-.^_`|~)")
            }
            return .header(name: name, value: try value("value", what: "a string", allowEmpty: true))
        case "command":
            guard allowsCommands else {
                throw DefinitionError(
                    field: reader.name("type"),
                    expected: "one of bearer, basic, header, oauth2 (a command credential helper can be defined at run time only when the server runs with --allow-commands; the config file may always use one)")
            }
            let argv = try validateArgv(json["argv"], at: reader.name("argv"))
            var scheme = CredentialCommand.defaultScheme
            if json["scheme"] != nil { scheme = try value("scheme", what: "a string (\"Bearer\"; empty: the token alone)", allowEmpty: true) }
            guard !scheme.contains(" ") else {
                throw DefinitionError(field: reader.name("scheme"), expected: "one word (\"Bearer\", \"token\"; empty: the token alone)")
            }
            let timeout = try reader.seconds("timeout") ?? CredentialCommand.defaultTimeout
            return .command(CredentialCommand(argv: argv, scheme: scheme, timeout: timeout))
        default:
            let urlField = reader.name("tokenUrl")
            guard let text = try reader.string("tokenUrl", required: true, expected: "an http or https URL") else {
                throw DefinitionError(field: urlField, expected: "an http or https URL")
            }
            let tokenURL = try expand(text, field: urlField, whenUnset: "http://unset.invalid/")
            guard HTTPURL.isHTTP(tokenURL) else { throw DefinitionError(field: urlField, expected: "an http or https URL") }
            let clientId = try value("clientId")
            let clientSecret = try value("clientSecret", what: "a string", allowEmpty: true)
            var scopes: [String] = []
            if let list = json["scopes"] {
                let what = "an array of scopes (non-empty strings without spaces)"
                guard list.kind == .array else { throw DefinitionError(field: reader.name("scopes"), expected: what) }
                for (index, element) in list.elements.enumerated() {
                    guard let scope = element.string, !scope.isEmpty, !scope.contains(" "),
                          !scope.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
                        throw DefinitionError(field: "\(reader.name("scopes")).\(index)", expected: "a scope (a non-empty string without spaces)")
                    }
                    scopes.append(scope)
                }
            }
            var refreshToken: String?
            if json["refreshToken"] != nil { refreshToken = try value("refreshToken", what: "a non-empty refresh token") }
            var clientAuthentication = OAuth2Settings.ClientAuthentication.basic
            if let name = try reader.string("clientAuth", expected: "one of basic, body") {
                guard let parsed = OAuth2Settings.ClientAuthentication(rawValue: name) else {
                    throw DefinitionError(field: reader.name("clientAuth"), expected: "one of basic, body")
                }
                clientAuthentication = parsed
            }
            return .oauth2(OAuth2Settings(
                tokenURL: tokenURL, clientId: clientId, clientSecret: clientSecret, scopes: scopes, refreshToken: refreshToken,
                clientAuthentication: clientAuthentication))
        }
    }

    /// A credential helper's argv: a program (a relative path with a `/`
    /// resolved against the config's folder) and its arguments, expanded.
    private func validateArgv(_ list: JSON?, at field: String) throws(DefinitionError) -> [String] {
        let expected = "a non-empty array of strings: the program, then its arguments"
        guard let list, list.kind == .array, !list.elements.isEmpty else { throw DefinitionError(field: field, expected: expected) }
        var argv: [String] = []
        for (index, element) in list.elements.enumerated() {
            guard let text = element.string else { throw DefinitionError(field: "\(field).\(index)", expected: "a string") }
            let expanded = try expand(text, field: "\(field).\(index)", whenUnset: index == 0 ? "unset-program" : nil)
            guard !expanded.utf8.contains(0) else { throw DefinitionError(field: "\(field).\(index)", expected: "a string without NUL characters") }
            argv.append(expanded)
        }
        guard !argv[0].isEmpty else { throw DefinitionError(field: "\(field).0", expected: "a program name or path (not empty)") }
        if argv[0].contains("/") { argv[0] = resolve(argv[0]) }
        return argv
    }

    /// Validates `source.rateLimit`: `{"requestsPerSecond": R, "burst": B}`.
    func validateRequestRate(_ json: JSON, at path: String) throws(DefinitionError) -> RequestRate {
        guard json.kind == .object else {
            throw DefinitionError(field: path, expected: "an object with \"requestsPerSecond\" (and \"burst\")")
        }
        let reader = FieldReader(object: json, path: path)
        for (key, _) in json.members where !Self.requestRateKeys.contains(key) {
            throw DefinitionError(field: reader.name(key), expected: "no such field (known: burst, requestsPerSecond)")
        }
        guard let rate = json["requestsPerSecond"]?.number, rate > 0, rate <= 1_000_000 else {
            throw DefinitionError(field: reader.name("requestsPerSecond"), expected: "a number of requests per second > 0 (at most 1000000)")
        }
        let burst = try reader.integer("burst", min: 1, max: 1_000_000) ?? 1
        return RequestRate(requestsPerSecond: rate, burst: burst)
    }
}
