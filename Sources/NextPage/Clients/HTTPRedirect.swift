/// How an `http` source follows a redirect: the request to send next.
///
/// The method and body change as browsers and AsyncHTTPClient change them
/// (`303` turns any method but `HEAD` into `GET`; `301` and `302` turn a
/// `POST` into `GET`; `307` and `308` keep both). A redirect to another
/// origin (scheme, host, port) drops every header that carries credentials:
/// `Authorization`, `Cookie`, `Origin`, `Proxy-Authorization`, and any
/// header whose name looks secret (`X-Api-Key`, `X-Auth-Token`, ...; see
/// `HTTPRedactor.isSecretHeader`) but the one that carries the cursor, and
/// every header that carries the source's `auth` credential whatever its
/// name (`HTTPExchangeRequest.credentialHeaders`), so that a server cannot
/// send a source's secrets to a host of its choosing.
public enum HTTPRedirect {
    /// Statuses that redirect (with a `Location`).
    public static let statuses: Set<Int> = [301, 302, 303, 307, 308]

    /// The request that follows `request` after a `status` answer with
    /// `location`; `nil` when the answer is not a redirect to follow (not a
    /// redirect status, no `Location`, or not to http(s)).
    public static func next(after request: HTTPExchangeRequest, status: Int, location: String?) -> HTTPExchangeRequest? {
        guard statuses.contains(status), let location, !location.isEmpty else { return nil }
        let url = HTTPURL.encodeIllegal(HTTPURL.resolve(location, against: request.url))
        guard HTTPURL.isHTTP(url), let target = HTTPURL.origin(url) else { return nil }
        var next = request
        next.url = url
        let method = request.method.uppercased()
        if (status == 303 && method != "HEAD") || ((status == 301 || status == 302) && method == "POST") {
            next.method = "GET"
            next.body = nil
            next.headers.removeAll { ["content-length", "content-type"].contains($0.name.lowercased()) }
        }
        if target != HTTPURL.origin(request.url) {
            let cursorHeader = request.cursorHeader?.lowercased()
            next.headers = HTTPRedactor.withoutCredentials(next.headers, keeping: cursorHeader)
            next.headers.removeAll { $0.name.lowercased() == "origin" && cursorHeader != "origin" }
            next.headers.removeAll { request.credentialHeaders.contains($0.name.lowercased()) }
            next.credentialHeaders = []
        }
        return next
    }
}
