import Jansson
import NextPage

extension DefinitionValidator {
    /// Checks `paging.nextHeader`: a header name, on an http source (file
    /// and command sources have no response headers), with a strategy that
    /// reads a next cursor, and not together with `paging.next`. The checks
    /// against the source and the strategy are skipped when those are
    /// `nil` (invalid: their own errors say why).
    func validateNextHeader(
        _ paging: JSON, strategy: Paging.Strategy?, source: CollectionDefinition.Source?, pagingPath: String
    ) throws(DefinitionError) -> String? {
        guard let value = paging["nextHeader"] else { return nil }
        let field = "\(pagingPath).nextHeader"
        guard let name = value.string, Self.isHeaderName(name) else {
            throw DefinitionError(field: field, expected: "a header name (letters, digits and !#$%&'*+-.^_`|~)")
        }
        switch source {
        case .file?: throw DefinitionError(field: field, expected: "no nextHeader with a file source (it has no response headers)")
        case .command?: throw DefinitionError(field: field, expected: "no nextHeader with a command source (it has no response headers)")
        case .http?, .bundled?, nil: break
        }
        guard let strategy else { return name }
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

    /// Checks `incremental`: `{"pointer", "param"?, "initial"?}`. `param` goes
    /// in the query of an http source, under a name of its own (checked
    /// only when `source` and `paging` are valid, not `nil`).
    func validateIncremental(
        _ json: JSON?, source: CollectionDefinition.Source?, paging: Paging?, options: CollectionOptions, at path: String
    ) throws(DefinitionError) -> Incremental? {
        guard let json else { return nil }
        guard json.kind == .object else {
            throw DefinitionError(field: path, expected: "an object {\"pointer\", \"param\", \"initial\"}")
        }
        let before = errorCount
        let known: Set<String> = ["pointer", "param", "initial"]
        for (key, _) in json.members where !known.contains(key) {
            try report(.unknownField("\(path).\(key)", known: known))
        }
        let reader = FieldReader(object: json, path: path)
        let pointer = try attempt(nil) { () throws(DefinitionError) -> String? in
            guard let pointer = try reader.pointer("pointer") else {
                throw DefinitionError(field: "\(path).pointer", expected: "a JSON Pointer into each item to the value kept (\"/updated_at\")")
            }
            return pointer
        }
        let param = try attempt(nil) { () throws(DefinitionError) in try reader.string("param", nonEmpty: true) }
        if let param, let source {
            if case .http = source {
                if let clash = Self.clash(of: param, paging: paging, options: options) {
                    try report(DefinitionError(field: "\(path).param", expected: "a query parameter other than \(clash.0) ('\(clash.1)')"))
                }
            } else {
                try report(DefinitionError(field: "\(path).param", expected: "an http source (the value is sent as a query parameter); without param the items are only filtered"))
            }
        }
        var initial: IncrementalValue?
        if let value = json["initial"] {
            initial = IncrementalValue(value)
            if initial == nil {
                try report(DefinitionError(field: "\(path).initial", expected: "a string (an ISO 8601 timestamp, or other text) or a number"))
            }
        }
        guard errorCount == before, let pointer else { return nil }
        return Incremental(pointer: pointer, param: param, initial: initial)
    }

    /// The query parameter of the walk (which field, and its name) that an
    /// incremental `param` would clash with; none when `paging` is unknown.
    private static func clash(of param: String, paging: Paging?, options: CollectionOptions) -> (String, String)? {
        var taken: [(String, String)] = []
        if let paging {
            let strategy = paging.strategy.implementation
            if !strategy.cursorIsURL, paging.bodyPointer == nil, paging.header == nil {
                taken.append(("paging.param", paging.param))
                // `auto` sends a Stripe-style list's cursor as starting_after unless `param` is given.
                if strategy.settlesFromFirstPage, paging.given.param == nil { taken.append(("paging.param", AutoStrategy.lastIdParam)) }
            }
            if strategy.sendsLimit { taken.append(("paging.limitParam", paging.limitParam)) }
        }
        if let pageSizeParam = options.pageSizeParam { taken.append(("pageSizeParam", pageSizeParam)) }
        return taken.first { $0.1 == param }
    }
}
