import Jansson
import NextPage

extension DefinitionValidator {
    /// Validates `{"type": "command", "argv": [...], "env": {...}, "timeout": S,
    /// "maxBodyBytes": N}` and expands `${env:NAME}` in argv and env values.
    ///
    /// A relative `argv[0]` with a `/` in it (`./pages.sh`, `bin/pages`) is
    /// resolved against `baseDirectory`, like a file source's `dir`; a bare
    /// name is looked up on `PATH` when the command runs. `{cursor}` is not
    /// allowed in `argv[0]`: a cursor (which `load` takes from the caller)
    /// never chooses the program. `nil` when it has errors (recorded).
    func validateCommandSource(_ json: JSON, at path: String) throws(DefinitionError) -> CommandSource? {
        let reader = FieldReader(object: json, path: path)
        let before = errorCount
        for (key, _) in json.members where !Self.commandSourceKeys.contains(key) {
            try report(.unknownField(reader.name(key), known: Self.commandSourceKeys, what: "no such field for a command source"))
        }

        let argvExpected = "a non-empty array of strings: the program, then its arguments"
        var argv: [String] = []
        if let list = json["argv"], list.kind == .array, !list.elements.isEmpty {
            let argvBefore = errorCount
            for (index, element) in list.elements.enumerated() {
                let field = "\(reader.name("argv")).\(index)"
                try attempt(()) { () throws(DefinitionError) in
                    guard let text = element.string else { throw DefinitionError(field: field, expected: "a string") }
                    let expanded = try expand(text, field: field, whenUnset: index == 0 ? "unset-program" : nil)
                    guard !expanded.utf8.contains(0) else { throw DefinitionError(field: field, expected: "a string without NUL characters") }
                    argv.append(expanded)
                }
            }
            if errorCount == argvBefore {
                try attempt(()) { () throws(DefinitionError) in
                    let programField = "\(reader.name("argv")).0"
                    guard !argv[0].isEmpty else { throw DefinitionError(field: programField, expected: "a program name or path (not empty)") }
                    guard !argv[0].contains(CommandSource.cursorPlaceholder) else {
                        throw DefinitionError(field: programField, expected: "a program without {cursor} (the cursor may go in the arguments)")
                    }
                    if argv[0].contains("/") { argv[0] = resolve(argv[0]) }
                }
            }
        } else {
            try report(DefinitionError(field: reader.name("argv"), expected: argvExpected))
        }

        var environment: [(name: String, value: String)] = []
        if let object = json["env"] {
            if object.kind != .object { try report(DefinitionError(field: reader.name("env"), expected: "an object of strings")) }
            for (name, value) in object.kind == .object ? object.members : [] {
                let field = "\(reader.name("env")).\(name)"
                try attempt(()) { () throws(DefinitionError) in
                    guard !name.isEmpty, !name.contains("="), !name.utf8.contains(0) else {
                        throw DefinitionError(field: field, expected: "a variable name (not empty, without = or NUL)")
                    }
                    guard name != CommandSource.cursorVariable else {
                        throw DefinitionError(field: field, expected: "a variable other than \(CommandSource.cursorVariable) (nextpage sets it to the cursor)")
                    }
                    guard let text = value.string else { throw DefinitionError(field: field, expected: "a string") }
                    let expanded = try expand(text, field: field)
                    guard !expanded.utf8.contains(0) else { throw DefinitionError(field: field, expected: "a string without NUL characters") }
                    environment.append((name, expanded))
                }
            }
        }

        let timeout = try attempt(nil) { () throws(DefinitionError) in try reader.seconds("timeout") } ?? CommandSource.defaultTimeout
        let maxBodyBytes = try attempt(nil) { () throws(DefinitionError) in try reader.integer("maxBodyBytes", min: 1) } ?? CommandSource.defaultMaxBodyBytes
        guard errorCount == before else { return nil }
        return CommandSource(argv: argv, environment: environment, timeout: timeout, maxBodyBytes: maxBodyBytes)
    }
}
