import Foundation
import XCTest

/// A JSON value that keeps the type the wire used (true is not 1, "1" is not 1),
/// so replies can be compared with literal expected JSON.
enum JSONValue: Equatable, Sendable, CustomStringConvertible {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    struct ParseError: Error, CustomStringConvertible {
        let text: String
        let reason: String
        var description: String { "not JSON (\(reason)): \(text.prefix(300))" }
    }

    /// Parses JSON text with Foundation's JSONSerialization.
    static func parse(_ data: Data) throws -> JSONValue {
        let any: Any
        do {
            any = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            throw ParseError(text: String(decoding: data, as: UTF8.self), reason: "\(error)")
        }
        return try JSONValue.from(foundation: any)
    }

    static func parse(_ text: String) throws -> JSONValue { try parse(Data(text.utf8)) }

    /// Converts what JSONSerialization made.
    static func from(foundation any: Any) throws -> JSONValue {
        switch any {
        case is NSNull:
            return .null
        case let text as String:
            return .string(text)
        case let number as NSNumber:
            // JSONSerialization makes booleans __NSCFBoolean (objCType "c"), reals "d".
            let type = String(cString: number.objCType)
            if type == "c" || type == "B" { return .bool(number.boolValue) }
            if type == "d" || type == "f" { return .double(number.doubleValue) }
            return .int(number.int64Value)
        case let array as [Any]:
            return .array(try array.map { try JSONValue.from(foundation: $0) })
        case let object as [String: Any]:
            var members: [String: JSONValue] = [:]
            for (key, value) in object { members[key] = try JSONValue.from(foundation: value) }
            return .object(members)
        default:
            throw ParseError(text: "\(any)", reason: "unexpected Foundation type \(type(of: any))")
        }
    }

    subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    subscript(index: Int) -> JSONValue? {
        if case .array(let elements) = self, elements.indices.contains(index) { return elements[index] }
        return nil
    }

    var stringValue: String? { if case .string(let s) = self { return s }; return nil }
    var intValue: Int64? { if case .int(let i) = self { return i }; return nil }
    var boolValue: Bool? { if case .bool(let b) = self { return b }; return nil }
    var arrayValue: [JSONValue]? { if case .array(let a) = self { return a }; return nil }
    var objectValue: [String: JSONValue]? { if case .object(let o) = self { return o }; return nil }
    var isNull: Bool { self == .null }

    /// Compact JSON with sorted keys (stable for messages and comparisons).
    var description: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .double(let d): return String(d)
        case .string(let s): return JSONValue.quote(s)
        case .array(let a): return "[" + a.map(\.description).joined(separator: ",") + "]"
        case .object(let o):
            return "{" + o.keys.sorted().map { JSONValue.quote($0) + ":" + o[$0]!.description }.joined(separator: ",") + "}"
        }
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}

/// Parses a literal in a test; a broken literal is a bug in the test.
func J(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> JSONValue {
    do {
        return try JSONValue.parse(text)
    } catch {
        XCTFail("bad JSON literal in test: \(error)", file: file, line: line)
        return .null
    }
}

/// Matching a reply against an expected pattern: literal JSON, where a few
/// strings stand for "any value of this kind" (for values docs/methods.md leaves open,
/// such as error message texts):
///   "<any>", "<string>", "<int>", "<bool>", "<number>",
///   "<contains:TEXT>" (a string containing TEXT).
/// Objects must have exactly the same keys, except that a pattern key ending in
/// "?" (`"data?": "<any>"`) may be absent; arrays the same length and order.
enum JSONMatch {
    /// `nil` when `actual` matches, else where and how it differs.
    static func mismatch(_ actual: JSONValue, _ pattern: JSONValue, path: String = "") -> String? {
        if case .string(let p) = pattern, p.hasPrefix("<"), p.hasSuffix(">") {
            switch p {
            case "<any>": return nil
            case "<string>": return actual.stringValue != nil ? nil : "\(where_(path)): expected a string, got \(actual)"
            case "<int>": return actual.intValue != nil ? nil : "\(where_(path)): expected an integer, got \(actual)"
            case "<bool>": return actual.boolValue != nil ? nil : "\(where_(path)): expected a boolean, got \(actual)"
            case "<number>":
                switch actual {
                case .int, .double: return nil
                default: return "\(where_(path)): expected a number, got \(actual)"
                }
            default:
                if p.hasPrefix("<contains:") {
                    let needle = String(p.dropFirst("<contains:".count).dropLast())
                    guard let s = actual.stringValue, s.contains(needle) else {
                        return "\(where_(path)): expected a string containing \(JSONValue.quote(needle)), got \(actual)"
                    }
                    return nil
                }
            }
        }
        switch (actual, pattern) {
        case (.object(let a), .object(let p)):
            // A pattern key ending in "?" is optional: when present it must match.
            let optional = Set(p.keys.filter { $0.hasSuffix("?") }.map { String($0.dropLast()) })
            let required = Set(p.keys.filter { !$0.hasSuffix("?") })
            let missing = required.subtracting(a.keys).sorted()
            let extra = Set(a.keys).subtracting(required).subtracting(optional).sorted()
            if !missing.isEmpty || !extra.isEmpty {
                return "\(where_(path)): keys differ (missing \(missing), unexpected \(extra))"
            }
            for key in p.keys.sorted() {
                let name = optional.contains(String(key.dropLast())) && key.hasSuffix("?") ? String(key.dropLast()) : key
                guard let value = a[name] else { continue }
                if let m = mismatch(value, p[key]!, path: path + "/" + name) { return m }
            }
            return nil
        case (.array(let a), .array(let p)):
            if a.count != p.count { return "\(where_(path)): expected \(p.count) elements, got \(a.count)" }
            for (i, (x, y)) in zip(a, p).enumerated() {
                if let m = mismatch(x, y, path: path + "/\(i)") { return m }
            }
            return nil
        default:
            return actual == pattern ? nil : "\(where_(path)): expected \(pattern), got \(actual)"
        }
    }

    /// Matches each pattern with a distinct element, in any order (batch replies).
    static func unorderedMismatch(_ actual: [JSONValue], _ patterns: [JSONValue]) -> String? {
        guard actual.count == patterns.count else {
            return "expected \(patterns.count) elements, got \(actual.count)"
        }
        var used = Array(repeating: false, count: actual.count)
        func assign(_ i: Int) -> Bool {
            if i == patterns.count { return true }
            for j in actual.indices where !used[j] && mismatch(actual[j], patterns[i]) == nil {
                used[j] = true
                if assign(i + 1) { return true }
                used[j] = false
            }
            return false
        }
        return assign(0) ? nil : "no one-to-one match between the elements and the expected ones"
    }

    private static func where_(_ path: String) -> String { path.isEmpty ? "at the top" : "at \(path)" }
}

/// A failed expectation that stops the test (so a wrong reply never turns into
/// a 10-second wait for a reply that will not come).
struct ExpectationFailure: Error, CustomStringConvertible {
    let description: String
}

/// Asserts a match; throws (stopping the test) when it does not.
func expectMatch(_ actual: JSONValue, _ pattern: JSONValue, _ what: String = "", file: StaticString = #filePath, line: UInt = #line) throws {
    if let m = JSONMatch.mismatch(actual, pattern) {
        let text = "\(what.isEmpty ? "" : what + ": ")\(m)\n  actual:   \(actual)\n  expected: \(pattern)"
        XCTFail(text, file: file, line: line)
        throw ExpectationFailure(description: text)
    }
}

func expectMatch(_ actual: JSONValue, _ pattern: String, _ what: String = "", file: StaticString = #filePath, line: UInt = #line) throws {
    try expectMatch(actual, J(pattern, file: file, line: line), what, file: file, line: line)
}

/// Asserts an unordered match of an array (a batch reply).
func expectUnorderedMatch(_ actual: JSONValue, _ patterns: [String], _ what: String = "", file: StaticString = #filePath, line: UInt = #line) throws {
    let expected = patterns.map { J($0, file: file, line: line) }
    guard let elements = actual.arrayValue else {
        let text = "\(what.isEmpty ? "" : what + ": ")expected an array, got \(actual)"
        XCTFail(text, file: file, line: line)
        throw ExpectationFailure(description: text)
    }
    if let m = JSONMatch.unorderedMismatch(elements, expected) {
        let text = "\(what.isEmpty ? "" : what + ": ")\(m)\n  actual:   \(actual)\n  expected (any order): \(JSONValue.array(expected))"
        XCTFail(text, file: file, line: line)
        throw ExpectationFailure(description: text)
    }
}

/// A result reply with a number id, as JSON text.
func rpcResult(_ id: Int, _ result: String) -> String { #"{"jsonrpc":"2.0","id":\#(id),"result":\#(result)}"# }

/// An error reply with a number id, as JSON text.
func rpcError(_ id: Int, _ error: String) -> String { #"{"jsonrpc":"2.0","id":\#(id),"error":\#(error)}"# }
