import Jansson
import Logging
import Subprocess
import SystemPackage

/// Runs a credential helper (`auth` of type `command`), as git runs its
/// credential helpers and kubectl its exec plugins: the argv without a
/// shell, stdin `/dev/null`, the server's environment; the process group is
/// killed after `timeout` seconds or when the task is cancelled.
///
/// Its stdout is the token, without the whitespace and final newline around
/// it (as `gh auth token` prints it), or a JSON object
/// `{"token", "expiresAt"?: Unix seconds or RFC 3339, "expiresIn"?: seconds}`;
/// kubectl's `ExecCredential` (`{"status": {"token", "expirationTimestamp"}}`)
/// is read too. A token without an expiry is used until the server refuses
/// it with 401. Faults, each an error naming the helper: a non-zero exit
/// (with the end of stderr), nothing on stdout, a token with a line break or
/// another control character inside, JSON without a token, a timeout
/// (retryable). What the helper printed is never shown.
public struct CommandTokenIssuer: TokenIssuer {
    public let command: CredentialCommand
    let clock: any UpstreamClock
    let logger: Logger?

    /// The most a helper may print on stdout.
    public static let maxOutputBytes = 64 << 10

    public init(command: CredentialCommand, clock: any UpstreamClock, logger: Logger? = nil) {
        self.command = command
        self.clock = clock
        self.logger = logger
    }

    public func credential(carrying token: String) -> Credential {
        Credential(name: "Authorization", value: command.scheme.isEmpty ? token : "\(command.scheme) \(token)")
    }

    /// `source.auth: credential helper './token.sh'`.
    var name: String { "source.auth: credential helper '\(command.argv.first ?? "")'" }

    public func issue(_ context: CredentialContext) async throws(CredentialError) -> IssuedToken {
        guard let program = command.argv.first, !program.isEmpty else {
            throw .failed(message: "\(name): no program (argv is empty)", retryable: false)
        }
        let invocation = CommandClient.Invocation(
            program: program,
            executable: program.contains("/") ? .path(FilePath(program)) : .name(program),
            arguments: Array(command.argv.dropFirst()),
            environment: .inherit,
            maxBodyBytes: Self.maxOutputBytes)
        let outcome = await CommandClient.run(invocation, timeout: command.timeout, logger: logger, collection: "")
        if Task.isCancelled { throw .cancelled }
        switch outcome {
        case .finished(.exited(0), body: let body, stderr: _):
            return try read(body, now: clock.now())
        case .finished(let status, body: _, stderr: let stderr):
            throw .failed(message: "\(name) \(CommandClient.describe(status))\(CommandClient.tail(stderr))", retryable: false)
        case .timedOut(let stderr):
            throw .failed(
                message: "\(name) gave no token within \(HTTPPageClient.seconds(command.timeout)) s (timeout) and was killed\(CommandClient.tail(stderr))",
                retryable: true)
        case .failed(let error, stderr: let stderr):
            throw .failed(message: "\(name) \(CommandClient.describe(error, program: program))\(CommandClient.tail(stderr))", retryable: false)
        }
    }

    /// The token a helper printed.
    func read(_ output: [UInt8], now: Double) throws(CredentialError) -> IssuedToken {
        func fail(_ why: String) -> CredentialError { .failed(message: "\(name) \(why)", retryable: false) }
        var text = Substring(String(decoding: output, as: UTF8.self))
        while let first = text.first, first.isWhitespace { text = text.dropFirst() }
        while let last = text.last, last.isWhitespace { text = text.dropLast() }
        guard !text.isEmpty else { throw fail("printed nothing on stdout (expected a token)") }
        guard text.first == "{" else { return try checked(String(text), issuedAt: now, expiresAt: nil, fail) }

        let json: JSON
        do {
            json = try JSON.parse(Array(text.utf8))
        } catch {
            throw fail("printed something that is neither a token nor JSON (line \(error.line), column \(error.column))")
        }
        // kubectl's ExecCredential keeps them in "status".
        let object = json["status"].flatMap { $0.kind == .object ? $0 : nil } ?? json
        guard let token = object["token"]?.string else {
            throw fail("printed JSON without a \"token\" string")
        }
        var expiresAt: Double?
        if let value = object["expiresAt"] ?? object["expirationTimestamp"] {
            if let seconds = value.number {
                expiresAt = seconds
            } else if let text = value.string, let date = Timestamp.parse(text) {
                expiresAt = date
            } else {
                throw fail("printed an \"expiresAt\" that is neither Unix seconds nor an RFC 3339 time")
            }
        } else if let value = object["expiresIn"] {
            guard let seconds = value.number, seconds >= 0 else {
                throw fail("printed an \"expiresIn\" that is not a number of seconds")
            }
            expiresAt = now + seconds
        }
        return try checked(token, issuedAt: now, expiresAt: expiresAt, fail)
    }

    private func checked(
        _ token: String, issuedAt: Double, expiresAt: Double?, _ fail: (String) -> CredentialError
    ) throws(CredentialError) -> IssuedToken {
        guard !token.isEmpty else { throw fail("printed an empty token") }
        if token.unicodeScalars.contains(where: { $0 == "\n" || $0 == "\r" }) {
            throw fail("printed a token with a line break inside (a token is one line)")
        }
        if token.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw fail("printed a token with a control character inside")
        }
        return IssuedToken(token: token, issuedAt: issuedAt, expiresAt: expiresAt)
    }
}
