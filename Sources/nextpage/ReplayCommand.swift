import ArgumentParser
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NextPageServer

struct Replay: ParsableCommand {
    /// "1 message", "2 messages".
    static func count(_ n: Int, _ noun: String) -> String { n == 1 ? "1 \(noun)" : "\(n) \(noun)s" }

    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Replay transcripts against fresh servers and show every difference.",
        discussion: """
            Each transcript runs against a fresh `nextpage` (this executable) started in the transcript's \
            folder with the transcript's `args`. In records are sent once the out records above them \
            arrived; out records are matched by id (notifications in order). See \
            `nextpage schema transcript` for the record kinds. Exit status: 0 every transcript passed, \
            1 any difference (or a transcript that cannot be read).
            """)

    @Argument(help: "Transcript files (NDJSON).")
    var transcripts: [String]

    @Flag(help: "Rewrite each transcript's out records (and exit status) with what the server sent.")
    var update = false

    @Option(help: "Seconds to wait for an expected message, or for a server to end, before calling it missing.")
    var timeout: Double = 10

    func validate() throws {
        guard !transcripts.isEmpty else { throw ValidationError("name at least one transcript") }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
    }

    func run() throws {
        var options = ReplayOptions(executable: currentExecutable())
        options.timeout = timeout
        options.update = update
        var failed = 0
        for path in transcripts {
            let transcript: Transcript
            do {
                transcript = try Transcript.read(path)
            } catch {
                print("FAIL \(path)\n  \(error.reason)")
                failed += 1
                continue
            }
            let result = TranscriptReplayer.replay(transcript, options: options)
            if update, let text = result.updatedText {
                let original = transcript.lines.map(\.text).joined(separator: "\n") + "\n"
                if text != original {
                    do {
                        try replaceFile(path, with: text)
                        print("UPDATED \(path)")
                    } catch {
                        print("FAIL \(path)\n  cannot rewrite it: \(error)")
                        failed += 1
                    }
                } else {
                    print("ok   \(path) (\(Self.count(result.messages, "message")), unchanged)")
                }
                continue
            }
            if result.passed {
                print("ok   \(path) (\(Self.count(result.messages, "message")))")
            } else {
                failed += 1
                print("FAIL \(path)")
                for line in result.differences { print("  " + line) }
                if !result.stderrTail.isEmpty {
                    print("  server stderr (last lines):")
                    for line in result.stderrTail { print("    " + line) }
                }
            }
        }
        let total = transcripts.count
        print("replay: \(total - failed) passed, \(failed) failed")
        if failed > 0 { throw ExitCode(1) }
    }
}

/// This process's executable (`/proc/self/exe` on Linux), so a replay runs the same build.
func currentExecutable() -> String {
    var buffer = [CChar](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    if n > 0 { return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) }
    return CommandLine.arguments[0]
}

struct RewriteError: Error, CustomStringConvertible {
    let description: String
}

/// Replaces a file's content atomically (a temporary file in the same folder, then rename).
func replaceFile(_ path: String, with text: String) throws {
    let temporary = path + ".update-\(getpid())"
    guard let file = fopen(temporary, "wb") else { throw RewriteError(description: String(cString: strerror(errno))) }
    let bytes = Array(text.utf8)
    let written = fwrite(bytes, 1, bytes.count, file)
    let closed = fclose(file)
    guard written == bytes.count, closed == 0, rename(temporary, path) == 0 else {
        let reason = String(cString: strerror(errno))
        unlink(temporary)
        throw RewriteError(description: reason)
    }
}
