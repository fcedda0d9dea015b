import Jansson
import NextPage

extension DefinitionValidator {
    /// Checks `paging.nextHeader`: a header name, on an http source (file
    /// and command sources have no response headers), with a strategy that
    /// reads a next cursor, and not together with `paging.next`.
    func validateNextHeader(
        _ paging: JSON, strategy: Paging.Strategy, source: CollectionDefinition.Source, pagingPath: String
    ) throws(DefinitionError) -> String? {
        guard let value = paging["nextHeader"] else { return nil }
        let field = "\(pagingPath).nextHeader"
        guard let name = value.string, Self.isHeaderName(name) else {
            throw DefinitionError(field: field, expected: "a header name (letters, digits and !#$%&'*+-.^_`|~)")
        }
        switch source {
        case .file: throw DefinitionError(field: field, expected: "no nextHeader with a file source (it has no response headers)")
        case .command: throw DefinitionError(field: field, expected: "no nextHeader with a command source (it has no response headers)")
        case .http, .bundled: break
        }
        guard strategy.implementation.readsNext || strategy.implementation.settlesFromFirstPage else {
            let readers = Paging.Strategy.allCases.filter { $0.implementation.readsNext || $0.implementation.settlesFromFirstPage }.map(\.rawValue)
            throw DefinitionError(
                field: field,
                expected: "a strategy that reads a next cursor (\(readers.joined(separator: ", "))); \(strategy.rawValue) does not")
        }
        if paging["next"] != nil {
            throw DefinitionError(field: "\(pagingPath).next", expected: "either next or nextHeader, not both")
        }
        return name
    }
}
