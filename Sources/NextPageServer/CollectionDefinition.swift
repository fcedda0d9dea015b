import Jansson
import NextPage

/// A validated collection definition: where pages come from and how to walk them.
public struct CollectionDefinition: Sendable {
    /// Where pages come from (the protocol `Client` to build).
    public enum Source: Sendable, Equatable {
        /// `{"type": "file", "dir": D}`, with `dir` resolved against the config file's folder.
        case file(directory: String)
        /// The built-in demo pages.
        case bundled(pages: [String: [UInt8]])
    }

    public var source: Source
    public var paging: Paging
    public var options: CollectionOptions

    public init(source: Source, paging: Paging, options: CollectionOptions = CollectionOptions()) {
        self.source = source
        self.paging = paging
        self.options = options
    }

    /// The client that serves this definition's source.
    public func makeClient() -> any Client {
        switch source {
        case .file(let directory): return FileClient(directory: directory)
        case .bundled(let pages): return BundledClient(pages: pages)
        }
    }

    /// A fresh collection for this definition.
    public func makeCollection(name: String) -> PagedCollection {
        PagedCollection(name: name, client: makeClient(), paging: paging, options: options)
    }
}

/// A definition that does not validate: the field (a dotted path) and what was expected.
public struct DefinitionError: Error, Sendable, Equatable, CustomStringConvertible {
    public var field: String
    public var expected: String

    public init(field: String, expected: String) {
        self.field = field
        self.expected = expected
    }

    public var description: String { "\(field): expected \(expected)" }
}
