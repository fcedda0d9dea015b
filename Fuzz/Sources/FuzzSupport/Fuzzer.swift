#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CLibFuzzer

/// The entry point of a libFuzzer target.
///
/// Each target's `main.swift` defines its `LLVMFuzzerTestOneInput` with
/// `@_cdecl` and hands it to `Fuzzer.main`, which runs libFuzzer's driver
/// (`LLVMFuzzerRunDriver`) with the process's arguments. A target keeps its
/// own `main` rather than libFuzzer's because SwiftPM links every executable
/// target against the `main` of its module.
public enum Fuzzer {
    /// The signature of `LLVMFuzzerTestOneInput`.
    public typealias Target = @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32

    /// Runs libFuzzer on `target` with the command line's options; never returns.
    public static func main(_ target: Target) -> Never {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, target))
    }

    /// The input as a buffer (libFuzzer passes a null pointer for an empty input).
    public static func bytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
        guard let data, size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: size))
    }
}

/// Checks a property of the code under test. A failure prints `message` and
/// aborts, which libFuzzer reports as a crash and saves the input for.
///
/// (Swift's `precondition` would trap without its message in an optimised build.)
public func fuzzCheck(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
    file: StaticString = #fileID, line: UInt = #line
) {
    guard !condition() else { return }
    fuzzLog("fuzz check failed at \(file):\(line): \(message())")
    abort()
}

/// Writes a line to stderr (libFuzzer's output; stdout is left alone).
public func fuzzLog(_ line: String) {
    var text = line + "\n"
    text.withUTF8 { buffer in
        var offset = 0
        while offset < buffer.count {
            let written = write(2, buffer.baseAddress! + offset, buffer.count - offset)
            if written <= 0 { return }
            offset += written
        }
    }
}

/// Reads choices from the front of a fuzzer's input; past its end every
/// read gives zeros, so any input is a valid one.
public struct FuzzInput {
    private let bytes: [UInt8]
    private var position = 0

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The next byte (0 past the end).
    public mutating func byte() -> UInt8 {
        guard position < bytes.count else { return 0 }
        defer { position += 1 }
        return bytes[position]
    }

    /// A number in `0..<count`, read from one byte.
    public mutating func below(_ count: Int) -> Int {
        Int(byte()) % max(1, count)
    }

    /// One of `values`, chosen by one byte.
    public mutating func pick<T>(_ values: [T]) -> T {
        values[below(values.count)]
    }

    /// Up to `count` bytes.
    public mutating func take(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, position + max(0, count))
        defer { position = end }
        return Array(bytes[position..<end])
    }

    /// A length-prefixed (one byte) piece of the input.
    public mutating func chunk() -> [UInt8] {
        take(Int(byte()))
    }

    /// The bytes not read yet; reading stops.
    public mutating func rest() -> [UInt8] {
        defer { position = bytes.count }
        return position < bytes.count ? Array(bytes[position...]) : []
    }
}
