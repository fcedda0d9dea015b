import Jansson
import NextPage

/// The errors one validation finds, in the order it meets them, each placed
/// in the document validated: the value at its field (`got`, secrets shown
/// as `[redacted]`: `ConfigValueDisplay`) and, for a misspelled field name
/// or value, the nearest valid one (`suggestion`).
///
/// Owned by the one validation that made it, which writes it synchronously.
final class DefinitionErrorList: @unchecked Sendable {
    /// The document validated: a whole config file (`isConfig`) or one definition.
    let root: JSON
    /// What field names of `root` itself start with (`collections.NAME` for
    /// a definition validated at that place; empty for a whole document).
    let rootPath: String
    /// Whether `root` is a config file, whose definitions sit at `collections.NAME`.
    let isConfig: Bool
    private(set) var errors: [DefinitionError] = []

    init(root: JSON, rootPath: String = "", isConfig: Bool) {
        self.root = root
        self.rootPath = rootPath
        self.isConfig = isConfig
    }

    var count: Int { errors.count }

    /// Adds `error`, with the value found at its field and a suggestion.
    func record(_ error: DefinitionError) {
        var error = error
        if let (value, keys) = locate(error.field) {
            error.got = ConfigValueDisplay.show(value, at: isConfig ? .config(keys) : .definition(keys))
            let misspelled = error.choicesAreFields ? keys.last : value.string
            if let misspelled, !error.choices.isEmpty {
                error.suggestion = NearestName.suggestion(for: misspelled, among: error.choices)
            }
        }
        errors.append(error)
    }

    /// The value a field name points at, and the keys (and array indices)
    /// that lead to it from the root; `nil` when the field is missing.
    /// Names are dotted paths whose keys may hold dots themselves
    /// (`headers.X.Y`): every way to split the name is tried, an exact key first.
    func locate(_ field: String) -> (value: JSON, keys: [String])? {
        if field == "(top level)" || field == "(definition)" { return (root, []) }
        var rest = Substring(field)
        if !rootPath.isEmpty {
            if rest == rootPath { return (root, []) }
            guard rest.hasPrefix(rootPath + ".") else { return nil }
            rest = rest.dropFirst(rootPath.count + 1)
        }
        return Self.walk(root, rest, keys: [])
    }

    private static func walk(_ node: JSON, _ rest: Substring, keys: [String]) -> (value: JSON, keys: [String])? {
        switch node.kind {
        case .object:
            let members = node.members
            if let exact = members.first(where: { $0.key == rest }) { return (exact.value, keys + [exact.key]) }
            for (key, value) in members where rest.hasPrefix(key + ".") {
                if let found = walk(value, rest.dropFirst(key.count + 1), keys: keys + [key]) { return found }
            }
            return nil
        case .array:
            let index = rest.prefix { $0 != "." }
            guard let number = Int(index), number >= 0, let element = node[number] else { return nil }
            if index.count == rest.count { return (element, keys + [String(index)]) }
            return walk(element, rest.dropFirst(index.count + 1), keys: keys + [String(index)])
        default:
            return nil
        }
    }
}
