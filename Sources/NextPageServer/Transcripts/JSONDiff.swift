import Jansson

/// The differences between an expected and an actual JSON value, as lines
/// naming the JSON Pointer of each place that differs.
enum JSONDiff {
    /// At most this many differences are listed per message.
    static let limit = 12

    /// Lines like `/result/count: expected 25, got 26`; empty when equal.
    /// Places matching one of `ignoring` (pointer tokens, `*` matching any
    /// one token) are not compared.
    static func differences(_ expected: JSON, _ actual: JSON, ignoring: [[String]] = []) -> [String] {
        var lines: [String] = []
        walk(expected, actual, path: [], ignoring: ignoring, into: &lines)
        if lines.count > limit {
            let more = lines.count - limit
            lines = Array(lines.prefix(limit)) + ["… and \(more) more"]
        }
        return lines
    }

    private static func walk(_ expected: JSON, _ actual: JSON, path: [String], ignoring: [[String]], into lines: inout [String]) {
        if isIgnored(path, ignoring) || lines.count > limit { return }
        switch (expected.kind, actual.kind) {
        case (.object, .object):
            let actualMembers = actual.members
            let actualKeys = Set(actualMembers.map(\.key))
            var expectedKeys: Set<String> = []
            for (key, value) in expected.members {
                expectedKeys.insert(key)
                let place = path + [key]
                if isIgnored(place, ignoring) { continue }
                if let other = actual[key], actualKeys.contains(key) {
                    walk(value, other, path: place, ignoring: ignoring, into: &lines)
                } else {
                    lines.append("\(pointer(place)): missing (expected \(show(value)))")
                }
            }
            for (key, value) in actualMembers where !expectedKeys.contains(key) {
                let place = path + [key]
                if isIgnored(place, ignoring) { continue }
                lines.append("\(pointer(place)): not expected (got \(show(value)))")
            }
        case (.array, .array):
            let left = expected.elements
            let right = actual.elements
            for index in 0..<min(left.count, right.count) {
                walk(left[index], right[index], path: path + [String(index)], ignoring: ignoring, into: &lines)
            }
            if left.count != right.count {
                lines.append("\(pointer(path)): expected \(left.count) elements, got \(right.count)")
            }
        default:
            if !expected.isEqual(to: actual) {
                lines.append("\(pointer(path)): expected \(show(expected)), got \(show(actual))")
            }
        }
    }

    /// Whether `path` is one of the ignored places (or inside one).
    static func isIgnored(_ path: [String], _ ignoring: [[String]]) -> Bool {
        ignoring.contains { pattern in
            pattern.count <= path.count && zip(pattern, path).allSatisfy { $0 == "*" || $0 == $1 }
        }
    }

    /// The RFC 6901 pointer of a path (`(whole message)` for the root).
    static func pointer(_ path: [String]) -> String {
        guard !path.isEmpty else { return "(whole message)" }
        return path.map { "/" + $0.replacing("~", with: "~0").replacing("/", with: "~1") }.joined()
    }

    /// A value for a message line: compact JSON, shortened.
    static func show(_ value: JSON) -> String {
        let text = value.compactString
        return text.count > 160 ? String(text.prefix(160)) + "…" : text
    }
}
