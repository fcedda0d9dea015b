#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Jansson
import Logging

/// Records every exchange of another transport (`--record-upstream DIR`):
/// each answer, whatever its status, is appended to a JSON Lines file as
///
///     {"request": {"method", "url", "headers", "body"}, "response": {"status", "headers", "body"}}
///
/// where a body is its JSON value when it is JSON (as the server wrote it,
/// compacted; `null` for none) and a string otherwise, and headers are an object (repeated headers joined with
/// ", "); the request's headers are what it sent (a cursor sent in a header,
/// `paging.header`, is how replay tells its requests apart); `response.url` is added when a redirect made the answering URL
/// differ from the request's. Secret headers, secret query values and the source's known secret
/// values are replaced with `[redacted]` (see `HTTPRedactor`), as are the
/// headers that carry the source's `auth` credential. A form-encoded body
/// (a token request) is recorded as its text with the values of its
/// secret-looking items replaced (`client_secret`, `refresh_token`), and the
/// answer to a token request with its tokens replaced by name
/// (`access_token`, `refresh_token`, ...): they are not known secrets yet
/// when the line is written. Each line is
/// written with one `write` to a file opened with `O_APPEND`, so concurrent
/// writers never interleave lines. Attempts that got no answer are not recorded.
public struct RecordingTransport: HTTPTransport {
    /// The transport whose exchanges are recorded.
    public let inner: any HTTPTransport
    /// The JSON Lines file appended to.
    public let file: String
    public let redactor: HTTPRedactor
    let logger: Logger?

    public init(wrapping inner: any HTTPTransport, file: String, redactor: HTTPRedactor, logger: Logger? = nil) {
        self.inner = inner
        self.file = file
        self.redactor = redactor
        self.logger = logger
    }

    /// The recording of a collection in `directory`: `<collection>.jsonl`,
    /// the name percent-encoded outside `A-Z a-z 0-9 - _` as page files are,
    /// so every collection name stays inside `directory`.
    public static func file(directory: String, collection: String) -> String {
        let name = FileClient.encode(cursor: collection) + ".jsonl"
        return directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    public func perform(_ request: HTTPExchangeRequest, timeout: Double, maxBodyBytes: Int) async throws(HTTPTransportError) -> HTTPExchangeResponse {
        let response = try await inner.perform(request, timeout: timeout, maxBodyBytes: maxBodyBytes)
        let line = redactor.scrub(json: record(request, response).bytes) + [UInt8(ascii: "\n")]
        let path = file
        // The file may be a FIFO (a tee to another program), whose writes can wait.
        let failure = await onOwnThread { Self.append(line, to: path) }
        if let failure {
            logger?.error("cannot record upstream exchange", metadata: [
                "file": "\(path)", "error": "\(String(cString: strerror(failure.code)))",
            ])
        }
        return response
    }

    /// One recorded exchange, as compact JSON.
    func record(_ request: HTTPExchangeRequest, _ response: HTTPExchangeResponse) -> RawJSON {
        .object([
            "request": .object([
                "method": .string(request.method),
                "url": .string(redactor.url(request.url)),
                "headers": Self.headerObject(redactor.headers(request.headers, credentialHeaders: request.credentialHeaders)),
                "body": Self.requestBodyValue(request, redactor: redactor),
            ]),
            "response": .object([
                "status": .integer(response.status),
                "url": response.url == request.url ? nil : .string(redactor.url(response.url)),
                "headers": Self.headerObject(redactor.headers(response.headers)),
                "body": request.isCredentialExchange
                    ? Self.bodyValue(redactor.credentialAnswer(response.body) ?? redactor.scrub(response.body))
                    : Self.bodyValue(response.body),
            ]),
        ])
    }

    /// A request body as recorded: a form-encoded one as its redacted text
    /// (`HTTPRedactor.form`), any other as `bodyValue`.
    static func requestBodyValue(_ request: HTTPExchangeRequest, redactor: HTTPRedactor) -> RawJSON {
        guard let body = request.body else { return .null }
        if isForm(request) { return .string(redactor.form(String(decoding: body, as: UTF8.self))) }
        return bodyValue(body)
    }

    /// Whether the request's body is form-encoded (a token request).
    static func isForm(_ request: HTTPExchangeRequest) -> Bool {
        request.isCredentialExchange
            || (request.headerValue("Content-Type")?.lowercased().hasPrefix("application/x-www-form-urlencoded") ?? false)
    }

    /// A body as recorded: its JSON value, written as the server wrote it
    /// (whitespace outside strings removed, numbers and escapes untouched, so
    /// `1.10` stays `1.10`), or a string when it is not JSON (or is a JSON
    /// string, kept as its text so replay gives the same bytes).
    static func bodyValue(_ bytes: [UInt8]) -> RawJSON {
        if let json = try? JSON.parse(bytes), json.kind != .string {
            return bytes.withUnsafeBufferPointer { JSONScanner.compact($0) }.map { RawJSON(trusted: $0) } ?? RawJSON(json)
        }
        return .string(String(decoding: bytes, as: UTF8.self))
    }

    /// Headers as an object in first-seen order; repeated names joined with ", ".
    static func headerObject(_ headers: [(name: String, value: String)]) -> RawJSON {
        var order: [String] = []
        var values: [String: (name: String, values: [String])] = [:]
        for header in headers {
            let key = header.name.lowercased()
            if values[key] == nil {
                order.append(key)
                values[key] = (header.name, [])
            }
            values[key]!.values.append(header.value)
        }
        return .object(order.map { key in
            let entry = values[key]!
            return (entry.name, RawJSON.string(entry.values.joined(separator: ", ")))
        })
    }

    /// Appends `line` with one `write` (`O_APPEND`); returns the error, if any.
    static func append(_ line: [UInt8], to path: String) -> SystemError? {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return SystemError(code: errno) }
        defer { close(fd) }
        var written = 0
        while written < line.count {
            let n = line.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 {
                if errno == EINTR { continue }
                return SystemError(code: errno)
            }
            written += n
        }
        return nil
    }
}
