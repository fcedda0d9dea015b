import Jansson

/// What a walk that settles its paging from its first page (`auto`) picked:
/// the strategy and where it reads things. Reported in the State (`paging`)
/// and kept in a state file, so that a resumed walk goes on the same way.
public struct PagingPick: Sendable, Equatable {
    /// The strategy picked: `link`, `nextUrl`, `cursor` or `lastId`.
    public var strategy: Paging.Strategy
    /// The item array.
    public var items: String
    /// Where the next cursor or URL is read in the page (`cursor`, `nextUrl`).
    public var next: String?
    /// The response header it is read from instead.
    public var nextHeader: String?
    /// The query parameter that carries the cursor (`cursor`, `lastId`).
    public var param: String?
    /// The item's id (`lastId`).
    public var id: String?
    /// The boolean that says whether there is more.
    public var hasNext: String?

    public init(
        strategy: Paging.Strategy, items: String, next: String? = nil, nextHeader: String? = nil,
        param: String? = nil, id: String? = nil, hasNext: String? = nil
    ) {
        self.strategy = strategy
        self.items = items
        self.next = next
        self.nextHeader = nextHeader
        self.param = param
        self.id = id
        self.hasNext = hasNext
    }

    /// What `paging`, a settled walk's paging, says: only the fields its strategy reads.
    public init(_ paging: Paging) {
        let strategy = paging.strategy.implementation
        self.init(
            strategy: paging.strategy, items: paging.items,
            next: strategy.readsNext && paging.nextHeader == nil ? paging.next : nil,
            nextHeader: strategy.readsNext ? paging.nextHeader : nil,
            param: strategy.cursorIsURL ? nil : paging.param,
            id: strategy.needsLastItemId ? paging.id : nil,
            hasNext: paging.hasNext)
    }

    /// The paging of a walk that picked this, from the definition's `paging`
    /// (its other fields: `limitParam`, `bodyPointer`, `header`, `total`, ...).
    public func paging(from definition: Paging) -> Paging {
        Paging(
            strategy: strategy, param: param ?? definition.given.param, limitParam: definition.limitParam, start: definition.start,
            bodyPointer: definition.bodyPointer, header: definition.header, items: items, next: next,
            id: id ?? definition.id, hasNext: hasNext, total: definition.total, nextHeader: nextHeader)
    }

    /// The pick as JSON: `{"strategy", "items", "next"?, "nextHeader"?, "param"?, "id"?, "hasNext"?}`.
    public var json: RawJSON {
        .object([
            "strategy": .string(strategy.rawValue),
            "items": .string(items),
            "next": next.map(RawJSON.string),
            "nextHeader": nextHeader.map(RawJSON.string),
            "param": param.map(RawJSON.string),
            "id": id.map(RawJSON.string),
            "hasNext": hasNext.map(RawJSON.string),
        ])
    }

    /// Reads a pick written by `json` (a state file); `nil` when it is not one,
    /// with what was wrong.
    public static func from(_ value: JSON) -> Result<PagingPick, PickFormatError> {
        guard value.kind == .object else { return .failure(PickFormatError(field: "", expected: "an object")) }
        let picked: Set<Paging.Strategy> = [.link, .nextUrl, .cursor, .lastId]
        guard let name = value["strategy"]?.string, let strategy = Paging.Strategy(rawValue: name), picked.contains(strategy) else {
            return .failure(PickFormatError(field: "strategy", expected: "one of link, nextUrl, cursor, lastId"))
        }
        guard let items = value["items"]?.string, JSONPointer.isValid(items) else {
            return .failure(PickFormatError(field: "items", expected: "a JSON Pointer"))
        }
        var pick = PagingPick(strategy: strategy, items: items)
        for (key, isPointer) in [("next", true), ("nextHeader", false), ("param", false), ("id", true), ("hasNext", true)] {
            guard let member = value[key], !member.isNull else { continue }
            guard let text = member.string, !(isPointer ? !JSONPointer.isValid(text) : text.isEmpty) else {
                return .failure(PickFormatError(field: key, expected: isPointer ? "a JSON Pointer" : "a non-empty string"))
            }
            switch key {
            case "next": pick.next = text
            case "nextHeader": pick.nextHeader = text
            case "param": pick.param = text
            case "id": pick.id = text
            default: pick.hasNext = text
            }
        }
        return .success(pick)
    }
}

/// A saved pick that is not one: the member at fault and what was expected.
public struct PickFormatError: Error, Sendable {
    public var field: String
    public var expected: String
}
