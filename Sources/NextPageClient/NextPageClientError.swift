/// Trouble with the server process rather than an error reply (which is an `RPCError`).
public enum NextPageClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No executable at the path given, or no `nextpage` on `PATH`.
    case executableNotFound(String)
    /// The program wrote something a nextpage server never writes, or did not answer `initialize`.
    case notNextPage(String)
    /// The server ended (or closed its output): its exit status, or the signal that killed it, and
    /// its last lines on stderr when they were captured.
    case serverExited(status: Int32?, signal: Int32?, stderr: String)
    /// No reply within the call's timeout; the client sent `$/cancelRequest` for it.
    case timedOut(method: String, after: Duration)
    /// The client was closed.
    case closed
    /// A reply lacked a field its method always has.
    case unexpectedReply(method: String, field: String)

    public var description: String {
        switch self {
        case .executableNotFound(let what): return "nextpage executable not found: \(what)"
        case .notNextPage(let what): return "not a nextpage server: \(what)"
        case .serverExited(let status, let signal, let stderr):
            let what = signal.map { "nextpage was killed by signal \($0)" }
                ?? status.map { "nextpage exited with status \($0)" } ?? "nextpage closed its output"
            return stderr.isEmpty ? what : "\(what); its last words on stderr:\n\(stderr)"
        case .timedOut(let method, let after): return "\(method): no reply within \(after); the request was cancelled"
        case .closed: return "the client is closed"
        case .unexpectedReply(let method, let field): return "\(method): the reply has no valid \(field)"
        }
    }
}
