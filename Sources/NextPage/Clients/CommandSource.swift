/// Where a `command` source's pages come from (`source` in a collection
/// definition, docs/config.md), validated and with `${env:NAME}` already expanded.
///
/// The command runs once per page, without a shell: `argv[0]` is the program
/// (looked up on `PATH` when it has no `/`), every `{cursor}` inside the other
/// elements is replaced by the cursor, and the page is what it writes on stdout.
public struct CommandSource: Sendable, Equatable {
    /// The placeholder replaced by the cursor in `argv[1...]`.
    public static let cursorPlaceholder = "{cursor}"
    /// The variable that carries the cursor in the child's environment.
    public static let cursorVariable = "NEXTPAGE_CURSOR"

    /// The program and its arguments; never empty, `argv[0]` never empty.
    public var argv: [String]
    /// Variables set for the child on top of the server's environment, in order.
    public var environment: [(name: String, value: String)]
    /// Seconds one run may take before it is killed (default 30).
    public var timeout: Double
    /// Largest page accepted on stdout, in bytes (default 64 MiB, as for `http`).
    public var maxBodyBytes: Int

    public static let defaultTimeout: Double = 30
    public static let defaultMaxBodyBytes = HTTPSource.defaultMaxBodyBytes

    public init(
        argv: [String], environment: [(name: String, value: String)] = [],
        timeout: Double = CommandSource.defaultTimeout, maxBodyBytes: Int = CommandSource.defaultMaxBodyBytes
    ) {
        self.argv = argv
        self.environment = environment
        self.timeout = timeout
        self.maxBodyBytes = maxBodyBytes
    }

    /// The arguments after `argv[0]` for one run, each `{cursor}` replaced by `cursor`.
    public func arguments(cursor: String) -> [String] {
        argv.dropFirst().map { $0.replacingAll(Self.cursorPlaceholder, with: cursor) }
    }

    public static func == (lhs: CommandSource, rhs: CommandSource) -> Bool {
        lhs.argv == rhs.argv
            && lhs.environment.map(\.name) == rhs.environment.map(\.name)
            && lhs.environment.map(\.value) == rhs.environment.map(\.value)
            && lhs.timeout == rhs.timeout && lhs.maxBodyBytes == rhs.maxBodyBytes
    }
}

extension String {
    /// Every occurrence of `placeholder` replaced by `value`, scanning left to
    /// right; text inserted from `value` is never scanned again.
    func replacingAll(_ placeholder: String, with value: String) -> String {
        guard !placeholder.isEmpty, contains(placeholder) else { return self }
        var out = ""
        var rest = Substring(self)
        while let range = rest.firstRange(of: placeholder) {
            out += rest[..<range.lowerBound]
            out += value
            rest = rest[range.upperBound...]
        }
        out += rest
        return out
    }
}
