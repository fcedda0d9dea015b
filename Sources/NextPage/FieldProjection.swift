import Jansson

/// Projects items to just some of their members (`fields`, docs/methods.md): each
/// item becomes an object keyed by the last token of each pointer
/// (`["/title", "/user/login"]` gives `{"title": ..., "login": ...}`), in
/// the order the pointers were given; a pointer an item lacks is left out.
///
/// The projected values are the item's own bytes, copied as the source
/// wrote them (numbers and escapes untouched): the scanner finds each value
/// in the item's compact text. Only an item the scanner cannot vouch for
/// is parsed by jansson, and its values dumped.
public struct FieldProjection: Sendable, Equatable {
    /// One requested member: where it is in an item and the key it gets.
    struct Field: Sendable, Equatable {
        let pointer: String
        let tokens: [String]
        /// `"key":`, ready to copy.
        let prefix: [UInt8]
    }

    let fields: [Field]

    /// The most pointers one projection takes.
    public static let maxFields = 100

    /// Why a list of pointers cannot be a projection.
    public enum Problem: Error, Equatable, CustomStringConvertible {
        case tooMany(Int)
        case notAPointer(String)
        case wholeItem
        case sameKey(String)

        public var description: String {
            switch self {
            case .tooMany(let count): return "at most \(FieldProjection.maxFields) pointers (got \(count))"
            case .notAPointer(let text): return "JSON Pointers such as \"/title\" (\"\(text)\" is not one)"
            case .wholeItem: return "pointers to members (\"\" is the whole item: leave `fields` out instead)"
            case .sameKey(let key): return "pointers whose last tokens differ (two end in \"\(key)\")"
            }
        }
    }

    /// A projection onto `pointers`, which must be JSON Pointers below the
    /// item whose last tokens are all different (each names a key).
    public init(pointers: [String]) throws(Problem) {
        guard pointers.count <= Self.maxFields else { throw .tooMany(pointers.count) }
        var fields: [Field] = []
        var keys: Set<String> = []
        for pointer in pointers {
            guard let tokens = JSONPointer.tokens(pointer) else { throw .notAPointer(pointer) }
            guard let key = tokens.last else { throw .wholeItem }
            guard keys.insert(key).inserted else { throw .sameKey(key) }
            fields.append(Field(pointer: pointer, tokens: tokens, prefix: RawJSON.string(key).bytes + [UInt8(ascii: ":")]))
        }
        self.fields = fields
    }

    /// The items projected, in order.
    public func project(_ items: PageItems) -> PageItems {
        var projected: [RawJSON] = []
        projected.reserveCapacity(items.count)
        items.array.withUnsafeBufferPointer { array in
            for index in items.indices {
                let span = items.span(index)
                projected.append(project(UnsafeBufferPointer(rebasing: array[span])))
            }
        }
        return PageItems(projected)
    }

    /// One item (compact JSON that jansson accepted) projected.
    func project(_ item: UnsafeBufferPointer<UInt8>) -> RawJSON {
        var out: [UInt8] = [UInt8(ascii: "{")]
        // Parsed only when the scanner cannot vouch for the item, and then once.
        var parsed: JSON??
        for field in fields {
            let bytes: [UInt8]
            switch JSONScanner.lookup(at: field.tokens, in: item) {
            case .value(let range):
                bytes = Array(item[range])
            case .absent:
                continue
            case .unknown:
                if parsed == nil { parsed = .some(try? JSON.parse(Array(item))) }
                guard let whole = parsed ?? nil, let value = whole.pointer(field.pointer) else { continue }
                bytes = value.dump()
            }
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: field.prefix)
            out.append(contentsOf: bytes)
        }
        out.append(UInt8(ascii: "}"))
        return RawJSON(trusted: out)
    }
}
