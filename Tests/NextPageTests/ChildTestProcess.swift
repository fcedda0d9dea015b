import Foundation

/// Runs one test of this test binary in a child copy of it, with
/// `variable=1` in its environment (the test skips itself without it), so a
/// trap or a process-wide measurement stays in the child.
enum ChildTestProcess {
    struct Outcome {
        /// Whether the child exited (rather than died of a signal).
        let exited: Bool
        /// Its exit status, or the signal that ended it.
        let status: Int32
        /// What it wrote on stdout and stderr.
        let output: String
    }

    static func run(_ test: String, variable: String) throws -> Outcome {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [test]
        var environment = ProcessInfo.processInfo.environment
        environment[variable] = "1"
        environment["SWIFT_BACKTRACE"] = "enable=no"   // a crash reports its message, without a slow backtrace
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(exited: process.terminationReason == .exit, status: process.terminationStatus,
                       output: String(decoding: data, as: UTF8.self))
    }
}
