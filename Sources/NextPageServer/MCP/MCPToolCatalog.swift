import Jansson

/// The MCP tools, derived from the OpenRPC document (`Schemas/openrpc.json`)
/// so that the two surfaces cannot drift apart: each method whose object
/// carries `x-mcp-tool` is a tool of the same name, its `inputSchema` built
/// from the method's params and its `outputSchema` from its result, with
/// the `components/schemas` they refer to copied in as `$defs`.
///
/// `x-mcp-tool` says what differs in a tool call: `annotations` (MCP's
/// tool hints), `omitParams` (params the MCP envelope carries instead, such
/// as `progressToken`), `defaults` (arguments a tool call gets when it
/// leaves them out: `loadAll`'s `maxItems`), `resultMember` (a result that
/// is not an object, wrapped in one, since `structuredContent` is an
/// object), and `requiresAllowDefine`.
struct MCPToolCatalog: Sendable {
    struct Tool: Sendable {
        let name: String
        let title: String?
        let description: String
        let inputSchema: RawJSON
        let outputSchema: RawJSON
        let annotations: RawJSON?
        /// The argument names the input schema allows.
        let parameters: Set<String>
        /// Arguments added when a call leaves them out.
        let defaults: [(String, RawJSON)]
        /// The member of `structuredContent` that holds a non-object result.
        let resultMember: String?
        /// Whether the tool takes a `collection`.
        let takesCollection: Bool
        /// Listed and callable only with `--allow-define`.
        let requiresAllowDefine: Bool
    }

    /// The tools, in the order of the document's methods.
    let tools: [Tool]

    /// The tools of an OpenRPC document.
    init(openRPC document: JSON) {
        let components = document.pointer("/components/schemas")
        var tools: [Tool] = []
        for method in document["methods"]?.elements ?? [] {
            guard let extras = method["x-mcp-tool"], extras.kind == .object, let name = method["name"]?.string else { continue }
            tools.append(Self.tool(name: name, method: method, extras: extras, components: components))
        }
        self.tools = tools
    }

    subscript(name: String) -> Tool? { tools.first { $0.name == name } }

    private static func tool(name: String, method: JSON, extras: JSON, components: JSON?) -> Tool {
        let omitted = Set((extras["omitParams"]?.elements ?? []).compactMap(\.string))
        var refs = SchemaRefs()
        let properties = JSON.object()
        let required = JSON.array()
        var parameters: Set<String> = []
        for param in method["params"]?.elements ?? [] {
            guard let paramName = param["name"]?.string, !omitted.contains(paramName) else { continue }
            let schema = (param["schema"] ?? JSON.object()).deepCopy()
            if schema["description"] == nil, let description = param["description"] { schema.set("description", description.deepCopy()) }
            refs.rewrite(schema)
            properties.set(paramName, schema)
            parameters.insert(paramName)
            if param["required"]?.bool == true { required.append(.string(paramName)) }
        }
        let input = JSON.object(["type": .string("object"), "properties": properties])
        if required.count > 0 { input.set("required", required) }
        input.set("additionalProperties", .bool(false))
        refs.attachDefinitions(to: input, from: components)

        var outputRefs = SchemaRefs()
        // MCP wants an object schema at the top: a result that is a reference is the schema it names.
        var resultSchema = (method.pointer("/result/schema") ?? JSON.object()).deepCopy()
        if resultSchema.memberCount == 1, let ref = resultSchema["$ref"]?.string, ref.hasPrefix(SchemaRefs.prefix),
           let named = components?[String(ref.dropFirst(SchemaRefs.prefix.count))] {
            resultSchema = named.deepCopy()
        }
        outputRefs.rewrite(resultSchema)
        let resultMember = extras["resultMember"]?.string
        let output: JSON
        if let resultMember {
            output = JSON.object([
                "type": .string("object"), "properties": JSON.object([resultMember: resultSchema]),
                "required": JSON.array([.string(resultMember)]), "additionalProperties": .bool(false),
            ])
        } else {
            output = resultSchema
        }
        outputRefs.attachDefinitions(to: output, from: components)

        let defaults = (extras["defaults"]?.members ?? []).map { ($0.key, RawJSON($0.value)) }
        var description = method["summary"]?.string ?? ""
        if let more = method["description"]?.string { description += description.isEmpty ? more : "\n\n" + more }
        for (key, value) in defaults {
            description += "\n\nIn a tool call `\(key)` defaults to \(value)."
        }
        return Tool(
            name: name, title: method["summary"]?.string, description: description,
            inputSchema: RawJSON(input), outputSchema: RawJSON(output),
            annotations: extras["annotations"].map(RawJSON.init), parameters: parameters, defaults: defaults,
            resultMember: resultMember, takesCollection: parameters.contains("collection"),
            requiresAllowDefine: extras["requiresAllowDefine"]?.bool == true)
    }
}

/// Rewrites `#/components/schemas/X` references to `#/$defs/X` and copies
/// the schemas they name (and those they name in turn) into `$defs`, so
/// that a tool's schema resolves on its own.
private struct SchemaRefs {
    static let prefix = "#/components/schemas/"
    private(set) var names: [String] = []

    /// Rewrites the references inside `schema` (in place), noting what they name.
    mutating func rewrite(_ schema: JSON) {
        switch schema.kind {
        case .object:
            for (key, value) in schema.members {
                if key == "$ref", let ref = value.string, ref.hasPrefix(Self.prefix) {
                    let name = String(ref.dropFirst(Self.prefix.count))
                    if !names.contains(name) { names.append(name) }
                    schema.set("$ref", .string("#/$defs/" + name))
                } else {
                    rewrite(value)
                }
            }
        case .array:
            for element in schema.elements { rewrite(element) }
        default:
            break
        }
    }

    /// Adds `$defs` with every schema named so far to `schema`.
    mutating func attachDefinitions(to schema: JSON, from components: JSON?) {
        guard !names.isEmpty, let components else { return }
        let definitions = JSON.object()
        var index = 0
        while index < names.count {
            let name = names[index]
            index += 1
            guard let definition = components[name]?.deepCopy() else { continue }
            rewrite(definition)
            definitions.set(name, definition)
        }
        schema.set("$defs", definitions)
    }
}
