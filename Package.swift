// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "nextpage",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "nextpage", targets: ["nextpage"]),
        .library(name: "NextPage", targets: ["NextPage"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CJansson",
            pkgConfig: "jansson",
            providers: [.apt(["libjansson-dev"])]
        ),
        .target(name: "Jansson", dependencies: ["CJansson"]),
        .target(name: "JSONRPC", dependencies: ["Jansson"]),
        .target(name: "NextPage", dependencies: ["Jansson"]),
        .target(
            name: "NextPageServer",
            dependencies: [
                "NextPage", "JSONRPC", "Jansson",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "nextpage",
            dependencies: [
                "NextPageServer", "JSONRPC", "NextPage",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "JanssonTests", dependencies: ["Jansson"]),
        .testTarget(name: "JSONRPCTests", dependencies: ["JSONRPC", "Jansson"]),
        .testTarget(name: "NextPageTests", dependencies: ["NextPage", "Jansson"]),
        .testTarget(name: "NextPageServerTests", dependencies: ["NextPageServer", "NextPage", "JSONRPC", "Jansson"]),
        .testTarget(name: "EndToEndTests", dependencies: ["Jansson"]),
    ]
)
