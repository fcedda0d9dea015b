/// The server arguments a transcript records, for `nextpage replay` to
/// start the same server.
///
/// A replay starts its server in the transcript's folder, so a relative
/// path recorded as typed would name another file whenever the transcript
/// was written somewhere else than the working directory. Each relative
/// path is therefore rewritten to name the same file from the transcript's
/// folder, and a `./nextpage.json` the server read without `--config` is
/// named explicitly. Recorded in the working directory, the arguments stay
/// as typed (less `--transcript`).
public enum ReplayArguments {
    /// The options whose value is a path.
    static let pathOptions: Set<String> = ["--config", "--state", "--record-upstream", "--replay-upstream"]

    /// `arguments` without `--transcript F`, with relative paths rewritten
    /// for a server started in `transcriptFolder` (the transcript's folder,
    /// relative to `workingDirectory` or absolute). `workingDirectory` is
    /// absolute; `implicitConfig` is the config file read without
    /// `--config` (`nextpage.json`), if any.
    public static func forReplay(
        _ arguments: [String], transcriptFolder: String, workingDirectory: String, implicitConfig: String? = nil
    ) -> [String] {
        let here = components(workingDirectory)
        let folder = components(transcriptFolder, in: here)
        let moved = folder != here
        func rebased(_ path: String) -> String {
            guard moved, !path.isEmpty, !path.hasPrefix("/"), !path.contains("${") else { return path }
            return relative(from: folder, to: components(path, in: here))
        }

        var kept: [String] = []
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            index += 1
            if argument == "--transcript" {
                index += 1
                continue
            }
            if argument.hasPrefix("--transcript=") { continue }
            if pathOptions.contains(argument), index < arguments.endIndex {
                kept += [argument, rebased(arguments[index])]
                index += 1
                continue
            }
            if let equals = argument.firstIndex(of: "="), pathOptions.contains(String(argument[..<equals])) {
                kept.append(argument[...equals] + rebased(String(argument[argument.index(after: equals)...])))
                continue
            }
            // After `--`, nothing is an option.
            if argument == "--" {
                kept += arguments[(index - 1)...]
                break
            }
            kept.append(argument)
        }
        if moved, let implicitConfig {
            kept += ["--config", rebased(implicitConfig)]
        }
        return kept
    }

    /// The folders and name of `path` (relative paths from `base`), with
    /// `.` and `..` resolved by name.
    static func components(_ path: String, in base: [String] = []) -> [String] {
        var result = path.hasPrefix("/") ? [] : base
        for part in path.split(separator: "/") {
            switch part {
            case ".": continue
            case "..": _ = result.popLast()
            default: result.append(String(part))
            }
        }
        return result
    }

    /// The relative path from the folder `from` to `to` (both absolute, as components).
    static func relative(from: [String], to: [String]) -> String {
        var common = 0
        while common < from.count && common < to.count && from[common] == to[common] { common += 1 }
        let parts = Array(repeating: "..", count: from.count - common) + to[common...]
        return parts.isEmpty ? "." : parts.joined(separator: "/")
    }
}
