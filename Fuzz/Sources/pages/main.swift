// Fuzz target: page decoding and every strategy's `advance`, fed arbitrary
// page bodies and headers.
//
// Input: [strategy] [items] [next] [id] [hasNext] [total] [flags] [cursor]
//        [n] [n Link header values, each length-prefixed] [body...]
// Each pointer byte picks from `pointers` (or none, for the optional ones).
//
// Checks that decoding a page the usual way (`UpstreamPage.decode`, the
// scanned path when the scanner vouches for the page, then
// `completeChecks`) gives exactly what parsing the whole page with jansson
// gives (`decodeWhole`): the same items, ids, cursor, flags and total, or
// the same error. Items forwarded from a page are valid JSON without a raw
// control byte (they go out on NDJSON lines). `advance` never continues
// without a cursor, and the counting strategies move by what they counted.
// Every jansson value made while decoding is released (the live block count
// is back where it was after each input). The bytes the scanner locates at
// the items pointer are the value jansson finds there.
import FuzzSupport
import Jansson
@testable import NextPage

private let strategies = Paging.Strategy.allCases

/// Pointers to try: the usual places, the root, array indexes, escapes, nowhere.
private let pointers = [
    "/items", "", "/data/nodes", "/next", "/more", "/total", "/id", "/0", "/items/0", "/a~1b", "/a~0b", "/ü",
    "/data/nodes/1/id", "/-", "/items/01", "/items/0/id", "/next_cursor", "/links/next", "//", "/~2",
]

private enum Outcome: Equatable {
    case page(items: [String], ids: [Cursor?], last: Cursor?, next: Cursor?, more: Bool?, total: Int64?)
    case failure(LoadError)
}

/// What a decoding gave. Items are compared as values: the scanned path
/// keeps the source's spelling (`1E+2`) where jansson's dump respells it.
private func outcome(_ body: () throws -> UpstreamPage) -> (Outcome, UpstreamPage?) {
    do {
        let page = try body()
        var items: [String] = []
        for item in page.items {
            // Compact JSON holds no byte below 0x20: not a line break, not a NUL.
            fuzzCheck(!item.bytes.contains { $0 < 0x20 }, "item with a control byte: \(item.bytes)")
            guard let parsed = try? item.parsed() else {
                fuzzCheck(false, "an item of a decoded page is not JSON: \(item)")
                return (.failure(.cancelled), nil)
            }
            items.append(parsed.compactString)
        }
        return (.page(items: items, ids: page.ids, last: page.lastItemId, next: page.next, more: page.hasNextFlag, total: page.total), page)
    } catch let error as LoadError {
        return (.failure(error), nil)
    } catch {
        fuzzCheck(false, "decoding threw \(error), not a LoadError")
        return (.failure(.cancelled), nil)
    }
}

private func checkAdvance(_ page: UpstreamPage, _ request: PageRequest, loadedBefore: LoadedBefore) -> Advance {
    let strategy = request.paging.strategy.implementation
    let advance = strategy.advance(after: page, request: request, loadedBefore: loadedBefore)
    fuzzCheck(!advance.hasNext || advance.next != nil, "\(request.paging.strategy): more to come without a cursor")
    if page.hasNextFlag == false { fuzzCheck(!advance.hasNext, "hasNext says false, advance says true") }
    let current = request.cursor?.integerValue ?? request.paging.start
    switch request.paging.strategy {
    case .page:
        if let next = advance.next { fuzzCheck(next == .integer(current + 1), "page \(current) followed by \(next)") }
    case .offset:
        if let next = advance.next {
            fuzzCheck(next == .integer(current + Int64(page.items.count)), "offset \(current) + \(page.items.count) items gave \(next)")
        }
    default:
        break
    }
    return advance
}

/// The bytes `JSONScanner.valueRange` names (as replay reads a recorded
/// body) are the value jansson finds at the same pointer.
private func checkLocated(_ body: [UInt8], _ pointer: String) {
    guard let tokens = JSONPointer.tokens(pointer), let whole = try? JSON.parse(body) else { return }
    guard let range = body.withUnsafeBufferPointer({ JSONScanner.valueRange(at: tokens, in: $0) }) else { return }
    guard let expected = whole.pointer(pointer) else {
        fuzzCheck(false, "located \(range) at \(pointer) where jansson finds nothing")
        return
    }
    let located = try? JSON.parse(Array(body[range]))
    fuzzCheck(located?.isEqual(to: expected) == true, "located \(body[range]) at \(pointer), not jansson's value")
}

/// Counts jansson's blocks, from the first input on.
private let counting: Void = JanssonAllocations.startCounting()

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzPages(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    _ = counting
    let live = JanssonAllocations.live
    decodeAndCompare(data, size)
    fuzzCheck(JanssonAllocations.live == live, "\(JanssonAllocations.live - live) jansson blocks left live")
    return 0
}

private func decodeAndCompare(_ data: UnsafePointer<UInt8>?, _ size: Int) {
    var input = FuzzInput(Fuzzer.bytes(data, size))
    let strategy = input.pick(strategies)
    let items = input.pick(pointers)
    let optional = pointers.map(Optional.some) + [nil]
    let next = input.pick(optional)
    let id = input.pick(optional)
    let hasNext = input.pick(optional)
    let total = input.pick(optional)
    let flags = input.byte()
    let cursor = input.pick([nil, Cursor.string("c"), .integer(0), .integer(7), .integer(-3), .integer(Int64.max - 1), .integer(Int64.max), .string("12")])
    var headers: [(name: String, value: String)] = []
    for index in 0..<input.below(4) {
        headers.append((index % 2 == 0 ? "Link" : "link", String(decoding: input.chunk(), as: UTF8.self)))
    }
    let body = input.rest()

    checkLocated(body, items)
    let paging = Paging(strategy: strategy, items: items, next: next, id: id, hasNext: hasNext, total: total)
    let options = CollectionOptions(pageSize: flags & 1 != 0 ? Int(flags >> 4) : nil, dedupe: flags & 2 != 0)
    let request = PageRequest(cursor: cursor, isFirstPage: flags & 4 != 0, paging: paging, options: options)
    let response = UpstreamResponse(headers: headers, body: body)

    let (usual, usualPage) = outcome {
        var page = try UpstreamPage.decode(response, for: request)
        try page.completeChecks()
        return page
    }
    let (whole, wholePage) = outcome {
        try UpstreamPage.decodeWhole(body, headers: headers, paging: paging, wantsIds: request.wantsIds)
    }
    fuzzCheck(usual == whole, "scanned and whole-page decoding disagree:\n  usual: \(usual)\n  whole: \(whole)")
    if request.wantsIds, let usualPage, paging.id != nil {
        fuzzCheck(usualPage.ids.count == usualPage.items.count, "\(usualPage.ids.count) ids for \(usualPage.items.count) items")
    }
    if let usualPage, let wholePage {
        // Items and pages before: enough variety for short-page inference either way.
        let loadedBefore = LoadedBefore(items: Int(flags >> 3), pages: Int(flags >> 6))
        let a = checkAdvance(usualPage, request, loadedBefore: loadedBefore)
        let b = checkAdvance(wholePage, request, loadedBefore: loadedBefore)
        fuzzCheck(a == b, "advance differs: \(a) vs \(b)")
    }
}

Fuzzer.main(fuzzPages)
