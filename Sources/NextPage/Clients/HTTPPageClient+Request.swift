import Jansson

extension HTTPPageClient {
    /// Where a collection's cursor goes in a request (docs/config.md).
    public enum CursorPlacement: Sendable, Equatable {
        /// A query parameter (`paging.param`, the default).
        case query(String)
        /// A place in the JSON body (`paging.bodyPointer`).
        case body(String)
        /// A request header (`paging.header`).
        case header(String)

        /// The placement `paging` asks for: `bodyPointer`, else `header`, else `param`.
        public init(_ paging: Paging) {
            if let pointer = paging.bodyPointer {
                self = .body(pointer)
            } else if let header = paging.header {
                self = .header(header)
            } else {
                self = .query(paging.param)
            }
        }
    }

    /// The request that fetches the page `request` names.
    ///
    /// For `link` and `nextUrl` (strategies whose `cursorIsURL`) a cursor is a URL, requested exactly as given
    /// (relative URLs resolved against the URL that answered last; bytes
    /// that can never appear in a URL percent-encoded) with the source's
    /// method, headers and body. Otherwise the request goes to `source.url`
    /// with `source.query` added and the cursor, when there is one, put where
    /// `paging` says: query parameter values are percent-encoded outside
    /// `A-Z a-z 0-9 - . _ ~`, bodies and headers carry the cursor verbatim (a
    /// JSON string, or a number for `page` and `offset`). `pageSize` goes as
    /// `pageSizeParam`, and as `paging.limitParam` for `offset` (`sendsLimit`); the cursor
    /// and the page size replace a `source.query` item of the same name. A next-page
    /// URL (`link`, `nextUrl`) is followed as given, except that it gets
    /// `pageSizeParam` when it lacks one, so every request asks for `pageSize`,
    /// and the incremental value likewise. The incremental value
    /// (`incrementalQuery`) goes before the cursor, replacing a `query` item
    /// of its name.
    ///
    /// A next-page URL on another origin than `source.url` is sent without
    /// the source's secret headers (`Authorization`, `Cookie`, `X-Api-Key`, ...).
    ///
    /// Headers default to `Accept: application/json`, a `User-Agent`, and
    /// `Content-Type: application/json` with a body; the source's headers win.
    public func exchangeRequest<R: Request>(for request: R) throws(LoadError) -> HTTPExchangeRequest {
        let paging = request.paging
        var headers = source.headers
        var body: JSON?
        if source.method == .post {
            body = source.body.flatMap { try? $0.parsed() } ?? (paging.bodyPointer != nil ? JSON.object() : nil)
        }
        let url: String
        if paging.strategy.implementation.cursorIsURL, let cursor = request.cursor {
            let base = lastURL.withLockedValue { $0 } ?? source.url
            var next = HTTPURL.resolve(cursor.text, against: base)
            if let size = request.pageSize, let name = request.pageSizeParam, !HTTPURL.hasQueryItem(named: name, in: next) {
                next = HTTPURL.settingQueryItems([(name, String(size))], in: next)
            }
            if let query = request.incrementalQuery, !HTTPURL.hasQueryItem(named: query.name, in: next) {
                next = HTTPURL.settingQueryItems([query], in: next)
            }
            url = HTTPURL.encodeIllegal(next)
            // A next-page URL on another origin (scheme, host, port) gets no
            // credentials: the page names it, and the source's secrets are
            // for the source's own server (as `gh api --paginate` does).
            if HTTPURL.origin(url) != HTTPURL.origin(source.url) {
                headers = HTTPRedactor.withoutCredentials(headers)
            }
        } else {
            var items = source.query
            // The cursor and the page size replace a `query` item of the same name.
            func set(_ name: String, _ value: String) {
                items.removeAll { $0.name == name }
                items.append((name, value))
            }
            if let query = request.incrementalQuery { set(query.name, query.value) }
            if let cursor = request.cursor {
                switch CursorPlacement(paging) {
                case .query(let name):
                    set(name, cursor.text)
                case .body(let pointer):
                    let root = body ?? JSON.object()
                    let value: JSON = switch cursor {
                    case .string(let text): .string(text)
                    case .integer(let number): .integer(number)
                    }
                    guard Self.insert(value, at: pointer, into: root) else {
                        throw .upstream(UpstreamFailure(
                            retryable: false, message: "cannot put the cursor at '\(pointer)' in the request body"))
                    }
                    body = root
                case .header(let name):
                    guard !cursor.text.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) else {
                        throw .upstream(UpstreamFailure(
                            retryable: false, message: "the cursor cannot be sent in header \(name): it contains a line break"))
                    }
                    headers.removeAll { $0.name.lowercased() == name.lowercased() }
                    headers.append((name, cursor.text))
                }
            }
            if let size = request.pageSize {
                let sendsLimit = paging.strategy.implementation.sendsLimit
                if sendsLimit { set(paging.limitParam, String(size)) }
                if let name = request.pageSizeParam, !(sendsLimit && name == paging.limitParam) {
                    set(name, String(size))
                }
            }
            url = HTTPURL.encodeIllegal(HTTPURL.settingQueryItems(items, in: source.url))
        }
        func setDefault(_ name: String, _ value: String) {
            if !headers.contains(where: { $0.name.lowercased() == name.lowercased() }) { headers.append((name, value)) }
        }
        setDefault("Accept", "application/json")
        setDefault("User-Agent", "nextpage")
        if body != nil { setDefault("Content-Type", "application/json") }
        return HTTPExchangeRequest(
            method: source.method.rawValue, url: url, headers: headers, body: body?.dumpShortestReals(), cursorHeader: paging.header)
    }

    /// Puts `value` at `pointer` inside `root`, creating missing objects
    /// along the way; `-` (or the array's length) as the last token of an
    /// array appends. Returns false when the path runs through something
    /// that is not an object or array, or would replace an array element.
    @discardableResult
    public static func insert(_ value: JSON, at pointer: String, into root: JSON) -> Bool {
        guard let tokens = JSONPointer.tokens(pointer), let last = tokens.last else { return false }
        var current = root
        for token in tokens.dropLast() {
            switch current.kind {
            case .object:
                if let next = current[token] {
                    current = next
                } else {
                    let created = JSON.object()
                    current.set(token, created)
                    current = created
                }
            case .array:
                guard let index = Int(token), let next = current[index] else { return false }
                current = next
            default:
                return false
            }
        }
        switch current.kind {
        case .object:
            current.set(last, value)
            return true
        case .array:
            guard last == "-" || Int(last) == current.count else { return false }
            current.append(value)
            return true
        default:
            return false
        }
    }
}
