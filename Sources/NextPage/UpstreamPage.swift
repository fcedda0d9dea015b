import Jansson

/// One page as the source sent it: its items (as compact JSON bytes) and the
/// values the paging strategy reads (next cursor, `hasNext`, `total`).
///
/// Every page is parsed with jansson, once. Items are never turned into
/// Swift values: they are forwarded as the bytes the source sent, compacted,
/// once jansson has validated them.
///
/// Decoding has two stages. The first finds the item array by scanning the
/// bytes (`JSONScanner`), compacts it, and parses the rest of the page (the
/// page with `[]` in place of the items) with jansson, which gives the next
/// cursor, `hasNext` and `total`. The second, `pendingCheck`, parses the
/// compacted items with jansson; the page may not land before it has run.
/// The split lets the next page be fetched while this one's items are still
/// being checked. A page the scanner cannot vouch for is parsed whole by
/// jansson in the first stage instead, and so is any page that fails a
/// check, so that errors always name the place in the page as sent.
public struct UpstreamPage: JSONDecodable {
    /// The items, compact, in source order.
    public var items: PageItems
    /// Each item's id (read through `paging.id`) when ids were asked for and
    /// the checks have run; otherwise empty.
    public var ids: [Cursor?]
    /// Each item's incremental value (`incremental.pointer`) when those were
    /// asked for and the checks have run; otherwise empty.
    public var marks: [IncrementalValue?] = []
    /// The id of the last item, read for the `lastId` strategy (its cursor).
    public var lastItemId: Cursor?
    /// The value at `paging.next`, as a cursor.
    public var next: Cursor?
    /// The value at `paging.hasNext`, when that pointer is set.
    public var hasNextFlag: Bool?
    /// The value at `paging.total`, when that pointer is set.
    public var total: Int64?
    /// Response headers (the `link` strategy reads them).
    public var headers: [(name: String, value: String)]
    /// The jansson check of the items still to run, if any.
    public var pendingCheck: PageCheck?

    public init(
        items: PageItems, ids: [Cursor?] = [], lastItemId: Cursor? = nil, next: Cursor? = nil,
        hasNextFlag: Bool? = nil, total: Int64? = nil, headers: [(name: String, value: String)] = []
    ) {
        self.items = items
        self.ids = ids
        self.lastItemId = lastItemId
        self.next = next
        self.hasNextFlag = hasNextFlag
        self.total = total
        self.headers = headers
    }

    public init(
        items: [RawJSON], ids: [Cursor?] = [], lastItemId: Cursor? = nil, next: Cursor? = nil,
        hasNextFlag: Bool? = nil, total: Int64? = nil, headers: [(name: String, value: String)] = []
    ) {
        self.init(items: PageItems(items), ids: ids, lastItemId: lastItemId, next: next,
                  hasNextFlag: hasNextFlag, total: total, headers: headers)
    }

    /// The deepest nesting jansson parses (its `JSON_PARSER_MAX_DEPTH`).
    static let maxDepth = 2048

    public static func decode<R: Request>(_ response: UpstreamResponse, for request: R) throws -> UpstreamPage {
        let wantsIds = request.wantsIds
        let markPointer = request.incrementalPointer
        if let page = decodeScanned(response, paging: request.paging, wantsIds: wantsIds, markPointer: markPointer) { return page }
        return try decodeWhole(response.body, headers: response.headers, paging: request.paging, wantsIds: wantsIds, markPointer: markPointer)
    }

    /// Applies the pending check: afterwards `ids` are known and the items
    /// are validated. Throws `LoadError.undecodable` when the page is not JSON.
    public mutating func completeChecks() throws {
        guard let check = pendingCheck else { return }
        let outcome = try check.run()
        ids = outcome.ids
        marks = outcome.marks
        if let replaced = outcome.items { items = replaced }
        pendingCheck = nil
    }

    // MARK: Stage one, by scanning

    /// The first stage for a page the scanner can vouch for; `nil` sends the
    /// page to `decodeWhole` (which also reports every error).
    static func decodeScanned(_ response: UpstreamResponse, paging: Paging, wantsIds: Bool, markPointer: String? = nil) -> UpstreamPage? {
        guard let tokens = JSONPointer.tokens(paging.items) else { return nil }
        // Values read from the rest of the page must not lie inside the item array.
        let bodyNext = readsNextInBody(paging)
        for pointer in [bodyNext ? paging.next : nil, bodyNext ? paging.nextFallback : nil, paging.hasNext, paging.total] {
            guard let pointer else { continue }
            if paging.items.isEmpty || pointer == paging.items || pointer.hasPrefix(paging.items + "/") { return nil }
        }
        let body = response.body
        guard let found = body.withUnsafeBufferPointer({ JSONScanner.compactArray(at: tokens, in: $0) }),
              found.depth <= maxDepth else { return nil }
        var skeleton: [UInt8] = []
        skeleton.reserveCapacity(body.count - found.range.count + 2)
        skeleton.append(contentsOf: body[..<found.range.lowerBound])
        skeleton.append(contentsOf: [UInt8(ascii: "["), UInt8(ascii: "]")])
        skeleton.append(contentsOf: body[found.range.upperBound...])
        let items = PageItems(trustedArray: found.bytes, starts: found.starts)
        var page = UpstreamPage(items: items, headers: response.headers)
        let understood: Bool = JSON.withArena {
            guard let root = try? JSON.parse(skeleton),
                  let placeholder = root.pointer(paging.items), placeholder.kind == .array, placeholder.count == 0
            else { return false }
            do {
                try readFacts(root, into: &page, paging: paging)
                if let idPointer = paging.id, paging.strategy.implementation.needsLastItemId, !items.isEmpty {
                    let last = try JSON.parse(Array(items.array[items.span(items.count - 1)]))
                    page.lastItemId = try readCursor(last.pointer(idPointer), at: idPointer, required: true)
                }
            } catch {
                return false
            }
            return true
        }
        guard understood else { return nil }
        page.pendingCheck = PageCheck(
            items: items, membersBefore: found.membersBefore, idPointer: wantsIds ? paging.id : nil, markPointer: markPointer, body: body,
            headers: response.headers, paging: paging)
        return page
    }

    // MARK: Whole pages

    /// Parses the whole page with jansson and dumps each item: the path for
    /// pages the scanner leaves alone, and the one that names every error.
    static func decodeWhole(
        _ body: [UInt8], headers: [(name: String, value: String)], paging: Paging, wantsIds: Bool, markPointer: String? = nil
    ) throws -> UpstreamPage {
        try JSON.withArena {
            let root: JSON
            do throws(JSONParseError) {
                root = try JSON.parse(body)
            } catch {
                throw LoadError.undecodable(PageDecodingFailure(
                    line: error.line, column: error.column, message: "page is not JSON: \(error.text)"))
            }
            guard let array = root.pointer(paging.items) else {
                throw missing(paging.items, "item array")
            }
            guard array.kind == .array else {
                throw LoadError.undecodable(PageDecodingFailure(
                    pointer: paging.items, message: "expected an array of items at '\(paging.items)'"))
            }
            let elements = array.elements
            var page = UpstreamPage(items: PageItems(elements.map(RawJSON.init)), headers: headers)
            if let idPointer = paging.id {
                if wantsIds {
                    page.ids = try elements.map { try readCursor($0.pointer(idPointer), at: idPointer, required: false) }
                }
                if paging.strategy.implementation.needsLastItemId, let last = elements.last {
                    page.lastItemId = try readCursor(last.pointer(idPointer), at: idPointer, required: true)
                }
            }
            if let markPointer {
                page.marks = elements.map { $0.pointer(markPointer).flatMap(IncrementalValue.init) }
            }
            try readFacts(root, into: &page, paging: paging)
            return page
        }
    }

    /// Whether the strategy reads its next cursor from the page, at `paging.next`
    /// (and not from the response header `paging.nextHeader`).
    static func readsNextInBody(_ paging: Paging) -> Bool {
        paging.strategy.implementation.readsNext && paging.nextHeader == nil
    }

    /// The next cursor in response header `name` (the first such header,
    /// without surrounding blanks); `nil`, the end, when it is missing or empty.
    static func headerCursor(_ name: String, in headers: [(name: String, value: String)]) -> Cursor? {
        let lowered = name.lowercased()
        guard let value = headers.first(where: { $0.name.lowercased() == lowered })?.value else { return nil }
        let trimmed = value.trimmingASCIISpaces()
        return trimmed.isEmpty ? nil : .string(trimmed)
    }

    /// Reads the next cursor, `hasNext` and `total` from the page (the next
    /// cursor from `paging.nextHeader` instead, when it is set).
    static func readFacts(_ root: JSON, into page: inout UpstreamPage, paging: Paging) throws {
        if let header = paging.nextHeader, paging.strategy.implementation.readsNext {
            page.next = headerCursor(header, in: page.headers)
        } else if let nextPointer = paging.next, readsNextInBody(paging) {
            var value = root.pointer(nextPointer)
            var at = nextPointer
            if value == nil || value?.kind == .null, let fallback = paging.nextFallback, let other = root.pointer(fallback) {
                value = other
                at = fallback
            }
            page.next = try readCursor(value, at: at, required: false)
        }
        if let hasNextPointer = paging.hasNext {
            guard let flag = root.pointer(hasNextPointer) else { throw missing(hasNextPointer, "hasNext flag") }
            guard let value = flag.bool else {
                throw LoadError.undecodable(PageDecodingFailure(
                    pointer: hasNextPointer, message: "expected true or false at '\(hasNextPointer)'"))
            }
            page.hasNextFlag = value
        } else if let fallback = paging.hasNextFallback, let value = root.pointer(fallback)?.bool {
            page.hasNextFlag = value
        }
        if let totalPointer = paging.total {
            let found = root.pointer(totalPointer)
            // With a `hasNext` pointer, that is the end test: a page without a total (or with null) is fine.
            if paging.hasNext != nil && (found?.isNull ?? true) { return }
            guard let total = found else { throw missing(totalPointer, "total") }
            guard let value = total.integer ?? total.number.map(clampedInteger) else {
                throw LoadError.undecodable(PageDecodingFailure(
                    pointer: totalPointer, message: "expected a number at '\(totalPointer)'"))
            }
            page.total = value
        }
    }

    /// A real total as an integer, saturating beyond the range of `Int64`.
    private static func clampedInteger(_ value: Double) -> Int64 {
        if value >= 0x1p63 { return .max }
        if value <= -0x1p63 { return .min }
        return Int64(value)
    }

    static func missing(_ pointer: String, _ what: String) -> LoadError {
        .undecodable(PageDecodingFailure(pointer: pointer, message: "page has no \(what) at '\(pointer)'"))
    }

    static func readCursor(_ value: JSON?, at pointer: String, required: Bool) throws -> Cursor? {
        switch Cursor.from(value) {
        case .success(let cursor):
            if cursor == nil && required {
                throw LoadError.undecodable(PageDecodingFailure(
                    pointer: pointer, message: "item has no id at '\(pointer)'"))
            }
            return cursor
        case .failure(let error):
            throw LoadError.undecodable(PageDecodingFailure(
                pointer: pointer, message: "expected a string or integer at '\(pointer)', found \(error.kind)"))
        }
    }
}

/// The second stage of decoding a scanned page: jansson parses the
/// compacted items, which proves the page is JSON and the items are what
/// the source sent, and reads their ids when they are asked for.
///
/// An item that repeats a key inside an object is not forwarded as sent:
/// jansson keeps the last value (in the place of the first), and so do the
/// items delivered, whichever stage decoded the page.
public struct PageCheck: Sendable {
    /// What a check found.
    public struct Outcome: Sendable {
        /// The items' ids when they were asked for (else `[]`).
        public var ids: [Cursor?]
        /// The items' incremental values when they were asked for (else `[]`).
        public var marks: [IncrementalValue?] = []
        /// The items as jansson reads them, when they differ from the
        /// compacted bytes (an object repeated a key); `nil` otherwise.
        public var items: PageItems?
    }

    let items: PageItems
    /// Object members written before each item, then in all items (see
    /// `JSONScanner.CompactArray.membersBefore`).
    let membersBefore: [UInt32]
    /// Pointer to each item's id, when ids are wanted (`dedupe`).
    let idPointer: String?
    /// Pointer to each item's incremental value, when those are wanted.
    let markPointer: String?
    /// The page as sent, to name the place of an error.
    let body: [UInt8]
    let headers: [(name: String, value: String)]
    let paging: Paging

    /// Items are checked in runs of about this many bytes, each parsed as an
    /// array of its own: a run's tree is built and released while it is
    /// still in the cache, where a large page's whole tree would not be.
    static let runBytes = 64 << 10

    /// Runs the check; returns the items' ids when they are wanted, and
    /// the items themselves when they had to be read again.
    ///
    /// The item array is valid JSON exactly when every run of its items,
    /// wrapped in brackets, parses as an array of that many items: items
    /// are whole values separated at the array's own commas.
    public func run() throws -> Outcome {
        var pass = Pass(self)
        while !pass.isDone {
            if let whole = try pass.checkNextRun() { return whole }
        }
        return try pass.outcome()
    }

    /// `run()`, giving way to other tasks between runs: a thread held by
    /// one large page's check for milliseconds would otherwise keep the
    /// fetches started meanwhile from even sending their requests (Swift's
    /// concurrency pool has as many threads as cores, and checks can fill
    /// them all). A page of one run never waits.
    public func runGivingWay() async throws -> Outcome {
        var pass = Pass(self)
        while true {
            if let whole = try pass.checkNextRun() { return whole }
            if pass.isDone { break }
            await Task.yield()
        }
        return try pass.outcome()
    }

    /// One check in progress: the runs checked so far and what they gave.
    private struct Pass {
        let check: PageCheck
        var first = 0
        var ids: [Cursor?] = []
        var marks: [IncrementalValue?] = []
        /// An id of the wrong kind is reported once every run is known to be
        /// JSON, as when the page is parsed whole.
        var idFailure: LoadError?
        var run: [UInt8] = []

        init(_ check: PageCheck) {
            self.check = check
            if check.idPointer != nil { ids.reserveCapacity(check.items.count) }
            if check.markPointer != nil { marks.reserveCapacity(check.items.count) }
        }

        var isDone: Bool { first >= check.items.count }

        /// Checks the next run of about `runBytes`; returns what reading the
        /// whole page gives when the run is not JSON (or repeats a key).
        mutating func checkNextRun() throws -> Outcome? {
            let items = check.items
            guard first < items.count else { return nil }
            let start = items.span(first).lowerBound
            var end = first + 1
            while end < items.count && items.span(end).upperBound - start <= PageCheck.runBytes { end += 1 }
            let members = Int(check.membersBefore[end] - check.membersBefore[first])
            let valid: Bool
            if first == 0 && end == items.count {
                // One run holds them all: the array as it is.
                valid = check.check(items.array, count: end, members: members, ids: &ids, marks: &marks, idFailure: &idFailure)
            } else {
                run.removeAll(keepingCapacity: true)
                run.append(UInt8(ascii: "["))
                run.append(contentsOf: items.array[start..<items.span(end - 1).upperBound])
                run.append(UInt8(ascii: "]"))
                valid = check.check(run, count: end - first, members: members, ids: &ids, marks: &marks, idFailure: &idFailure)
            }
            guard valid else { return try check.readWhole() }
            first = end
            return nil
        }

        func outcome() throws -> Outcome {
            if let idFailure { throw idFailure }
            return Outcome(ids: ids, marks: marks, items: nil)
        }
    }

    /// Not JSON, or an object repeats a key: parses the page as sent, so
    /// that an error names the place in it and repeated keys resolve as
    /// jansson resolves them.
    private func readWhole() throws -> Outcome {
        let whole = try UpstreamPage.decodeWhole(body, headers: headers, paging: paging, wantsIds: idPointer != nil, markPointer: markPointer)
        guard whole.items.count == items.count else {
            throw LoadError.undecodable(PageDecodingFailure(
                pointer: paging.items, message: "the items at '\(paging.items)' are not JSON"))
        }
        return Outcome(ids: whole.ids, marks: whole.marks, items: whole.items)
    }

    /// Parses one run of `count` items holding `members` object members;
    /// returns false when it is not JSON or an object in it repeats a key
    /// (jansson then holds fewer members). Reads their incremental values,
    /// and their ids while no id has failed yet.
    private func check(
        _ run: [UInt8], count: Int, members: Int, ids: inout [Cursor?], marks: inout [IncrementalValue?], idFailure: inout LoadError?
    ) -> Bool {
        let checked = try? JSON.parseScratch(run) { array -> Bool in
            guard array.kind == .array, array.count == count, array.memberCount == members else { return false }
            if let markPointer {
                for index in 0..<count { marks.append(array[index]?.pointer(markPointer).flatMap(IncrementalValue.init)) }
            }
            guard let idPointer, idFailure == nil else { return true }
            for index in 0..<count {
                do {
                    ids.append(try UpstreamPage.readCursor(array[index]?.pointer(idPointer), at: idPointer, required: false))
                } catch {
                    idFailure = (error as? LoadError) ?? .undecodable(PageDecodingFailure(message: "\(error)"))
                    break
                }
            }
            return true
        }
        return checked ?? false
    }
}
