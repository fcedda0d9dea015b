/// The valid name nearest to a misspelled one, for "did you mean" hints.
///
/// A name that differs only in case, or in `_` and `-` (`pagesize`,
/// `page_size` for `pageSize`), is the nearest; otherwise the name at the
/// smallest edit distance (Damerau–Levenshtein, adjacent transpositions
/// counting as one edit, case ignored), when that distance is at most a
/// third of the longer name's length (at least 1, at most 3), so that a
/// short or wholly different word gets no suggestion. Ties go to the name
/// listed first. Failing those, the one name that begins with the word, or
/// that the word begins with (at least 4 letters each).
public enum NearestName {
    /// The name in `names` nearest to `word`, or `nil` when none is near
    /// enough (or `word` is itself one of `names`).
    public static func suggestion(for word: String, among names: [String]) -> String? {
        guard !word.isEmpty, !names.contains(word) else { return nil }
        let folded = fold(word)
        if let same = names.first(where: { fold($0) == folded }) { return same }
        let lowered = Array(word.lowercased().unicodeScalars)
        var best: (name: String, distance: Int)?
        for name in names {
            let candidate = Array(name.lowercased().unicodeScalars)
            let limit = min(3, max(1, max(candidate.count, lowered.count) / 3))
            let distance = Self.distance(lowered, candidate)
            guard distance <= limit else { continue }
            if best == nil || distance < best!.distance { best = (name, distance) }
        }
        if let best { return best.name }
        // A name cut short or run on (`refresh` for `refreshToken`,
        // `timeoutSeconds` for `timeout`), when only one fits.
        guard lowered.count >= 4 else { return nil }
        let word = word.lowercased()
        let fitting = names.filter { name in
            let name = name.lowercased()
            return name.count >= 4 && (name.hasPrefix(word) || word.hasPrefix(name))
        }
        return fitting.count == 1 ? fitting[0] : nil
    }

    /// The edit distance of `a` and `b`: insertions, deletions,
    /// substitutions and transpositions of adjacent elements, each one edit
    /// (the optimal string alignment distance).
    public static func distance<Element: Equatable>(_ a: [Element], _ b: [Element]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        // Three rows of the table: two back (for transpositions), one back, this one.
        var twoBack = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    value = min(value, twoBack[j - 2] + 1)
                }
                current[j] = value
            }
            (twoBack, previous, current) = (previous, current, twoBack)
        }
        return previous[b.count]
    }

    /// `name` lowercased, without `_` and `-`.
    private static func fold(_ name: String) -> String {
        String(name.lowercased().unicodeScalars.filter { $0 != "_" && $0 != "-" }.map(Character.init))
    }
}
