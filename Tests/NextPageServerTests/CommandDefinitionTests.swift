import Jansson
import NextPage
@testable import NextPageServer
import XCTest

/// The `command` source in collection definitions: what validates, what it
/// becomes, the errors that name the field, and `allowsCommands`.
final class CommandDefinitionTests: XCTestCase {
    private let environment = ["PAGES_TOKEN": "t0k3n", "PAGES_HOME": "/srv/pages"]

    private func validator(allowsCommands: Bool = true) -> DefinitionValidator {
        DefinitionValidator(baseDirectory: "/etc/nextpage", environment: environment, allowsCommands: allowsCommands)
    }

    private func validate(
        _ source: String, paging: String = #"{"strategy": "cursor"}"#, allowsCommands: Bool = true
    ) throws(DefinitionError) -> CollectionDefinition {
        let json = try! JSON.parse(#"{"source": \#(source), "paging": \#(paging)}"#)
        return try validator(allowsCommands: allowsCommands).validate(json)
    }

    private func error(
        _ source: String, paging: String = #"{"strategy": "cursor"}"#, allowsCommands: Bool = true,
        file: StaticString = #filePath, line: UInt = #line
    ) -> DefinitionError? {
        do {
            let definition = try validate(source, paging: paging, allowsCommands: allowsCommands)
            XCTFail("validated as \(definition.source)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    private func command(_ definition: CollectionDefinition, file: StaticString = #filePath, line: UInt = #line) -> CommandSource? {
        guard case .command(let source) = definition.source else {
            XCTFail("not a command source: \(definition.source)", file: file, line: line)
            return nil
        }
        return source
    }

    // MARK: What validates

    func testMinimalCommandSourceTakesTheDefaults() throws {
        let source = try XCTUnwrap(command(try validate(#"{"type": "command", "argv": ["pages", "{cursor}"]}"#)))
        XCTAssertEqual(source, CommandSource(argv: ["pages", "{cursor}"]))
        XCTAssertEqual(source.timeout, 30)
        XCTAssertEqual(source.maxBodyBytes, 64 << 20)
        XCTAssertTrue(source.environment.isEmpty)
    }

    func testEveryFieldWithEnvironmentExpansionAndARelativeProgram() throws {
        let source = try XCTUnwrap(command(try validate("""
            {"type": "command", "argv": ["./bin/pages.sh", "--token=${env:PAGES_TOKEN}", "--after={cursor}"],
             "env": {"PAGES_DIR": "${env:PAGES_HOME}/x", "LANG": "C"}, "timeout": 2.5, "maxBodyBytes": 1024}
            """)))
        XCTAssertEqual(source.argv, ["/etc/nextpage/bin/pages.sh", "--token=t0k3n", "--after={cursor}"])
        XCTAssertEqual(source.environment.map(\.name), ["PAGES_DIR", "LANG"])
        XCTAssertEqual(source.environment.map(\.value), ["/srv/pages/x", "C"])
        XCTAssertEqual(source.timeout, 2.5)
        XCTAssertEqual(source.maxBodyBytes, 1024)

        // Absolute paths and bare names stay as they are.
        XCTAssertEqual(try XCTUnwrap(command(try validate(#"{"type": "command", "argv": ["/bin/cat"]}"#))).argv, ["/bin/cat"])
        XCTAssertEqual(try XCTUnwrap(command(try validate(#"{"type": "command", "argv": ["jq"]}"#))).argv, ["jq"])
    }

    func testCommandSourceBuildsACommandClient() throws {
        let definition = try validate(#"{"type": "command", "argv": ["cat"]}"#)
        XCTAssertTrue(definition.makeClient(name: "c") is CommandClient)
    }

    // MARK: Errors name the field

    func testArgvErrors() throws {
        let cases: [(String, String)] = [
            (#"{"type": "command"}"#, "source.argv"),
            (#"{"type": "command", "argv": []}"#, "source.argv"),
            (#"{"type": "command", "argv": "ls {cursor}"}"#, "source.argv"),
            (#"{"type": "command", "argv": null}"#, "source.argv"),
            (#"{"type": "command", "argv": ["echo", 1]}"#, "source.argv.1"),
            (#"{"type": "command", "argv": [["echo"]]}"#, "source.argv.0"),
            (#"{"type": "command", "argv": [""]}"#, "source.argv.0"),
            (#"{"type": "command", "argv": ["{cursor}"]}"#, "source.argv.0"),
            (#"{"type": "command", "argv": ["bin/{cursor}.sh", "x"]}"#, "source.argv.0"),
            (#"{"type": "command", "argv": ["echo", "a\u0000b"]}"#, "source.argv.1"),
        ]
        for (source, field) in cases {
            XCTAssertEqual(error(source)?.field, field, source)
        }
        XCTAssertEqual(error(#"{"type": "command", "argv": []}"#)?.expected, "a non-empty array of strings: the program, then its arguments")
        XCTAssertEqual(error(#"{"type": "command", "argv": ["{cursor}"]}"#)?.expected,
                       "a program without {cursor} (the cursor may go in the arguments)")
    }

    func testEnvironmentTimeoutAndLimitErrors() throws {
        let cases: [(String, String)] = [
            (#""env": ["A=1"]"#, "source.env"),
            (#""env": {"A": 1}"#, "source.env.A"),
            (#""env": {"A": null}"#, "source.env.A"),
            (#""env": {"": "x"}"#, "source.env."),
            (#""env": {"A=B": "x"}"#, "source.env.A=B"),
            (#""env": {"NEXTPAGE_CURSOR": "x"}"#, "source.env.NEXTPAGE_CURSOR"),
            (#""timeout": 0"#, "source.timeout"),
            (#""timeout": -1"#, "source.timeout"),
            (#""timeout": "5""#, "source.timeout"),
            (#""timeout": 100000"#, "source.timeout"),
            (#""maxBodyBytes": 0"#, "source.maxBodyBytes"),
            (#""maxBodyBytes": 1.5"#, "source.maxBodyBytes"),
            (#""shell": true"#, "source.shell"),
            (#""dir": "pages""#, "source.dir"),
        ]
        for (member, field) in cases {
            XCTAssertEqual(error(#"{"type": "command", "argv": ["cat"], \#(member)}"#)?.field, field, member)
        }
        let unknown = try XCTUnwrap(error(#"{"type": "command", "argv": ["cat"], "shell": true}"#))
        XCTAssertEqual(unknown.expected, "no such field for a command source (known: argv, env, maxBodyBytes, timeout, type)")
    }

    func testUnsetVariableNamesTheFieldAndTheVariable() throws {
        let inArgv = try XCTUnwrap(error(#"{"type": "command", "argv": ["pages", "${env:NO_SUCH_VARIABLE}"]}"#))
        XCTAssertEqual(inArgv.field, "source.argv.1")
        XCTAssertEqual(inArgv.expected, "environment variable NO_SUCH_VARIABLE to be set (for ${env:NO_SUCH_VARIABLE})")
        XCTAssertEqual(error(#"{"type": "command", "argv": ["pages"], "env": {"T": "${env:NOPE}"}}"#)?.field, "source.env.T")
    }

    func testLinkStrategyNeedsHeadersACommandCannotServe() throws {
        let link = try XCTUnwrap(error(#"{"type": "command", "argv": ["cat"]}"#, paging: #"{"strategy": "link"}"#))
        XCTAssertEqual(link.field, "paging.strategy")
        XCTAssertNoThrow(try validate(#"{"type": "command", "argv": ["cat"]}"#, paging: #"{"strategy": "nextUrl"}"#))
    }

    // MARK: --allow-commands

    func testCommandSourcesRefusedWhenNotAllowed() throws {
        let refused = try XCTUnwrap(error(#"{"type": "command", "argv": ["cat"]}"#, allowsCommands: false))
        XCTAssertEqual(refused.field, "source.type")
        XCTAssertTrue(refused.expected.contains("--allow-commands"), refused.expected)
        // Refused before anything else about the source is looked at.
        XCTAssertEqual(error(#"{"type": "command", "argv": []}"#, allowsCommands: false)?.field, "source.type")
        // Other sources are unaffected.
        XCTAssertNoThrow(try validate(#"{"type": "http", "url": "https://example.com"}"#, allowsCommands: false))

        let config = try JSON.parse(#"{"collections": {"c": {"source": {"type": "command", "argv": ["cat"]}, "paging": {"strategy": "cursor"}}}}"#)
        XCTAssertThrowsError(try validator(allowsCommands: false).validateConfig(config)) { error in
            XCTAssertEqual((error as? DefinitionError)?.field, "collections.c.source.type")
        }
        XCTAssertEqual(try validator().validateConfig(config).count, 1)
    }

    func testSourceTypeErrorListsCommand() throws {
        let unknown = try XCTUnwrap(error(#"{"type": "shell", "argv": ["cat"]}"#))
        XCTAssertEqual(unknown.field, "source.type")
        XCTAssertEqual(unknown.expected, "one of file, http, command")
    }
}
