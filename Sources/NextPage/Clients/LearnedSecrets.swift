import NIOConcurrencyHelpers

/// Secrets that become known while the process runs: every token a
/// credential helper or a token endpoint hands out, every rotated refresh
/// token. `HTTPRedactor` scrubs them, with the secrets known from the
/// config, from every log line, error message, recording and transcript
/// written after they were added; a provider adds a token before anyone can
/// send it.
///
/// The process keeps one store (`process`), shared by every redactor, so
/// that a token is scrubbed wherever it might show, whichever collection it
/// belongs to. The newest `capacity` values are kept (old tokens of a
/// session that runs for days fall out first).
public final class LearnedSecrets: Sendable {
    /// The store of the process.
    public static let process = LearnedSecrets()
    /// Values kept (default 4096).
    public let capacity: Int

    /// Values shorter than this are not kept: scrubbing them would cut
    /// into ordinary text.
    static let shortest = 4

    private struct State {
        var values: [String] = []
        var known: Set<String> = []
        /// `values`, longest first, made when asked for after a change.
        var sorted: [String]? = []
    }

    private let state = NIOLockedValueBox(State())

    public init(capacity: Int = 4096) {
        self.capacity = capacity
    }

    /// Adds `value`, and its percent-encoded form when that differs (a
    /// refresh token travels form-encoded).
    public func add(_ value: String) {
        guard value.utf8.count >= Self.shortest else { return }
        let encoded = HTTPURL.encodeComponent(value)
        state.withLockedValue { state in
            for form in encoded == value ? [value] : [value, encoded] where state.known.insert(form).inserted {
                state.values.append(form)
                state.sorted = nil
            }
            if state.values.count > capacity {
                for old in state.values.prefix(state.values.count - capacity) { state.known.remove(old) }
                state.values.removeFirst(state.values.count - capacity)
            }
        }
    }

    /// Every value, longest first.
    public var values: [String] {
        state.withLockedValue { state in
            if let sorted = state.sorted { return sorted }
            let sorted = state.values.sorted { $0.count > $1.count }
            state.sorted = sorted
            return sorted
        }
    }

    /// Whether nothing was learned yet (the common case: no run-time credentials).
    public var isEmpty: Bool { state.withLockedValue { $0.values.isEmpty } }
}
