/// A token obtained at run time.
public struct IssuedToken: Sendable, Equatable {
    /// The token itself (a secret).
    public var token: String
    /// When it was obtained, in Unix seconds.
    public var issuedAt: Double
    /// When it stops being accepted, in Unix seconds; `nil`: not said (it is
    /// used until the server refuses it with 401).
    public var expiresAt: Double?

    public init(token: String, issuedAt: Double, expiresAt: Double? = nil) {
        self.token = token
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
    }

    /// Seconds before `expiresAt` at which the token is renewed: a tenth of
    /// its lifetime, at most a minute (a token of an hour is renewed a minute
    /// early, one of 30 seconds 3 seconds early).
    public static func renewalMargin(lifetime: Double) -> Double {
        min(60, max(0, lifetime) / 10)
    }

    /// Whether the token may still be sent at `now` without renewing it first.
    public func isFresh(at now: Double) -> Bool {
        guard let expiresAt else { return true }
        return now < expiresAt - Self.renewalMargin(lifetime: expiresAt - issuedAt)
    }

    /// Whether the token has not expired yet at `now` (it may be due for renewal).
    public func isValid(at now: Double) -> Bool {
        guard let expiresAt else { return true }
        return now < expiresAt
    }
}
