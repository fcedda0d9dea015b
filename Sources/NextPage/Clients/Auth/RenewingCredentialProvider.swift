import Logging
import NIOConcurrencyHelpers

/// A token obtained at run time, cached, renewed before it expires (see
/// `IssuedToken.renewalMargin`) and after the server refuses it with 401.
///
/// One renewal runs at a time: callers that need a token while one is being
/// obtained wait for that one (no stampede on the token endpoint), and a
/// 401 on a token that has already been replaced gets the replacement
/// without another grant. A caller whose task is cancelled stops waiting at
/// once; the renewal goes on for the others. When renewing before expiry
/// fails, the current token is used while it is still valid. Each token is
/// added to `secrets` before anyone gets it, so it never shows in a log, a
/// message or a recording.
public final class RenewingCredentialProvider<Issuer: TokenIssuer>: CredentialProvider {
    public let issuer: Issuer
    let clock: any UpstreamClock
    let secrets: LearnedSecrets
    let logger: Logger?
    /// What the `auth` is, for logs (`command ./token.sh`, `oauth2 https://...`).
    let label: String

    private struct State {
        var current: IssuedToken?
        var issuing = false
        var waiters: [Int: CheckedContinuation<IssuedToken, any Error>] = [:]
        var nextWaiter = 0
        var grants = 0
    }

    private let state = NIOLockedValueBox(State())

    /// What a caller that needs a token does next.
    private enum Next {
        case wait, start, cancelled
        case ready(IssuedToken)
    }

    public init(issuer: Issuer, clock: any UpstreamClock, secrets: LearnedSecrets = .process, label: String = "", logger: Logger? = nil) {
        self.issuer = issuer
        self.clock = clock
        self.secrets = secrets
        self.label = label
        self.logger = logger
    }

    /// How many tokens were obtained so far.
    public var grants: Int { state.withLockedValue { $0.grants } }

    public func credential(_ context: CredentialContext) async throws(CredentialError) -> Credential {
        let now = clock.now()
        if let current = state.withLockedValue({ $0.current }), current.isFresh(at: now) {
            return issuer.credential(carrying: current.token)
        }
        return issuer.credential(carrying: try await obtain(context).token)
    }

    public func renewed(after rejected: Credential, _ context: CredentialContext) async throws(CredentialError) -> Credential? {
        let now = clock.now()
        let replaced = state.withLockedValue { state -> IssuedToken? in
            guard let current = state.current else { return nil }
            if issuer.credential(carrying: current.token) == rejected {
                state.current = nil
                return nil
            }
            return current.isValid(at: now) ? current : nil
        }
        if let replaced { return issuer.credential(carrying: replaced.token) }
        logger?.info("credential refused (401), renewing", metadata: ["auth": "\(label)"])
        return issuer.credential(carrying: try await obtain(context).token)
    }

    /// A fresh token: the current one, the one being obtained, or a new one.
    private func obtain(_ context: CredentialContext) async throws(CredentialError) -> IssuedToken {
        let id = state.withLockedValue { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<IssuedToken, any Error>) in
                    let now = clock.now()
                    let next = state.withLockedValue { state -> Next in
                        // Checked under the lock the cancellation handler takes:
                        // a cancellation is either seen here or finds the waiter.
                        if Task.isCancelled { return .cancelled }
                        if let current = state.current, current.isFresh(at: now) { return .ready(current) }
                        state.waiters[id] = continuation
                        if state.issuing { return .wait }
                        state.issuing = true
                        return .start
                    }
                    switch next {
                    case .wait: break
                    case .cancelled: continuation.resume(throwing: CredentialError.cancelled)
                    case .ready(let token): continuation.resume(returning: token)
                    case .start: Task { await self.issue(context) }
                    }
                }
            } onCancel: {
                let waiter = state.withLockedValue { $0.waiters.removeValue(forKey: id) }
                waiter?.resume(throwing: CredentialError.cancelled)
            }
        } catch let error as CredentialError {
            throw error
        } catch {
            throw .cancelled
        }
    }

    /// Obtains a token and hands it (or the failure) to every waiter.
    private func issue(_ context: CredentialContext) async {
        var result: Result<IssuedToken, CredentialError>
        do {
            let token = try await issuer.issue(context)
            // Known as a secret before anyone can send, log or record it.
            secrets.add(token.token)
            secrets.add(issuer.credential(carrying: token.token).value)
            result = .success(token)
            logger?.debug("credential obtained", metadata: [
                "auth": "\(label)",
                "expiresIn": "\(token.expiresAt.map { HTTPPageClient.seconds(($0 - token.issuedAt).rounded()) } ?? "unknown")",
            ])
        } catch {
            result = .failure(error)
        }
        let now = clock.now()
        let waiters = state.withLockedValue { state -> [CheckedContinuation<IssuedToken, any Error>] in
            state.issuing = false
            switch result {
            case .success(let token):
                state.current = token
                state.grants += 1
            case .failure:
                // A renewal ahead of expiry that failed: the token in hand still works.
                if let current = state.current, current.isValid(at: now) { result = .success(current) }
            }
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(with: result.mapError { $0 as any Error }) }
    }
}
