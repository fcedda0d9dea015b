import Jansson
import Logging
import NextPage

/// How `http` sources reach upstream (`--record-upstream`, `--replay-upstream`).
public enum UpstreamMode: Sendable, Equatable {
    /// The network (the default).
    case live
    /// The network, with every exchange appended to `DIR/<collection>.jsonl`.
    case record(directory: String)
    /// Only the recordings in `DIR/<collection>.jsonl`; no network at all.
    case replay(directory: String)
}

/// A validated collection definition: where pages come from and how to walk them.
public struct CollectionDefinition: Sendable {
    /// Where pages come from (the protocol `Client` to build).
    public enum Source: Sendable, Equatable {
        /// `{"type": "file", "dir": D, "maxBodyBytes": N}`, with `dir` resolved against the config file's folder.
        case file(directory: String, maxBodyBytes: Int = FileClient.defaultMaxBodyBytes)
        /// The built-in demo pages.
        case bundled(pages: [String: [UInt8]])
        /// `{"type": "http", "url", ...}`, with `${env:NAME}` expanded.
        case http(HTTPSource)
        /// `{"type": "command", "argv", ...}`, with `${env:NAME}` expanded.
        case command(CommandSource)
    }

    public var source: Source
    public var paging: Paging
    public var options: CollectionOptions
    /// Why the source cannot be used, when it cannot (a config file's
    /// `${env:NAME}` that is not set): its fetches fail with this reason.
    public var unavailable: String?
    /// Under `--replay-upstream`: the `${env:NAME}` not set that only
    /// credentials use (header values, `source.auth` values), which a replay
    /// never sends. The collection pages from the recording; each variable
    /// is warned about (`ServerLauncher.replayWarnings`).
    public var unsetForReplay: [UnsetVariable] = []

    public init(source: Source, paging: Paging, options: CollectionOptions = CollectionOptions()) {
        self.source = source
        self.paging = paging
        self.options = options
    }

    /// The client that serves this definition's source for the collection
    /// `name`. `upstream` and `environment` only matter to `http` sources:
    /// by default they go to the network through the process's shared HTTP
    /// client and share credentials and rate limits through the process's
    /// environment (credentials per collection when recording or replaying,
    /// so that each recording holds its own token exchange); `logger`
    /// receives the retries and failures of `http` and `command` sources
    /// (default: no logs).
    public func makeClient(
        name: String = "", upstream: UpstreamMode = .live, logger: Logger? = nil, environment: HTTPSourceEnvironment = .shared
    ) -> any Client {
        if let unavailable { return UnavailableClient(reason: unavailable) }
        switch source {
        case .file(let directory, let maxBodyBytes): return FileClient(directory: directory, maxBodyBytes: maxBodyBytes)
        case .bundled(let pages): return BundledClient(pages: pages)
        case .command(let command): return CommandClient(source: command, collection: name, logger: logger)
        case .http(let http):
            let redactor = HTTPRedactor(
                source: http, exemptQueryNames: HTTPRedactor.pagingNames(paging, pageSizeParam: options.pageSizeParam)
                    .union(options.incremental?.param.map { [HTTPURL.encodeComponent($0)] } ?? []),
                exemptHeaderNames: HTTPRedactor.pagingHeaderNames(paging), learned: environment.secrets)
            // A replay never waits: the waiting happened when it was recorded.
            let clock: any UpstreamClock
            if case .replay = upstream { clock = NonWaitingUpstreamClock() } else { clock = environment.clock }
            let credentials = http.auth.map {
                environment.credentialProvider(for: $0, scope: upstream == .live ? "" : name, clock: clock, logger: logger)
            }
            switch upstream {
            case .live:
                return HTTPPageClient(source: http, collection: name, logger: logger, environment: environment, credentials: credentials)
            case .record(let directory):
                let transport = RecordingTransport(
                    wrapping: HTTPNetworkTransport.shared,
                    file: RecordingTransport.file(directory: directory, collection: name), redactor: redactor, logger: logger)
                return HTTPPageClient(
                    source: http, collection: name, transport: transport, logger: logger, environment: environment, credentials: credentials)
            case .replay(let directory):
                let transport = ReplayTransport(
                    file: RecordingTransport.file(directory: directory, collection: name), redactor: redactor,
                    cursorHeaders: Set(paging.header.map { [$0] } ?? []))
                return HTTPPageClient(
                    source: http, collection: name, transport: transport, retryPolicy: .immediate, logger: logger,
                    environment: environment, clock: clock, credentials: credentials)
            }
        }
    }

    /// A fresh collection for this definition (see `makeClient` for the defaults).
    public func makeCollection(
        name: String, upstream: UpstreamMode = .live, logger: Logger? = nil, environment: HTTPSourceEnvironment = .shared
    ) -> PagedCollection {
        PagedCollection(
            name: name, client: makeClient(name: name, upstream: upstream, logger: logger, environment: environment),
            paging: paging, options: options, logger: logger)
    }
}

/// A definition that does not validate: the field (a dotted path) and what
/// was expected; once placed in the document validated, also the value
/// found there and the nearest valid name for a misspelled one.
///
/// Two errors are the same when they name the same field and expectation
/// (`got` and `suggestion` describe the document they were found in).
public struct DefinitionError: Error, Sendable, Equatable, CustomStringConvertible {
    public var field: String
    public var expected: String
    /// The value found at `field`, compact and shortened, with secrets shown
    /// as `[redacted]`; `nil` when the field is missing.
    public var got: String?
    /// The valid name nearest to a misspelled field name or value.
    public var suggestion: String?
    /// The valid names `suggestion` is picked from (field names when
    /// `choicesAreFields`, else the values the field takes).
    var choices: [String] = []
    var choicesAreFields = false

    public init(field: String, expected: String) {
        self.field = field
        self.expected = expected
    }

    /// An error whose field takes one of `choices`.
    init(field: String, expected: String, choices: [String]) {
        self.init(field: field, expected: expected)
        self.choices = choices
    }

    /// An unknown field: expected `"\(what) (known: ...)"`, naming the known fields.
    static func unknownField(_ field: String, known: Set<String>, what: String = "no such field") -> DefinitionError {
        let names = known.sorted()
        var error = DefinitionError(field: field, expected: "\(what) (known: \(names.joined(separator: ", ")))", choices: names)
        error.choicesAreFields = true
        return error
    }

    public static func == (lhs: DefinitionError, rhs: DefinitionError) -> Bool {
        lhs.field == rhs.field && lhs.expected == rhs.expected
    }

    /// `FIELD: expected EXPECTED, got VALUE; did you mean "NAME"?` (the last
    /// two parts when known).
    public var description: String {
        var text = "\(field): expected \(expected)"
        if let got { text += ", got \(got)" }
        if let suggestion { text += "; did you mean \"\(suggestion)\"?" }
        return text
    }
}
