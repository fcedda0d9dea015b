import Jansson

/// Where an `http` source's pages come from (`source` in a collection
/// definition, docs/config.md), validated and with `${env:NAME}` already expanded.
public struct HTTPSource: Sendable, Equatable {
    /// The request methods an `http` source can use.
    public enum Method: String, Sendable, CaseIterable {
        case get = "GET"
        case post = "POST"
    }

    /// The first page's URL; query items already in it are kept.
    public var url: String
    public var method: Method
    /// The JSON body of a POST (`nil`: none, or `{}` when a cursor goes in the body).
    public var body: RawJSON?
    /// Query items added to `url`, in order.
    public var query: [(name: String, value: String)]
    /// Request headers, in order.
    public var headers: [(name: String, value: String)]
    /// Seconds one attempt may take, answer and body included (default 30).
    public var timeout: Double
    /// Attempts after the first for failures worth retrying (default 2).
    public var retries: Int
    /// Largest response body accepted, in bytes (default 64 MiB).
    public var maxBodyBytes: Int
    /// What `${env:NAME}` expanded to in the url, query values and header
    /// values: secrets, whatever field holds them, scrubbed wherever they
    /// would show (`HTTPRedactor`, from 8 bytes on). A variable that names
    /// the endpoint (a whole URL, or the host) is not counted. Not part of
    /// equality: the requests are the same.
    public var environmentValues: [String]
    /// How requests to the source's origin prove who sends them (`auth`), if at all.
    public var auth: HTTPAuth?
    /// Client-side spacing of requests to the source's origin (`rateLimit`), if any.
    public var rateLimit: RequestRate?
    /// The longest wait for a rate limit to reset, in seconds (default 60);
    /// a longer one fails the call at once, with `retryAt`.
    public var maxRateLimitWait: Double

    public static let defaultTimeout: Double = 30
    public static let defaultRetries = 2
    public static let defaultMaxBodyBytes = 64 << 20
    public static let defaultMaxRateLimitWait: Double = 60

    public init(
        url: String, method: Method = .get, body: RawJSON? = nil,
        query: [(name: String, value: String)] = [], headers: [(name: String, value: String)] = [],
        timeout: Double = HTTPSource.defaultTimeout, retries: Int = HTTPSource.defaultRetries,
        maxBodyBytes: Int = HTTPSource.defaultMaxBodyBytes, environmentValues: [String] = [],
        auth: HTTPAuth? = nil, rateLimit: RequestRate? = nil, maxRateLimitWait: Double = HTTPSource.defaultMaxRateLimitWait
    ) {
        self.auth = auth
        self.rateLimit = rateLimit
        self.maxRateLimitWait = maxRateLimitWait
        self.url = url
        self.method = method
        self.body = body
        self.query = query
        self.headers = headers
        self.timeout = timeout
        self.retries = retries
        self.maxBodyBytes = maxBodyBytes
        self.environmentValues = environmentValues
    }

    public static func == (lhs: HTTPSource, rhs: HTTPSource) -> Bool {
        lhs.url == rhs.url && lhs.method == rhs.method && lhs.body == rhs.body
            && lhs.query.map(\.name) == rhs.query.map(\.name) && lhs.query.map(\.value) == rhs.query.map(\.value)
            && lhs.headers.map(\.name) == rhs.headers.map(\.name) && lhs.headers.map(\.value) == rhs.headers.map(\.value)
            && lhs.timeout == rhs.timeout && lhs.retries == rhs.retries && lhs.maxBodyBytes == rhs.maxBodyBytes
            && lhs.auth == rhs.auth && lhs.rateLimit == rhs.rateLimit && lhs.maxRateLimitWait == rhs.maxRateLimitWait
    }

    // MARK: Environment

    /// A `${env:NAME}` whose variable is not set.
    public struct UnsetVariable: Error, Sendable, Equatable {
        public var name: String

        public init(name: String) {
            self.name = name
        }
    }

    /// Replaces every `${env:NAME}` (NAME: letters, digits and `_`, not
    /// starting with a digit) with the variable's value from `environment`.
    /// Any other `${...}` is left as it is. Throws for an unset variable.
    public static func expandEnvironment(_ text: String, environment: (String) -> String?) throws(UnsetVariable) -> String {
        guard text.contains("${env:") else { return text }
        var out = ""
        var rest = Substring(text)
        while let start = rest.firstRange(of: "${env:") {
            out += rest[..<start.lowerBound]
            let after = rest[start.upperBound...]
            guard let close = after.firstIndex(of: "}"), isVariableName(after[..<close]) else {
                out += rest[start]
                rest = after
                continue
            }
            let name = String(after[..<close])
            guard let value = environment(name) else { throw UnsetVariable(name: name) }
            out += value
            rest = after[after.index(after: close)...]
        }
        out += rest
        return out
    }

    private static func isVariableName(_ name: Substring) -> Bool {
        guard let first = name.unicodeScalars.first, !("0"..."9").contains(first) else { return false }
        return name.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "_")
        }
    }
}
