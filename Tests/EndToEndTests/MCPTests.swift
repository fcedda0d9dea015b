import XCTest

/// nextpage as an MCP server (docs/mcp.md), spoken to over pipes as an MCP
/// client speaks: the handshake revisions, the 2026-07-28 envelope, tools
/// built from the OpenRPC document, tool results and failures, progress,
/// cancellation, logging, resources, list paging and the errors MCP names.
final class MCPTests: EndToEndTestCase {
    static let modernMeta = #""_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}, "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"}}"#

    /// Starts `nextpage mcp` (or plain `nextpage`) and completes MCP's handshake at `version`.
    private func handshake(_ server: ServerHarness, version: String = "2025-06-18") throws -> JSONValue {
        try server.request("0", "initialize", #"{"protocolVersion": "\#(version)", "capabilities": {}, "clientInfo": {"name": "tests", "version": "1"}}"#)
        let reply = try server.reply("0")
        try server.notify("notifications/initialized")
        return reply
    }

    func testHandshakeNegotiatesEachRevisionAndAnswersTheLatestForAnother() throws {
        for (asked, answered) in [
            ("2024-11-05", "2024-11-05"), ("2025-03-26", "2025-03-26"), ("2025-06-18", "2025-06-18"), ("2025-11-25", "2025-11-25"),
            ("2099-01-01", "2025-11-25"), ("2026-07-28", "2025-11-25"),
        ] {
            let server = try startServer()
            let reply = try handshake(server, version: asked)
            try expectMatch(reply, rpcResult(0, #"{"protocolVersion": "\#(answered)", "capabilities": {"tools": {"listChanged": true}, "resources": {"listChanged": true}, "logging": {}}, "serverInfo": {"name": "nextpage", "version": "<string>"}, "instructions": "<contains:Collections: demo.>"}"#), asked)
            server.closeInput()
            try server.finish()
        }
    }

    func testInitializeWithoutProtocolVersionStaysNextpagesOwn() throws {
        let server = try startServer()
        try server.request("1", "initialize", #"{"processId": null, "capabilities": {}}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"serverInfo": {"name": "nextpage", "version": "<string>"}, "capabilities": {"methods": "<any>"}}"#))
        // Not an MCP session: MCP requests without the envelope are refused, with what to do.
        try server.request("2", "tools/list")
        try expectMatch(server.reply("2"), rpcError(2, #"{"code": -32602, "message": "<contains:initialize>", "data": {"field": "_meta.io.modelcontextprotocol/protocolVersion", "expected": "<string>"}}"#))
        server.closeInput()
        try server.finish()
    }

    func testAnMCPRequestBeforeInitializeIsRefusedAndTheSessionGoesOn() throws {
        let server = try startServer(arguments: ["mcp"])
        try server.request("1", "tools/call", #"{"name": "loadNext", "arguments": {"collection": "demo"}}"#)
        try expectMatch(server.reply("1"), rpcError(1, #"{"code": -32602, "message": "<string>", "data": {"field": "_meta.io.modelcontextprotocol/protocolVersion", "expected": "<contains:initialize>"}}"#))
        // ping needs no session; nothing was loaded by the refused call.
        try server.request("2", "ping")
        try expectMatch(server.reply("2"), rpcResult(2, "{}"))
        _ = try handshake(server)
        try server.request("3", "tools/call", #"{"name": "status", "arguments": {"collection": "demo"}}"#)
        let status = try server.reply("3")
        XCTAssertEqual(status["result"]?["structuredContent"]?["count"], .int(0))
        server.closeInput()
        try server.finish()
    }

    func testToolsAreTheCollectionMethodsWithSchemasThatResolve() throws {
        let server = try startServer(arguments: ["mcp"])
        _ = try handshake(server)
        try server.request("1", "tools/list")
        let tools = try XCTUnwrap(server.reply("1")["result"]?["tools"]?.arrayValue)
        XCTAssertEqual(tools.compactMap { $0["name"]?.stringValue }, ["load", "loadNext", "reset", "status", "collections", "items", "loadAll"])
        for tool in tools {
            let name = tool["name"]?.stringValue ?? "?"
            for key in ["inputSchema", "outputSchema"] {
                let schema = try XCTUnwrap(tool[key], "\(name).\(key)")
                XCTAssertEqual(schema["type"], .string("object"), "\(name).\(key) describes an object")
                // Every $ref points into the schema's own $defs.
                for ref in references(in: schema) {
                    XCTAssertTrue(ref.hasPrefix("#/$defs/"), "\(name).\(key): \(ref)")
                    XCTAssertNotNil(schema["$defs"]?[String(ref.dropFirst("#/$defs/".count))], "\(name).\(key): \(ref) resolves")
                }
            }
            XCTAssertTrue(tool["description"]?.stringValue?.isEmpty == false, name)
        }
        let loadNext = try XCTUnwrap(tools.first { $0["name"] == .string("loadNext") })
        try expectMatch(loadNext["inputSchema"]?["required"] ?? .null, #"["collection"]"#)
        XCTAssertEqual(Set(loadNext["inputSchema"]?["properties"]?.objectValue?.keys.map { $0 } ?? []), ["collection", "ifLoading", "fields"])
        XCTAssertEqual(loadNext["inputSchema"]?["additionalProperties"], .bool(false))
        XCTAssertEqual(loadNext["outputSchema"]?["title"], .string("Page"), "the result's schema itself, not a reference to it")
        XCTAssertTrue(loadNext["description"]?.stringValue?.contains("Collections: demo.") == true)
        // loadAll's progress goes through MCP's own _meta.progressToken.
        let loadAll = try XCTUnwrap(tools.first { $0["name"] == .string("loadAll") })
        XCTAssertNil(loadAll["inputSchema"]?["properties"]?["progressToken"])
        XCTAssertEqual(loadAll["annotations"]?["readOnlyHint"], .bool(false))
        server.closeInput()
        try server.finish()
    }

    func testDefineIsAToolOnlyWithAllowDefine() throws {
        for allow in [false, true] {
            let server = try startServer(files: ["p/first.json": #"{"items": []}"#], arguments: ["mcp"] + (allow ? ["--allow-define"] : []))
            _ = try handshake(server)
            try server.request("1", "tools/list")
            let names = try XCTUnwrap(server.reply("1")["result"]?["tools"]?.arrayValue).compactMap { $0["name"]?.stringValue }
            XCTAssertEqual(names.contains("define"), allow)
            try server.request("2", "tools/call", #"{"name": "define", "arguments": {"name": "x", "source": {"type": "file", "dir": "p"}, "paging": {"strategy": "page"}}}"#)
            let reply = try server.reply("2")
            if allow {
                XCTAssertEqual(reply["result"]?["isError"], .bool(false))
                XCTAssertEqual(reply["result"]?["structuredContent"]?["collection"], .string("x"))
                try expectMatch(server.notification("notifications/tools/list_changed"), #"{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}"#)
                try expectMatch(server.notification("notifications/resources/list_changed"), #"{"jsonrpc": "2.0", "method": "notifications/resources/list_changed"}"#)
            } else {
                try expectMatch(reply, rpcError(2, #"{"code": -32602, "message": "<string>", "data": {"field": "name", "expected": "<contains:got \"define\">"}}"#))
            }
            server.closeInput()
            try server.finish()
        }
    }

    func testToolCallResultsAreTheMethodsResults() throws {
        let mcp = try startServer(arguments: ["mcp"])
        let plain = try startServer()
        _ = try handshake(mcp)
        try mcp.request("1", "tools/call", #"{"name": "loadNext", "arguments": {"collection": "demo"}}"#)
        try plain.request("1", "loadNext", #"{"collection": "demo"}"#)
        let call = try XCTUnwrap(mcp.reply("1")["result"])
        let native = try XCTUnwrap(plain.reply("1")["result"])
        XCTAssertEqual(call["isError"], .bool(false))
        XCTAssertEqual(call["structuredContent"], native, "structuredContent is the method's result")
        let text = try XCTUnwrap(call["content"]?[0]?["text"]?.stringValue)
        XCTAssertEqual(call["content"]?[0]?["type"], .string("text"))
        XCTAssertEqual(try JSONValue.parse(text), native, "the text content is the result as JSON")
        // `collections` returns an array: structuredContent wraps it.
        try mcp.request("2", "tools/call", #"{"name": "collections"}"#)
        try plain.request("2", "collections")
        XCTAssertEqual(try mcp.reply("2")["result"]?["structuredContent"], .object(["collections": try plain.reply("2")["result"] ?? .null]))
        // The native methods stay available in an MCP session.
        try mcp.request("3", "status", #"{"collection": "demo"}"#)
        try expectMatch(mcp.reply("3"), rpcResult(3, #"{"collection": "demo", "hasNext": true, "isLoading": false, "lastId": "page-2", "count": 25, "pages": 1, "lastError": null}"#))
        for server in [mcp, plain] {
            server.closeInput()
            try server.finish()
        }
    }

    func testFailuresAreErrorResultsAndBadCallsAreInvalidParams() throws {
        let server = try startServer(arguments: ["mcp"])
        _ = try handshake(server)
        try server.request("1", "tools/call", #"{"name": "loadNext", "arguments": {"collection": "nope"}}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"{"content": [{"type": "text", "text": "Unknown collection: nope"}], "structuredContent": {"code": -32001, "message": "Unknown collection: nope", "data": {"collection": "nope", "known": ["demo"]}}, "isError": true}"#))
        try server.request("2", "tools/call", #"{"name": "loadPrevious", "arguments": {}}"#)
        try expectMatch(server.reply("2"), rpcError(2, #"{"code": -32602, "message": "<string>", "data": {"field": "name", "expected": "<contains:loadNext>"}}"#))
        try server.request("3", "tools/call", #"{"name": "loadNext", "arguments": {"collection": "demo", "page": 3}}"#)
        try expectMatch(server.reply("3"), rpcError(3, #"{"code": -32602, "message": "<string>", "data": {"field": "arguments.page", "expected": "<contains:collection>"}}"#))
        try server.request("4", "tools/call", #"{"name": "loadNext", "arguments": {"collection": 7}}"#)
        try expectMatch(server.reply("4"), rpcError(4, #"{"code": -32602, "message": "<string>", "data": {"field": "collection", "expected": "a string"}}"#))
        try server.request("5", "tools/call", #"{"name": "loadNext", "arguments": [1]}"#)
        try expectMatch(server.reply("5"), rpcError(5, #"{"code": -32602, "message": "<string>", "data": {"field": "arguments", "expected": "an object"}}"#))
        try server.request("6", "tools/call", #"{"name": "loadNext", "arguments": {"collection": "demo"}, "_meta": {"progressToken": [1]}}"#)
        try expectMatch(server.reply("6"), rpcError(6, #"{"code": -32602, "message": "<string>", "data": {"field": "_meta.progressToken", "expected": "a string or an integer"}}"#))
        try server.request("7", "tools/call", #"{"name": "items", "arguments": {"collection": "demo", "fields": ["/id", "/x/id"]}}"#)
        try expectMatch(server.reply("7"), rpcError(7, #"{"code": -32602, "message": "<string>", "data": {"field": "fields", "expected": "<contains:\"id\">"}}"#))
        // None of that moved the collection.
        try server.request("8", "tools/call", #"{"name": "loadNext", "arguments": {"collection": "demo"}}"#)
        XCTAssertEqual(try server.reply("8")["result"]?["structuredContent"]?["page"], .int(1))
        server.closeInput()
        try server.finish()
    }

    func testProgressPerPageWithTheCallersToken() throws {
        let server = try startServer(arguments: ["mcp"])
        _ = try handshake(server)
        try server.request("1", "tools/call", #"{"name": "loadAll", "arguments": {"collection": "demo", "maxPages": 3}, "_meta": {"progressToken": "walk"}}"#)
        let reply = try server.reply("1")
        try expectMatch(reply, rpcResult(1, #"{"content": "<any>", "structuredContent": {"collection": "demo", "pages": 3, "count": 75, "hasNext": true, "lastId": "page-4"}, "isError": false}"#))
        let progress = server.takeAll { $0["method"] == .string("notifications/progress") }
        XCTAssertEqual(progress.map { $0["params"]?["progress"] }, [.int(25), .int(50), .int(75)])
        XCTAssertTrue(progress.allSatisfy { $0["params"]?["progressToken"] == .string("walk") })
        // loadAll's nextpage notifications are not sent to an MCP tool call.
        XCTAssertEqual(server.takeAll { $0["method"] == .string("page") }.count, 0)
        // loadAll's maxItems defaults to 1000 in a tool call: the demo's 250 end first.
        try server.request("2", "tools/call", #"{"name": "loadAll", "arguments": {"collection": "demo"}, "_meta": {"progressToken": 9}}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"{"content": "<any>", "structuredContent": {"collection": "demo", "pages": 10, "count": 250, "hasNext": false, "lastId": null}, "isError": false}"#))
        XCTAssertEqual(server.takeAll { $0["method"] == .string("notifications/progress") }.last?["params"]?["progress"], .int(250))
        // items' limit defaults to 100 in a tool call; asked for, any limit holds.
        try server.request("3", "tools/call", #"{"name": "items", "arguments": {"collection": "demo", "fields": ["/id"]}}"#)
        let slice = try XCTUnwrap(server.reply("3")["result"]?["structuredContent"])
        XCTAssertEqual(slice["items"]?.arrayValue?.count, 100)
        XCTAssertEqual(slice["count"], .int(250))
        try server.request("4", "tools/call", #"{"name": "items", "arguments": {"collection": "demo", "offset": 240, "limit": 500}}"#)
        XCTAssertEqual(try server.reply("4")["result"]?["structuredContent"]?["items"]?.arrayValue?.count, 10)
        server.closeInput()
        try server.finish()
    }

    func testCancelledToolCallGetsNoReplyAndItsPageNeverLands() throws {
        let directory = try temporaryDirectory()
        let fifo = try makeFifo(directory + "/pages/first.json")
        let server = try startServer(config: fileConfig(paging: #"{"strategy": "cursor"}"#), arguments: ["mcp"], in: directory)
        _ = try handshake(server)
        try server.request("1", "tools/call", #"{"name": "loadNext", "arguments": {"collection": "c"}}"#)
        try server.request("2", "tools/call", #"{"name": "status", "arguments": {"collection": "c"}}"#)
        XCTAssertEqual(try server.reply("2")["result"]?["structuredContent"]?["isLoading"], .bool(true))
        try server.notify("notifications/cancelled", #"{"requestId": 1, "reason": "the user moved on"}"#)
        // A requestId that names nothing is ignored.
        try server.notify("notifications/cancelled", #"{"requestId": 404}"#)
        // Messages are handled in order: once ping is answered, the cancellation was read.
        try server.request("9", "ping")
        try expectMatch(server.reply("9"), rpcResult(9, "{}"))
        fifo.write(#"{"items": ["late"], "next_cursor": null}"#)
        try server.request("3", "status", #"{"collection": "c"}"#)
        try expectMatch(server.reply("3"), rpcResult(3, #"{"collection": "c", "hasNext": true, "isLoading": "<bool>", "lastId": null, "count": 0, "pages": 0, "lastError": "<any>"}"#))
        server.closeInput()
        try server.waitForEndOfOutput()
        XCTAssertTrue(server.takeAll { $0["id"] == .int(1) }.isEmpty, "a cancelled MCP request is not answered")
        try server.finish()
    }

    func testLoggingSetLevelSendsLogLinesAsMessages() throws {
        let server = try startServer(files: ["p/first.json": #"{"items": []}"#], arguments: ["mcp"])
        _ = try handshake(server)
        try server.request("1", "logging/setLevel", #"{"level": "loud"}"#)
        try expectMatch(server.reply("1"), rpcError(1, #"{"code": -32602, "message": "<string>", "data": {"field": "level", "expected": "<contains:debug>"}}"#))
        try server.request("2", "logging/setLevel", #"{"level": "info"}"#)
        try expectMatch(server.reply("2"), rpcResult(2, "{}"))
        try server.request("3", "define", #"{"name": "extra", "source": {"type": "file", "dir": "p"}, "paging": {"strategy": "page"}}"#)
        _ = try server.reply("3")
        try expectMatch(server.notification("notifications/message"), #"{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "logger": "nextpage", "data": {"message": "defined collection", "collection": "extra"}}}"#)
        // stderr keeps the line too.
        try server.waitForStderr(containing: "defined collection")
        _ = try server.notification("notifications/tools/list_changed")
        _ = try server.notification("notifications/resources/list_changed")
        server.closeInput()
        try server.finish()
    }

    func testResourcesAreTheCollections() throws {
        let server = try startServer(arguments: ["mcp"])
        _ = try handshake(server)
        try server.request("1", "tools/call", #"{"name": "loadNext", "arguments": {"collection": "demo", "fields": ["/id"]}}"#)
        _ = try server.reply("1")
        try server.request("2", "resources/list")
        try expectMatch(server.reply("2"), rpcResult(2, #"{"resources": [{"uri": "nextpage://collections/demo", "name": "demo", "description": "<string>", "mimeType": "application/json"}]}"#))
        try server.request("3", "resources/read", #"{"uri": "nextpage://collections/demo"}"#)
        let contents = try XCTUnwrap(server.reply("3")["result"]?["contents"]?[0])
        try expectMatch(contents, #"{"uri": "nextpage://collections/demo", "mimeType": "application/json", "text": "<string>"}"#)
        let snapshot = try JSONValue.parse(contents["text"]?.stringValue ?? "")
        try expectMatch(snapshot["state"] ?? .null, #"{"collection": "demo", "hasNext": true, "isLoading": false, "lastId": "page-2", "count": 25, "pages": 1, "lastError": null}"#)
        XCTAssertEqual(snapshot["items"]?.arrayValue?.count, 25)
        XCTAssertEqual(snapshot["items"]?[0]?["name"], .string("blue heron 1"), "a resource holds the items as loaded, not projected")
        try server.request("4", "resources/read", #"{"uri": "nextpage://collections/nope"}"#)
        try expectMatch(server.reply("4"), rpcError(4, #"{"code": -32602, "message": "<string>", "data": {"field": "uri", "expected": "<contains:nextpage://collections/demo>"}}"#))
        try server.request("5", "resources/templates/list")
        try expectMatch(server.reply("5"), rpcResult(5, #"{"resourceTemplates": [{"uriTemplate": "nextpage://collections/{name}", "name": "collection", "title": "<string>", "description": "<string>", "mimeType": "application/json"}]}"#))
        server.closeInput()
        try server.finish()
    }

    func testLongListsPageWithMCPCursors() throws {
        let names = (0..<150).map { String(format: "c%03d", $0) }
        let collections = names.map { #""\#($0)": {"source": {"type": "file", "dir": "p"}, "paging": {"strategy": "page"}}"# }
        let server = try startServer(
            config: #"{"collections": {\#(collections.joined(separator: ","))}}"#, files: ["p/first.json": #"{"items": []}"#], arguments: ["mcp"])
        _ = try handshake(server)
        try server.request("1", "resources/list")
        let first = try XCTUnwrap(server.reply("1")["result"])
        let cursor = try XCTUnwrap(first["nextCursor"]?.stringValue)
        try server.request("2", "resources/list", #"{"cursor": \#(JSONValue.quote(cursor))}"#)
        let second = try XCTUnwrap(server.reply("2")["result"])
        XCTAssertNil(second["nextCursor"])
        let listed = (first["resources"]?.arrayValue ?? []) + (second["resources"]?.arrayValue ?? [])
        XCTAssertEqual(listed.compactMap { $0["name"]?.stringValue }, names, "every collection once, in order")
        try server.request("3", "resources/list", #"{"cursor": "not-a-cursor"}"#)
        try expectMatch(server.reply("3"), rpcError(3, #"{"code": -32602, "message": "<string>", "data": {"field": "cursor", "expected": "<string>"}}"#))
        server.closeInput()
        try server.finish()
    }

    func testTheStatelessRevisionIsServedWithItsEnvelope() throws {
        let server = try startServer()
        try server.request("1", "server/discover", "{\(Self.modernMeta)}")
        try expectMatch(server.reply("1"), rpcResult(1, #"{"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {"listChanged": true}, "resources": {"listChanged": true}, "logging": {}}, "serverInfo": {"name": "nextpage", "version": "<string>"}, "instructions": "<string>", "resultType": "complete", "ttlMs": 0, "cacheScope": "private", "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "nextpage", "version": "<string>"}}}"#))
        try server.request("2", "tools/call", #"{"name": "loadNext", "arguments": {"collection": "demo", "fields": ["/id"]}, \#(Self.modernMeta)}"#)
        let call = try XCTUnwrap(server.reply("2")["result"])
        XCTAssertEqual(call["resultType"], .string("complete"))
        XCTAssertEqual(call["structuredContent"]?["items"]?[0], .object(["id": .int(1)]))
        try server.request("3", "tools/list", "{\(Self.modernMeta)}")
        try expectMatch(server.reply("3"), rpcResult(3, #"{"tools": "<any>", "resultType": "complete", "ttlMs": 0, "cacheScope": "private", "_meta": "<any>"}"#))
        // A revision not served, and an envelope without the client's capabilities.
        try server.request("4", "tools/list", #"{"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}}}"#)
        try expectMatch(server.reply("4"), rpcError(4, #"{"code": -32022, "message": "<string>", "data": {"supported": ["2026-07-28"], "requested": "2099-01-01"}}"#))
        try server.request("5", "server/discover", #"{"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}}}"#)
        try expectMatch(server.reply("5"), rpcError(5, #"{"code": -32022, "message": "<string>", "data": {"supported": ["2026-07-28"], "requested": "2099-01-01"}}"#))
        try server.request("6", "tools/list", #"{"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}"#)
        try expectMatch(server.reply("6"), rpcError(6, #"{"code": -32602, "message": "<string>", "data": {"field": "_meta.io.modelcontextprotocol/clientCapabilities", "expected": "<string>"}}"#))
        try server.request("7", "resources/read", #"{"uri": "nextpage://collections/nope", \#(Self.modernMeta)}"#)
        try expectMatch(server.reply("7"), rpcError(7, #"{"code": -32602, "message": "<string>", "data": {"field": "uri", "expected": "<string>"}}"#))
        // A notification's method sent with an id is answered: complete with the envelope, null without it.
        try server.request("8", "notifications/roots/list_changed", "{\(Self.modernMeta)}")
        try expectMatch(server.reply("8"), rpcResult(8, #"{"resultType": "complete", "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "nextpage", "version": "<string>"}}}"#))
        try server.request("9", "notifications/roots/list_changed", "{}")
        try expectMatch(server.reply("9"), #"{"jsonrpc":"2.0","id":9,"result":null}"#)
        server.closeInput()
        try server.finish()
    }

    func testFieldsProjectItemsFromTheBytesTheSourceWrote() throws {
        let page = #"{"items": [{"id": 1.10, "title": "caf\u00e9", "user": {"login": "ann", "id": 7}}, {"id": 2, "user": null}], "next_cursor": null}"#
        let server = try startServer(config: fileConfig(paging: #"{"strategy": "cursor"}"#), files: ["pages/first.json": page])
        try server.request("1", "loadNext", #"{"collection": "c", "fields": ["/title", "/user/login", "/id"]}"#)
        let reply = try server.reply("1")
        XCTAssertEqual(reply["result"]?["items"]?.arrayValue?.count, 2)
        // The raw reply keeps 1.10 and the escape as the source wrote them.
        let raw = server.stdoutText
        XCTAssertTrue(raw.contains(#"{"title":"caf\u00e9","login":"ann","id":1.10}"#), raw)
        XCTAssertTrue(raw.contains(#"{"id":2}"#), raw)
        try server.request("2", "items", #"{"collection": "c", "fields": ["/user/id"]}"#)
        try expectMatch(server.reply("2"), rpcResult(2, #"{"collection": "c", "items": [{"id": 7}, {}], "count": 2, "offset": 0}"#))
        try server.request("3", "items", #"{"collection": "c", "fields": "/id"}"#)
        try expectMatch(server.reply("3"), rpcError(3, #"{"code": -32602, "message": "<string>", "data": {"field": "fields", "expected": "<string>"}}"#))
        try server.request("4", "items", #"{"collection": "c", "fields": [""]}"#)
        try expectMatch(server.reply("4"), rpcError(4, #"{"code": -32602, "message": "<string>", "data": {"field": "fields", "expected": "<string>"}}"#))
        server.closeInput()
        try server.finish()
    }

    /// Every `$ref` value inside `schema`.
    private func references(in schema: JSONValue) -> [String] {
        switch schema {
        case .object(let members):
            return members.flatMap { key, value in key == "$ref" ? [value.stringValue ?? ""] : references(in: value) }
        case .array(let elements):
            return elements.flatMap(references)
        default:
            return []
        }
    }
}

/// What editors' JSON-RPC clients do that nextpage must take (docs/editors.md):
/// Emacs's jsonrpc.el sends `"params": null`; LSP clients send `$/`
/// notifications nextpage does not know.
final class EditorHabitsTests: EndToEndTestCase {
    func testParamsNullIsNoParams() throws {
        let server = try startServer()
        try server.send(#"{"jsonrpc":"2.0","id":1,"method":"collections","params":null}"#)
        try expectMatch(server.reply("1"), rpcResult(1, #"[{"collection": "demo", "hasNext": true, "isLoading": false, "lastId": null, "count": 0, "pages": 0, "lastError": null}]"#))
        try server.send(#"{"jsonrpc":"2.0","id":2,"method":"shutdown","params":null}"#)
        try expectMatch(server.reply("2"), rpcResult(2, "null"))
        try server.send(#"{"jsonrpc":"2.0","method":"exit","params":null}"#)
        XCTAssertEqual(try server.waitForExit(), 0, "shutdown then exit, both with params null, end the process with status 0")
        try server.finish()
    }

    func testUnknownDollarNotificationsAreIgnoredSilently() throws {
        let server = try startServer(framing: .lsp)
        try server.notify("$/setTrace", #"{"value": "verbose"}"#)
        try server.notify("$/somethingNew", "null")
        try server.request("1", "loadNext", #"{"collection": "demo"}"#)
        let reply = try server.nextMessage()
        XCTAssertEqual(reply["id"], .int(1), "the first message out is the reply: nothing answered the notifications")
        XCTAssertEqual(reply["result"]?["page"], .int(1))
        server.closeInput()
        try server.finish()
    }
}
