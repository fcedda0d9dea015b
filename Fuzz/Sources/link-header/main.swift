// Fuzz target: the RFC 8288 `Link` header parser (`LinkHeader.parse`).
//
// Input: header values separated by NUL bytes.
//
// Checks that targets hold no `>`, relation types are lowercase and come
// from the first `rel` parameter, parameter names are non-empty; and that
// writing the links back out (`<target>; name="value"`, quotes escaped) and
// parsing again gives the same links.
import FuzzSupport
import NextPage

private func serialize(_ link: LinkHeader.Link) -> String {
    var text = "<" + link.target + ">"
    for (name, value) in link.parameters {
        var quoted = ""
        for scalar in value.unicodeScalars {
            if scalar == "\"" || scalar == "\\" { quoted.unicodeScalars.append("\\") }
            quoted.unicodeScalars.append(scalar)
        }
        text += "; " + name + "=\"" + quoted + "\""
    }
    return text
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzLinkHeader(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = Fuzzer.bytes(data, size)
    let values = bytes.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    let links = LinkHeader.parse(values)
    for link in links {
        fuzzCheck(!link.target.unicodeScalars.contains(">"), "target holds '>': \(link.target)")
        for relation in link.relations {
            fuzzCheck(!relation.isEmpty && relation == relation.lowercased(), "relation \(relation) is not lowercase")
        }
        for (name, _) in link.parameters {
            fuzzCheck(!name.isEmpty, "empty parameter name")
            fuzzCheck(!name.unicodeScalars.contains { " \t=;,".unicodeScalars.contains($0) }, "parameter name \(name) holds a delimiter")
        }
        let rel = link.parameters.first { $0.name == "rel" }?.value ?? ""
        let expected = rel.split(whereSeparator: { $0 == " " || $0 == "\t" }).map { $0.lowercased() }
        fuzzCheck(link.relations == expected, "relations \(link.relations) are not those of the first rel, \(rel)")
    }
    // One value holding every link, and one value per link.
    let joined = links.map(serialize).joined(separator: ", ")
    let again = LinkHeader.parse([joined])
    fuzzCheck(again == links, "round trip through \(joined) gave \(again) instead of \(links)")
    let separate = LinkHeader.parse(links.map(serialize))
    fuzzCheck(separate == links, "round trip, one value per link, gave \(separate) instead of \(links)")
    return 0
}

Fuzzer.main(fuzzLinkHeader)
