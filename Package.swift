// swift-tools-version:6.1
import PackageDescription

// The nextpage executable allocates through mimalloc (Debian's libmimalloc-dev):
// linked ahead of the C library, it takes the place of malloc for the whole
// process, where the Swift runtime's many small allocations per request cost
// less than with glibc's allocator (bench/README.md, "mimalloc").
// Sanitizer builds keep the allocator the sanitizer brings: scripts/sanitize
// sets NEXTPAGE_SYSTEM_MALLOC=1. (The fuzz targets never link the executable.)
let allocator: [LinkerSetting] =
    Context.environment["NEXTPAGE_SYSTEM_MALLOC"] == "1" ? [] : [.linkedLibrary("mimalloc", .when(platforms: [.linux]))]

// scripts/package links jansson (and mimalloc, when a libmimalloc.a is
// installed) into the executable from static archives: NEXTPAGE_STATIC_LIBS
// names a folder holding only those archives, which the linker searches
// first for -ljansson and -lmimalloc. CJansson then takes nothing from
// pkg-config, whose -L would put the folder of the shared libjansson.so
// ahead of it. Unset (every other build), nothing changes.
let staticLibraries = Context.environment["NEXTPAGE_STATIC_LIBS"].flatMap { $0.isEmpty ? nil : $0 }
let staticLinking: [LinkerSetting] = staticLibraries.map { [.unsafeFlags(["-L\($0)"])] } ?? []

let package = Package(
    name: "nextpage",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "nextpage", targets: ["nextpage"]),
        .library(name: "NextPage", targets: ["NextPage"]),
        // For Swift programs that drive a nextpage process (clients/README.md).
        .library(name: "NextPageClient", targets: ["NextPageClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
        // The `command` source's child processes. Its default trait only adds
        // Foundation conveniences, which nextpage does not use.
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2", traits: []),
        .package(url: "https://github.com/apple/swift-system", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CJansson",
            pkgConfig: staticLibraries == nil ? "jansson" : nil,
            providers: [.apt(["libjansson-dev"])]
        ),
        .target(name: "JanssonArena", dependencies: ["CJansson"]),
        .target(name: "Jansson", dependencies: ["CJansson", "JanssonArena"]),
        .target(name: "JSONRPC", dependencies: ["Jansson"]),
        // Starts a child process with its stdin, stdout and stderr as pipes (replay and NextPageClient).
        .target(name: "ChildProcess"),
        // Schemas/*.json, compiled in as byte arrays (no resource bundle to install beside the binary).
        .target(
            name: "NextPageSchemas", path: "Schemas", sources: ["EmbeddedSchemas.swift"],
            resources: [.embedInCode("openrpc.json"), .embedInCode("config.schema.json"), .embedInCode("transcript.schema.json")]
        ),
        .target(
            name: "NextPage",
            dependencies: [
                "Jansson",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        .target(
            name: "NextPageServer",
            dependencies: [
                "NextPage", "JSONRPC", "Jansson", "NextPageSchemas", "ChildProcess",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "nextpage",
            dependencies: [
                "NextPageServer", "JSONRPC", "NextPage", "NextPageSchemas",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            linkerSettings: allocator + staticLinking
        ),
        // Spawns nextpage and speaks JSON-RPC to it; needs only jansson and ChildProcess, not the server's modules.
        .target(name: "NextPageClient", dependencies: ["Jansson", "ChildProcess"]),
        .testTarget(name: "JanssonTests", dependencies: ["Jansson"]),
        .testTarget(name: "JSONRPCTests", dependencies: ["JSONRPC", "Jansson"]),
        .testTarget(
            name: "NextPageTests",
            dependencies: [
                "NextPage", "Jansson",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "NextPageServerTests",
            dependencies: ["NextPageServer", "NextPage", "JSONRPC", "Jansson"],
            exclude: ["HTTPFixtures"]
        ),
        .testTarget(name: "EndToEndTests", dependencies: ["Jansson"]),
        .testTarget(name: "NextPageClientTests", dependencies: ["NextPageClient", "Jansson"]),
    ]
)

// libFuzzer targets (Fuzz/), declared only when NEXTPAGE_FUZZ=1, so the
// normal build and `swift test` never need libFuzzer. scripts/fuzz builds
// them with -sanitize=fuzzer,address into .build-fuzz.
if Context.environment["NEXTPAGE_FUZZ"] == "1" {
    func fuzzTarget(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
        .executableTarget(name: "fuzz-\(name)", dependencies: dependencies + ["FuzzSupport"], path: "Fuzz/Sources/\(name)")
    }
    package.targets += [
        .target(name: "CLibFuzzer", path: "Fuzz/Sources/CLibFuzzer"),
        .target(name: "FuzzSupport", dependencies: ["CLibFuzzer"], path: "Fuzz/Sources/FuzzSupport"),
        fuzzTarget("framing", ["JSONRPC"]),
        .target(
            name: "ServerFuzzSupport",
            dependencies: [
                "FuzzSupport", "JSONRPC", "Jansson", "NextPage", "NextPageServer", .product(name: "Logging", package: "swift-log"),
            ],
            path: "Fuzz/Sources/ServerFuzzSupport"),
        fuzzTarget("requests", ["JSONRPC", "Jansson", "NextPage", "NextPageServer", "ServerFuzzSupport"]),
        fuzzTarget("mcp", ["JSONRPC", "Jansson", "NextPage", "NextPageServer", "ServerFuzzSupport"]),
        fuzzTarget("pages", ["NextPage", "Jansson"]),
        fuzzTarget("link-header", ["NextPage"]),
        fuzzTarget("file-name", ["NextPage"]),
    ]
}
