import Jansson
import NextPage

/// Keeps secrets out of transcripts.
///
/// In `define` params (alone or in a batch), the values of secret headers
/// (`Authorization`, `X-Api-Key`, names with `token`, `secret`, `key` or
/// `auth`) and secret query items of an `http` source are replaced with
/// `[redacted]`, as are user info and secret query values in its `url`
/// (the name rules of `HTTPRedactor`), and so are the secrets of its `auth`
/// (`token`, `password`, `value`, `clientSecret`, `refreshToken`). The
/// secret values of every http
/// source it has seen (the config file's, and each valid `define`'s, after
/// `${env:NAME}` expansion) are then scrubbed from every later record, in and
/// out, in case a source echoes one back. Thread rules: used under the
/// recorder's lock.
struct TranscriptRedactor {
    private var redactors: [HTTPRedactor] = []
    private let validator: DefinitionValidator

    init(collections: [(name: String, definition: CollectionDefinition)], validator: DefinitionValidator) {
        self.validator = validator
        for (_, definition) in collections { learn(definition) }
    }

    /// Remembers the secrets of a definition's http source.
    mutating func learn(_ definition: CollectionDefinition) {
        guard case .http(let source) = definition.source else { return }
        let exempt = HTTPRedactor.pagingNames(definition.paging, pageSizeParam: definition.options.pageSizeParam)
        redactors.append(HTTPRedactor(source: source, exemptQueryNames: exempt))
    }

    /// An incoming message with the secrets of `define` params replaced
    /// (a copy; `message` is not changed). Learns the secrets it removes.
    mutating func redactIncoming(_ message: JSON) -> JSON {
        switch message.kind {
        case .array:
            guard message.elements.contains(where: Self.isDefine) else { return message }
            let copy = message.deepCopy()
            for element in copy.elements where Self.isDefine(element) { redactDefine(element) }
            return copy
        case .object:
            guard Self.isDefine(message) else { return message }
            let copy = message.deepCopy()
            redactDefine(copy)
            return copy
        default:
            return message
        }
    }

    /// A JSON text with every learned secret value replaced inside its
    /// strings (numbers and structure are left alone, so it stays JSON).
    func scrub(_ bytes: [UInt8]) -> [UInt8] {
        // Compared decoded: an item forwarded as the server wrote it may
        // escape a secret (`tok\/abc`) where a look at the bytes would miss it.
        guard !redactors.isEmpty else { return bytes }
        return HTTPRedactor.replacingInStrings(bytes) { scrub(text: $0) } ?? bytes
    }

    /// Text (not JSON) with every learned secret value replaced.
    func scrub(text: String) -> String {
        redactors.reduce(text) { $1.scrub($0) }
    }

    /// The members of `source.auth` that hold secrets.
    static let authSecretKeys = ["token", "password", "value", "clientSecret", "refreshToken"]

    private static func isDefine(_ message: JSON) -> Bool {
        message.kind == .object && message["method"]?.string == "define" && message["params"]?.kind == .object
    }

    /// Redacts the http source of one `define` request in place.
    private mutating func redactDefine(_ request: JSON) {
        guard let params = request["params"] else { return }
        if let definition = try? validator.validate(params, ignoring: ["name"]) { learn(definition) }
        guard let source = params["source"], source.kind == .object, source["type"]?.string == "http" else { return }
        var exempt: Set<String> = []
        for (object, key) in [(params["paging"], "param"), (params["paging"], "limitParam"), (params, "pageSizeParam")] {
            if let name = object?[key]?.string { exempt.insert(HTTPURL.encodeComponent(name)) }
        }
        if let headers = source["headers"], headers.kind == .object {
            for (name, _) in headers.members where HTTPRedactor.isSecretHeader(name) {
                headers.set(name, .string(HTTPRedactor.placeholder))
            }
        }
        if let query = source["query"], query.kind == .object {
            for (name, _) in query.members
            where HTTPRedactor.isSecretQueryName(name) && !exempt.contains(HTTPURL.encodeComponent(name)) {
                query.set(name, .string(HTTPRedactor.placeholder))
            }
        }
        if let auth = source["auth"], auth.kind == .object {
            for key in Self.authSecretKeys where auth[key] != nil { auth.set(key, .string(HTTPRedactor.placeholder)) }
        }
        if let url = source["url"]?.string {
            source.set("url", .string(HTTPRedactor(exemptQueryNames: exempt).url(url)))
        }
    }
}
