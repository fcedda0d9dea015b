import CJansson

/// Why jansson could not parse a text, with where it stopped.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// 1-based line of the error (0 when jansson gives none).
    public let line: Int
    /// 1-based column, counted in UTF-8 characters.
    public let column: Int
    /// Byte offset from the start of the text.
    public let position: Int
    /// jansson's own description.
    public let text: String

    public init(line: Int, column: Int, position: Int, text: String) {
        self.line = line
        self.column = column
        self.position = position
        self.text = text
    }

    init(_ error: json_error_t) {
        var copy = error
        let text = withUnsafeBytes(of: &copy.text) { raw -> String in
            let bytes = raw.bindMemory(to: UInt8.self)
            let end = bytes.firstIndex(of: 0) ?? bytes.count
            return String(decoding: bytes[..<end], as: UTF8.self)
        }
        self.init(line: Int(error.line), column: Int(error.column), position: Int(error.position), text: text)
    }

    public var description: String { "line \(line), column \(column) (byte \(position)): \(text)" }
}
