import Logging
import NIOConcurrencyHelpers

/// What the `http` sources of a process share: the clock they wait by,
/// the credentials of each `auth` (one token cache, and one renewal at a
/// time, for every collection with the same `auth`), what servers said of
/// their rate limits (per origin and credentials), and the client-side
/// pace of each origin (`rateLimit`).
///
/// The process has one (`shared`); tests make their own, with a clock
/// they control.
public final class HTTPSourceEnvironment: Sendable {
    /// The environment of the process, on the system's clock.
    public static let shared = HTTPSourceEnvironment()

    /// What sources wait by.
    public let clock: any UpstreamClock
    /// Where learned tokens go, for every redactor to scrub.
    public let secrets: LearnedSecrets

    private struct CredentialKey: Hashable {
        let auth: HTTPAuth
        /// Empty in a live session (every collection with the same `auth`
        /// shares); the collection when recording or replaying, so that each
        /// recording holds its own token exchange and replays alone.
        let scope: String
    }

    private let credentials = NIOLockedValueBox<[CredentialKey: any CredentialProvider]>([:])
    private let limits = NIOLockedValueBox<[String: ReportedRateLimit]>([:])
    private let spacings = NIOLockedValueBox<[String: RequestSpacing]>([:])

    public init(clock: any UpstreamClock = SystemUpstreamClock(), secrets: LearnedSecrets = .process) {
        self.clock = clock
        self.secrets = secrets
    }

    /// The provider of `auth`'s credentials: the same one for every call
    /// with the same `auth` and `scope`. Renewed tokens are waited for with
    /// `clock` (or this environment's).
    public func credentialProvider(for auth: HTTPAuth, scope: String = "", clock: (any UpstreamClock)? = nil, logger: Logger? = nil) -> any CredentialProvider {
        let key = CredentialKey(auth: auth, scope: scope)
        return credentials.withLockedValue { providers in
            if let existing = providers[key] { return existing }
            let made = Self.makeProvider(for: auth, clock: clock ?? self.clock, secrets: secrets, logger: logger)
            providers[key] = made
            return made
        }
    }

    /// A new provider for `auth` (not shared).
    public static func makeProvider(
        for auth: HTTPAuth, clock: any UpstreamClock, secrets: LearnedSecrets = .process, logger: Logger? = nil
    ) -> any CredentialProvider {
        switch auth {
        case .bearer, .basic, .header:
            return StaticCredentialProvider(auth)!
        case .command(let command):
            return RenewingCredentialProvider(
                issuer: CommandTokenIssuer(command: command, clock: clock, logger: logger),
                clock: clock, secrets: secrets, label: "command \(command.argv.first ?? "")", logger: logger)
        case .oauth2(let settings):
            return RenewingCredentialProvider(
                issuer: OAuth2TokenIssuer(settings: settings, clock: clock, secrets: secrets),
                clock: clock, secrets: secrets, label: "oauth2 \(HTTPRedactor().url(settings.tokenURL))", logger: logger)
        }
    }

    /// What servers said of the limit of `origin` for `credentials` (a key
    /// that tells credentials apart without holding them: see
    /// `HTTPPageClient.credentialKey`).
    public func reportedLimit(origin: String, credentials: String) -> ReportedRateLimit {
        let key = origin + " " + credentials
        return limits.withLockedValue { limits in
            if let existing = limits[key] { return existing }
            let made = ReportedRateLimit()
            limits[key] = made
            return made
        }
    }

    /// The pace of `origin`, kept to `rate` (and to every stricter rate
    /// asked for the same origin).
    public func spacing(origin: String, rate: RequestRate) -> RequestSpacing {
        spacings.withLockedValue { spacings in
            if let existing = spacings[origin] {
                existing.tighten(to: rate)
                return existing
            }
            let made = RequestSpacing(rate)
            spacings[origin] = made
            return made
        }
    }
}
