import Jansson
import NextPage

/// A config value as an error message shows it (`got VALUE`): compact JSON,
/// shortened to `maxLength` characters, with every secret replaced by
/// `[redacted]` (a secret value on its own shows as `[redacted]`, unquoted).
///
/// A secret is any string that uses `${env:NAME}` (what it would expand to
/// is never shown, nor the text that names it), anything under
/// `source.auth` but the members that say which kind of credential it is
/// (`type`, `tokenUrl`, `clientId`, `username`, `scopes`, ...), a header or
/// query item with a secret-looking name (`HTTPRedactor`'s rules:
/// `Authorization`, `X-Api-Key`, `access_token`, ...), a command source's
/// `env` value with such a name, and any member whose own name looks secret
/// (`clientSecret`, `password`, `token`: containing `token`, `secret`, `key`,
/// `auth`, `password` or `signature`), and `headers`, `query` or `env`
/// given as anything but an object (`"headers": ["Authorization: ..."]`).
/// URLs show without user info and secret query values.
enum ConfigValueDisplay {
    /// The longest text shown; longer values end with `…`.
    static let maxLength = 80

    /// The members of `source.auth` that may be shown.
    static let authNamesShown: Set<String> = [
        "type", "tokenUrl", "clientId", "clientAuth", "scopes", "username", "name", "scheme", "timeout", "argv",
    ]

    /// Where a value sits: keys from the top of a config file, or from the
    /// start of one collection definition (a `define`'s params).
    enum Place {
        case config([String])
        case definition([String])

        /// The keys within a collection definition, when the place is in one
        /// (a config file's `collections.NAME...`).
        var inDefinition: [String]? {
            switch self {
            case .definition(let keys): return keys
            case .config(let keys): return keys.count >= 2 && keys[0] == "collections" ? Array(keys.dropFirst(2)) : nil
            }
        }

        func appending(_ key: String) -> Place {
            switch self {
            case .config(let keys): return .config(keys + [key])
            case .definition(let keys): return .definition(keys + [key])
            }
        }
    }

    /// `value` as shown, found at `place`.
    static func show(_ value: JSON, at place: Place) -> String {
        let shown = redacted(value, at: place)
        if shown.string == HTTPRedactor.placeholder { return HTTPRedactor.placeholder }
        let text = shown.compactString
        guard text.count > maxLength else { return text }
        return String(text.prefix(maxLength - 1)) + "…"
    }

    /// Whether the value at `keys` (within a definition) is a secret by its place.
    static func isSecret(at keys: [String]) -> Bool {
        guard let last = keys.last else { return false }
        if keys.count >= 3, keys[0] == "source", keys[1] == "auth" {
            return !authNamesShown.contains(keys[2])
        }
        if keys.count >= 2 {
            switch keys[keys.count - 2] {
            case "headers": return HTTPRedactor.isSecretHeader(last)
            case "query", "env": return HTTPRedactor.isSecretQueryName(last)
            default: break
            }
        }
        if Int(last) != nil { return false }
        return last != "tokenUrl" && HTTPRedactor.isSecretQueryName(last)
    }

    private static func redacted(_ value: JSON, at place: Place) -> JSON {
        if let keys = place.inDefinition {
            if isSecret(at: keys) { return .string(HTTPRedactor.placeholder) }
            // Headers, query items or a command's environment written some other way than as an object.
            if let last = keys.last, ["headers", "query", "env"].contains(last), value.kind != .object { return .string(HTTPRedactor.placeholder) }
        }
        switch value.kind {
        case .string:
            let text = value.string ?? ""
            if text.contains("${env:") { return .string(HTTPRedactor.placeholder) }
            if text.contains("://") {
                let shown = HTTPRedactor().url(text)
                return shown == text ? value : .string(shown)
            }
            return value
        case .array:
            return .array(value.elements.enumerated().map { index, element in redacted(element, at: place.appending(String(index))) })
        case .object:
            let copy = JSON.object()
            for (key, member) in value.members { copy.set(key, redacted(member, at: place.appending(key))) }
            return copy
        default:
            return value
        }
    }
}
