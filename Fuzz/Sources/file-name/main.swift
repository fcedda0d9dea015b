// Fuzz target: the cursor-to-filename encoding of the `file` source
// (`FileClient.encode(cursor:)`, `FileClient.fileName(for:)`).
//
// Input: the cursor's bytes (as a Swift string: invalid UTF-8 becomes U+FFFD,
// as in any cursor read from JSON).
//
// Checks that the name never holds `/` (or NUL), never starts with `.`, only
// holds `A-Z a-z 0-9 - _ %`, and decodes back to the cursor; that the page
// file is the name plus `.json`; and that different cursors never share a
// file (the encoding is injective).
import FuzzSupport
import NextPage

private func isPlain(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
         UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
        return true
    default:
        return false
    }
}

/// Percent-decoding, strict: `nil` for a `%` not followed by two hex digits.
private func decode(_ name: String) -> [UInt8]? {
    let bytes = Array(name.utf8)
    var out: [UInt8] = []
    var i = 0
    func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
    while i < bytes.count {
        if bytes[i] == UInt8(ascii: "%") {
            guard i + 2 < bytes.count, let high = hex(bytes[i + 1]), let low = hex(bytes[i + 2]) else { return nil }
            out.append(high << 4 | low)
            i += 3
        } else {
            out.append(bytes[i])
            i += 1
        }
    }
    return out
}

private func checkName(_ cursor: String) -> String {
    let name = FileClient.encode(cursor: cursor)
    let bytes = Array(name.utf8)
    fuzzCheck(!bytes.contains(UInt8(ascii: "/")) && !bytes.contains(0), "name \(name) holds '/' or NUL")
    fuzzCheck(bytes.first != UInt8(ascii: "."), "name \(name) starts with '.'")
    fuzzCheck(bytes.allSatisfy { isPlain($0) || $0 == UInt8(ascii: "%") }, "name \(name) holds other bytes")
    fuzzCheck(decode(name) == Array(cursor.utf8), "name \(name) does not decode to the cursor \(cursor.debugDescription)")
    let request = PageRequest(cursor: .string(cursor), isFirstPage: false, paging: Paging(strategy: .cursor), options: CollectionOptions())
    fuzzCheck(FileClient.fileName(for: request) == name + ".json", "page file of \(cursor.debugDescription) is not \(name).json")
    return name
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzFileName(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = Fuzzer.bytes(data, size)
    let cursor = String(decoding: bytes, as: UTF8.self)
    let name = checkName(cursor)
    // Two cursors cut from the same input: same name only if same cursor.
    let half = String(decoding: bytes.prefix(bytes.count / 2), as: UTF8.self)
    if half != cursor { fuzzCheck(checkName(half) != name, "\(half.debugDescription) and \(cursor.debugDescription) share a file") }
    // Integer cursors (page, offset) are their decimal digits.
    if bytes.count >= 8 {
        let value = bytes.prefix(8).reduce(Int64(0)) { $0 << 8 | Int64($1) }
        let request = PageRequest(cursor: .integer(value), isFirstPage: false, paging: Paging(strategy: .page), options: CollectionOptions())
        let file = FileClient.fileName(for: request)
        fuzzCheck(file == String(value) + ".json", "integer cursor \(value) gave \(file)")
    }
    let first = PageRequest(cursor: .string(cursor), isFirstPage: true, paging: Paging(strategy: .cursor), options: CollectionOptions())
    fuzzCheck(FileClient.fileName(for: first) == "first.json", "the first page is not first.json")
    return 0
}

Fuzzer.main(fuzzFileName)
