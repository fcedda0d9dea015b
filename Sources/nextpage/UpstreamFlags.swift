import ArgumentParser
import NextPageServer

/// The `--record-upstream DIR` / `--replay-upstream DIR` pair that `serve`
/// and the shell commands share.
protocol UpstreamFlags {
    var recordUpstream: String? { get }
    var replayUpstream: String? { get }
}

extension UpstreamFlags {
    /// Refuses both at once, a replay directory that does not exist, and a
    /// record directory that cannot be created (it is created here).
    func validateUpstream() throws {
        if recordUpstream != nil && replayUpstream != nil {
            throw ValidationError("--record-upstream and --replay-upstream cannot be used together")
        }
        if let directory = recordUpstream {
            guard !directory.isEmpty, makeDirectories(directory) else {
                throw ValidationError("--record-upstream: cannot create the directory '\(directory)'")
            }
        }
        if let directory = replayUpstream {
            guard !directory.isEmpty, isDirectory(directory) else {
                throw ValidationError("--replay-upstream: '\(directory)' is not a directory")
            }
        }
    }

    /// How `http` sources reach upstream, from the two flags.
    var upstream: UpstreamMode {
        if let directory = recordUpstream { return .record(directory: directory) }
        if let directory = replayUpstream { return .replay(directory: directory) }
        return .live
    }
}
