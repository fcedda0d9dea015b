import Jansson

/// Reads the members of a reply, each missing or mistyped one an `unexpectedReply` error.
struct ReplyFields {
    let json: JSON
    let method: String

    func string(_ key: String) throws(NextPageClientError) -> String {
        guard let value = json[key]?.string else { throw .unexpectedReply(method: method, field: key) }
        return value
    }

    func int(_ key: String) throws(NextPageClientError) -> Int {
        guard let value = json[key]?.integer else { throw .unexpectedReply(method: method, field: key) }
        return Int(value)
    }

    func bool(_ key: String) throws(NextPageClientError) -> Bool {
        guard let value = json[key]?.bool else { throw .unexpectedReply(method: method, field: key) }
        return value
    }

    func array(_ key: String) throws(NextPageClientError) -> [JSON] {
        guard let value = json[key], value.kind == .array else { throw .unexpectedReply(method: method, field: key) }
        return value.elements
    }

    /// A member that may be `null` (or absent): `nil` then.
    func optional(_ key: String) -> JSON? {
        guard let value = json[key], !value.isNull else { return nil }
        return value
    }
}
