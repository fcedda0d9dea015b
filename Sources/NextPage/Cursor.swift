import Jansson

/// A position in a paginated source: what the next request sends.
///
/// Cursors are opaque strings for most sources; the `page` and `offset`
/// strategies (and sources whose ids are numbers) use integers. A cursor is
/// reported to users as the `lastId` of a page (the seeds' name).
public enum Cursor: Hashable, Sendable, CustomStringConvertible {
    case string(String)
    case integer(Int64)

    /// The cursor as text, as it is put in a URL, a header or a file name.
    public var text: String {
        switch self {
        case .string(let value): return value
        case .integer(let value): return String(value)
        }
    }

    /// The integer value, for strategies that count (page, offset).
    public var integerValue: Int64? {
        switch self {
        case .integer(let value): return value
        case .string(let value): return Int64(value)
        }
    }

    /// The cursor as it appears on the wire (`lastId`).
    public var json: RawJSON {
        switch self {
        case .string(let value): return .string(value)
        case .integer(let value): return .integer(value)
        }
    }

    /// Reads a cursor from a JSON value: strings and integers are cursors;
    /// `null`, missing and `""` mean "no cursor". Other kinds are not cursors.
    public static func from(_ json: JSON?) -> Result<Cursor?, CursorKindError> {
        guard let json else { return .success(nil) }
        switch json.kind {
        case .null: return .success(nil)
        case .string:
            let value = json.string ?? ""
            return .success(value.isEmpty ? nil : .string(value))
        case .integer: return .success(.integer(json.integer!))
        default: return .failure(CursorKindError(kind: json.kind))
        }
    }

    public var description: String { text }
}

/// A JSON value that cannot serve as a cursor (an object, array, boolean or real).
public struct CursorKindError: Error, Sendable {
    public let kind: JSON.Kind
}
