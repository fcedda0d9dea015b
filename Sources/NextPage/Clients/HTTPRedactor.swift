import Jansson

/// Keeps secrets out of logs, error messages and recordings.
///
/// A header is secret when its name is `Authorization`, `Proxy-Authorization`,
/// `Cookie`, `Set-Cookie` or `X-Api-Key`, or contains `token`, `secret`,
/// `key` or `auth` (case-insensitively); a query item is secret by the same
/// name rule (plus `password`, `signature`), except the paging parameters
/// and the header that carries the cursor (`paging.header`).
/// Secret values are replaced with `[redacted]`, and the values of the
/// source's own secret headers and query items, and every value of 8 bytes
/// or more it took from `${env:NAME}` (whatever the field's name), are also
/// scrubbed from any text (a response that echoes a token back, for example).
/// So are the secrets of the source's `auth` (token, password, header
/// value, client secret, refresh token) and every secret learned at run
/// time (`LearnedSecrets`: each token a credential helper or a token
/// endpoint hands out), from the moment it is obtained.
public struct HTTPRedactor: Sendable {
    /// What a secret is replaced with.
    public static let placeholder = "[redacted]"

    private static let secretNames: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key"]
    private static let secretFragments = ["token", "secret", "key", "auth"]
    private static let secretQueryFragments = secretFragments + ["password", "signature"]

    /// Values from `${env:NAME}` shorter than this (in bytes) are left alone
    /// unless their field's name says they are secret.
    static let shortestEnvironmentSecret = 8

    /// Query item names never redacted (they carry cursors and page sizes).
    public let exemptQueryNames: Set<String>
    /// Header names (lowercased) never redacted: the one that carries the cursor.
    public let exemptHeaderNames: Set<String>
    /// Known secret values, longest first.
    private let secrets: [String]
    /// The names (percent-decoded) of the query items the source itself
    /// sends; `nil` when the source is not known (every secret-looking name
    /// is then redacted).
    private let configuredQueryNames: Set<[UInt8]>?
    /// Secrets learned at run time (tokens), scrubbed with `secrets`.
    public let learned: LearnedSecrets

    /// A redactor that scrubs nothing but what the name rules catch and
    /// what `learned` holds.
    public init(exemptQueryNames: Set<String> = [], exemptHeaderNames: Set<String> = [], learned: LearnedSecrets = .process) {
        self.exemptQueryNames = exemptQueryNames
        self.exemptHeaderNames = Set(exemptHeaderNames.map { $0.lowercased() })
        self.secrets = []
        self.configuredQueryNames = nil
        self.learned = learned
    }

    /// A redactor that also knows the secret values configured in `source`
    /// (its `auth` included).
    public init(source: HTTPSource, exemptQueryNames: Set<String>, exemptHeaderNames: Set<String> = [], learned: LearnedSecrets = .process) {
        self.exemptQueryNames = exemptQueryNames
        self.exemptHeaderNames = Set(exemptHeaderNames.map { $0.lowercased() })
        self.learned = learned
        var values: [String] = source.auth?.secrets ?? []
        for header in source.headers where Self.isSecretHeader(header.name) {
            values.append(header.value)
            // `Bearer abc…`: the credential alone may be echoed back too.
            if let last = header.value.split(separator: " ").last, last.count >= 6 { values.append(String(last)) }
        }
        for item in source.query where Self.isSecretQueryName(item.name) && !exemptQueryNames.contains(HTTPURL.encodeComponent(item.name)) {
            values.append(item.value)
        }
        let url = HTTPURL.parts(source.url)
        if let authority = url.authority, let at = authority.lastIndex(of: "@") {
            values.append(String(authority[..<at]))
        }
        for item in url.query?.split(separator: "&") ?? [] {
            let name = HTTPURL.queryName(String(item))
            if Self.isSecretQueryName(name), !exemptQueryNames.contains(name), let equals = item.firstIndex(of: "=") {
                values.append(String(item[item.index(after: equals)...]))
            }
        }
        // Whatever field a value from the environment went to, as sent and as
        // a URL carries it; from 8 bytes on, so that a short word (`json`,
        // `true`) is not taken out of every recorded page.
        for value in source.environmentValues where value.utf8.count >= Self.shortestEnvironmentSecret {
            values.append(value)
            values.append(HTTPURL.encodeComponent(value))
        }
        self.secrets = Array(Set(values.filter { $0.count >= 4 })).sorted { $0.count > $1.count }
        let urlNames = (url.query?.split(separator: "&") ?? []).map { HTTPURL.percentDecoded(HTTPURL.queryName(String($0))) }
        self.configuredQueryNames = Set(source.query.map { Array($0.name.utf8) } + urlNames)
    }

    /// The query parameters that carry cursors and page sizes, which are never redacted.
    public static func pagingNames(_ paging: Paging, pageSizeParam: String?) -> Set<String> {
        var names: Set<String> = [paging.param, paging.limitParam]
        if let pageSizeParam { names.insert(pageSizeParam) }
        return Set(names.map(HTTPURL.encodeComponent))
    }

    /// The headers that carry cursors (`paging.header` in requests,
    /// `paging.nextHeader` in responses), which are never redacted.
    public static func pagingHeaderNames(_ paging: Paging) -> Set<String> {
        Set([paging.header, paging.nextHeader].compactMap { $0?.lowercased() })
    }

    /// Whether a header with this name carries a secret.
    public static func isSecretHeader(_ name: String) -> Bool {
        let lower = name.lowercased()
        return secretNames.contains(lower) || secretFragments.contains { lower.contains($0) }
    }

    /// `headers` without those that carry credentials (`isSecretHeader`),
    /// except `keeping` (the header that carries the cursor): what a request
    /// to another origin than the source's may carry.
    public static func withoutCredentials(
        _ headers: [(name: String, value: String)], keeping: String? = nil
    ) -> [(name: String, value: String)] {
        let kept = keeping?.lowercased()
        return headers.filter { $0.name.lowercased() == kept || !isSecretHeader($0.name) }
    }

    /// Whether a query item with this (encoded or plain) name carries a secret.
    public static func isSecretQueryName(_ name: String) -> Bool {
        let lower = name.lowercased()
        return secretQueryFragments.contains { lower.contains($0) }
    }

    /// Headers with every secret value replaced; `credentialHeaders`
    /// (lowercased names: the ones an `auth` added) are secret whatever
    /// their name.
    public func headers(_ headers: [(name: String, value: String)], credentialHeaders: Set<String> = []) -> [(name: String, value: String)] {
        headers.map {
            let lower = $0.name.lowercased()
            return (Self.isSecretHeader($0.name) && !exemptHeaderNames.contains(lower)) || credentialHeaders.contains(lower)
                ? ($0.name, Self.placeholder) : ($0.name, scrub($0.value))
        }
    }

    /// A form-encoded body (`application/x-www-form-urlencoded`, as a token
    /// request sends) with the values of secret-looking names
    /// (`client_secret`, `refresh_token`, `password`, ...) replaced, and
    /// every known secret scrubbed: the same text for the same request
    /// whatever its secrets, so a replay can match it.
    public func form(_ body: String) -> String {
        let items = body.split(separator: "&", omittingEmptySubsequences: false).map { item -> String in
            let name = HTTPURL.queryName(String(item))
            guard Self.isSecretQueryName(String(decoding: HTTPURL.percentDecoded(name), as: UTF8.self)),
                  item.contains("=") else { return String(item) }
            return name + "=" + Self.placeholder
        }
        return scrub(items.joined(separator: "&"))
    }

    /// The JSON answer of a token endpoint with the string values of its
    /// secret-looking members (`access_token`, `refresh_token`,
    /// `id_token`, ...; not `token_type`) replaced at any depth, and every known secret
    /// scrubbed; `nil` when it is not JSON. The tokens it hands out are
    /// not known yet when it is recorded, so they go by name.
    public func credentialAnswer(_ bytes: [UInt8]) -> [UInt8]? {
        guard let json = try? JSON.parse(bytes) else { return nil }
        func clean(_ value: JSON) -> JSON {
            switch value.kind {
            case .array:
                return .array(value.elements.map(clean))
            case .object:
                let copy = JSON.object()
                for (key, member) in value.members {
                    copy.set(key, Self.isSecretQueryName(key) && key != "token_type" && member.kind == .string
                        ? .string(Self.placeholder) : clean(member))
                }
                return copy
            case .string:
                let text = value.string ?? ""
                let scrubbed = scrub(text)
                return scrubbed == text ? value : .string(scrubbed)
            default:
                return value
            }
        }
        return clean(json).dump()
    }

    /// A URL with user info and secret query values replaced; paging parameters are kept.
    ///
    /// With a known source, a secret-looking item the source does not send
    /// itself (in a next-page URL: `$skiptoken`, `X-Amz-Signature`) is
    /// replaced with a digest of its value, `[redacted:1a2b...]`: the value
    /// never shows, and the URLs of different pages stay different (replay
    /// tells them apart). A known secret value is scrubbed wherever it appears.
    public func url(_ url: String) -> String {
        var parts = HTTPURL.parts(url)
        if let authority = parts.authority, let at = authority.lastIndex(of: "@") {
            parts.authority = Self.placeholder + authority[at...]
        }
        if let query = parts.query {
            parts.query = query.split(separator: "&", omittingEmptySubsequences: false).map { item -> String in
                let name = HTTPURL.queryName(String(item))
                guard Self.isSecretQueryName(name), !exemptQueryNames.contains(name), let equals = item.firstIndex(of: "=") else {
                    return String(item)
                }
                let value = String(item[item.index(after: equals)...])
                guard let configured = configuredQueryNames, !configured.contains(HTTPURL.percentDecoded(name)),
                      scrub(value) == value else { return name + "=" + Self.placeholder }
                return name + "=[redacted:" + Self.digest(value) + "]"
            }.joined(separator: "&")
        }
        return scrub(parts.text)
    }

    /// A stable digest of `value` (64-bit FNV-1a, hex): the same in every
    /// process, so a recording and its replay agree; it does not give the
    /// value back.
    static func digest(_ value: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in value.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The configured secrets and the learned ones, longest first.
    private var allSecrets: [String] {
        let learned = learned.values
        guard !learned.isEmpty else { return secrets }
        guard !secrets.isEmpty else { return learned }
        return (secrets + learned).sorted { $0.count > $1.count }
    }

    /// Text with every known secret value replaced.
    public func scrub(_ text: String) -> String {
        let secrets = allSecrets
        guard !secrets.isEmpty else { return text }
        var result = text
        for secret in secrets where result.firstRange(of: secret) != nil {
            result = Self.replacing(secret, in: result)
        }
        return result
    }

    /// Bytes with every known secret value replaced (also in its JSON-escaped form).
    public func scrub(_ bytes: [UInt8]) -> [UInt8] {
        let secrets = allSecrets
        guard !secrets.isEmpty else { return bytes }
        let text = String(decoding: bytes, as: UTF8.self)
        var result = text
        for secret in secrets {
            var escaped: [UInt8] = []
            RawJSON.appendString(secret, to: &escaped)
            let forms = [secret, String(decoding: escaped.dropFirst().dropLast(), as: UTF8.self)]
            for form in forms where result.firstRange(of: form) != nil {
                result = Self.replacing(form, in: result)
            }
        }
        return result == text ? bytes : Array(result.utf8)
    }

    /// A JSON text with every known secret value replaced inside its
    /// strings and keys, compared as decoded (however they were escaped);
    /// numbers and structure are left alone, so it stays JSON. Unchanged
    /// (byte for byte) when no string holds a secret.
    public func scrub(json bytes: [UInt8]) -> [UInt8] {
        guard !secrets.isEmpty || !learned.isEmpty else { return bytes }
        return Self.replacingInStrings(bytes) { scrub($0) } ?? scrub(bytes)
    }

    /// The JSON text `bytes` with `transform` applied to every string and
    /// object key (decoded), written again by jansson only when something
    /// changed; `nil` when `bytes` is not JSON.
    public static func replacingInStrings(_ bytes: [UInt8], _ transform: (String) -> String) -> [UInt8]? {
        guard let json = try? JSON.parse(bytes) else { return nil }
        var changed = false
        let clean = mappingStrings(json) { text in
            let clean = transform(text)
            if clean != text { changed = true }
            return clean
        }
        return changed ? clean.dump() : bytes
    }

    /// `value` with `transform` applied to every string and object key.
    static func mappingStrings(_ value: JSON, _ transform: (String) -> String) -> JSON {
        switch value.kind {
        case .string:
            let text = value.string ?? ""
            let mapped = transform(text)
            return mapped == text ? value : .string(mapped)
        case .array:
            return .array(value.elements.map { mappingStrings($0, transform) })
        case .object:
            let copy = JSON.object()
            for (key, member) in value.members { copy.set(transform(key), mappingStrings(member, transform)) }
            return copy
        default:
            return value
        }
    }

    private static func replacing(_ needle: String, in text: String) -> String {
        var out = ""
        var rest = Substring(text)
        while let range = rest.firstRange(of: needle) {
            out += rest[..<range.lowerBound]
            out += placeholder
            rest = rest[range.upperBound...]
        }
        out += rest
        return out
    }
}
