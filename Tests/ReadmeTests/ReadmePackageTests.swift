import ForgeTestSupport
import Foundation
import Testing

/// The ```swift blocks of README.md and of the DocC articles, and what their loopback snippets print.
enum ReadmeBlocks {
    /// A timeline line of the loopback snippets: the alert was shown.
    static let shownMark = #"added to the notification list: "Your order shipped""#
    /// A timeline line of the loopback article's snippet: the tap reached the app.
    static let tappedMark = "handled the response to"
    /// The products a block may import: what a user's Package.swift names.
    static let products: Set<String> = ["ForgeAPNs", "ForgeCampaign", "ForgeLiveActivities", "ForgeLiveActivitiesGateway", "ForgeLoopback"]
    /// Other packages' modules a block may import, as a user's Package.swift would name them:
    /// an app that hands the client its own tracer depends on swift-distributed-tracing itself.
    static let otherModules: [String: (url: String, from: String, package: String)] = [
        "Tracing": ("https://github.com/apple/swift-distributed-tracing", "1.7.3", "swift-distributed-tracing"),
        // One that mounts the Live Activity gateway runs it with Hummingbird's application API.
        "Hummingbird": ("https://github.com/hummingbird-project/hummingbird", "2.28.1", "hummingbird"),
    ]

    /// The documents whose ```swift blocks are compiled, relative to the package: README.md, then
    /// every article and landing page of every DocC catalog (`Sources/<target>/<name>.docc/*.md`), sorted.
    static func documents() throws -> [String] {
        let files = FileManager.default
        let sources = PackageRoot.directory.appendingPathComponent("Sources")
        var articles: [String] = []
        for target in try files.contentsOfDirectory(atPath: sources.path) {
            let folder = sources.appendingPathComponent(target)
            guard let entries = try? files.contentsOfDirectory(atPath: folder.path) else { continue }
            for catalog in entries where catalog.hasSuffix(".docc") {
                for article in try files.contentsOfDirectory(atPath: folder.appendingPathComponent(catalog).path) where article.hasSuffix(".md") {
                    articles.append("Sources/\(target)/\(catalog)/\(article)")
                }
            }
        }
        return ["README.md"] + articles.sorted()
    }

    /// The ```swift blocks of `document` (a path from `documents()`), in order.
    static func read(_ document: String) throws -> [String] {
        let markdown = try String(contentsOf: PackageRoot.directory.appendingPathComponent(document), encoding: .utf8)
        return MarkdownBlocks.fenced(markdown[...], language: "swift").map { $0 + "\n" }
    }

    /// Every document's ```swift blocks, with the document each comes from.
    static func all() throws -> [(document: String, block: String)] {
        try Self.documents().flatMap { document in try Self.read(document).map { (document, $0) } }
    }

    /// The distinct blocks, in order: a block shown in two documents (the README's and an article's
    /// copy of one example) is one file of the outside package, which would not build with two
    /// definitions of one function; two blocks that define one name differently still fail there.
    /// Each is named after its document and its place there: `BulkSends-2` is that article's second block.
    static func distinct() throws -> [(name: String, block: String)] {
        var seen: Set<String> = []
        return try Self.documents().flatMap { document in
            let stem = URL(fileURLWithPath: document).deletingPathExtension().lastPathComponent
            return try Self.read(document).enumerated().map { ("\(stem)-\($0.offset + 1)", $0.element) }
        }.filter { seen.insert($0.1).inserted }
    }

    /// The modules `block` imports.
    static func imports(_ block: String) -> [String] {
        block.split(separator: "\n").compactMap { line in
            line.hasPrefix("import ") ? String(line.dropFirst("import ".count)).trimmingCharacters(in: .whitespaces) : nil
        }
    }
}

/// A package outside this one's graph, as a user's would be: it depends on ForgePush by path and
/// on the products the blocks import, and its one executable target holds each distinct block of the
/// README and of the DocC articles as a file, exactly as written. Generated under `.build-readme/` (ignored by git), with a fixed
/// scratch folder there, so a second build is incremental.
private enum OutsidePackage {
    static let folder = PackageRoot.directory.appendingPathComponent(".build-readme")
    static let package = folder.appendingPathComponent("ReadmeSnippets")
    static let scratch = folder.appendingPathComponent("scratch")
    static let sources = package.appendingPathComponent("Sources/ReadmeSnippets")

    /// Writes the package; files are rewritten only when their text changed. Returns the block files,
    /// each named as ``ReadmeBlocks/distinct()`` names it, so that a compiler error names the document.
    static func write(_ blocks: [(name: String, block: String)], products: [String], others: [String]) throws -> [String] {
        // A path dependency's identity is its folder's name, whatever the clone is called.
        let identity = PackageRoot.directory.lastPathComponent
        let dependencies = (products.map { #".product(name: "\#($0)", package: "\#(identity)")"# }
            + others.map { #".product(name: "\#($0)", package: "\#(ReadmeBlocks.otherModules[$0]!.package)")"# }).joined(separator: ", ")
        let packages = [".package(path: \(Self.quoted(PackageRoot.directory.path)))"]
            + others.map { #".package(url: "\#(ReadmeBlocks.otherModules[$0]!.url)", from: "\#(ReadmeBlocks.otherModules[$0]!.from)")"# }
        let manifest = """
            // swift-tools-version:6.1
            // Generated by Tests/ReadmeTests/ReadmePackageTests.swift from README.md and the DocC articles: do not edit.
            import PackageDescription

            let package = Package(
                name: "ReadmeSnippets",
                platforms: [.macOS(.v15)],
                dependencies: [\(packages.joined(separator: ", "))],
                targets: [
                    .executableTarget(
                        name: "ReadmeSnippets",
                        dependencies: [\(dependencies)],
                        swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]
                    ),
                ]
            )

            """
        try FileManager.default.createDirectory(at: Self.sources, withIntermediateDirectories: true)
        try Self.update(Self.package.appendingPathComponent("Package.swift"), manifest)
        // The entry point is the test's, not a document's: it runs the loopback snippets (the README's
        // and the loopback article's), which need no Apple account and no file, and prints their timelines.
        try Self.update(Self.sources.appendingPathComponent("main.swift"), """
            // Generated by Tests/ReadmeTests/ReadmePackageTests.swift: runs the loopback snippets.
            print(try await shippedNoticeReachesTheApp().joined(separator: "\\n"))
            print(try await orderNotifierReachesTheApp().joined(separator: "\\n"))

            """)
        var names = ["main.swift"]
        for (blockName, block) in blocks {
            let name = blockName + ".swift"
            try Self.update(Self.sources.appendingPathComponent(name), block)
            names.append(name)
        }
        // Blocks the documents no longer have.
        for stale in try FileManager.default.contentsOfDirectory(atPath: Self.sources.path) where !names.contains(stale) {
            try FileManager.default.removeItem(at: Self.sources.appendingPathComponent(stale))
        }
        return Array(names.dropFirst())
    }

    private static func update(_ file: URL, _ text: String) throws {
        if (try? String(contentsOf: file, encoding: .utf8)) == text { return }
        try Data(text.utf8).write(to: file, options: .atomic)
    }

    private static func quoted(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}

/// `swift` with `arguments`, bounded by `timeout`; standard error merged into the output.
private func swift(_ arguments: [String], timeout: Duration) throws -> ChildProcess.Result {
    try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/env"), ["swift"] + arguments, mergesStandardError: true, timeout: timeout)
}

// Its own test process in `make test` (a build on the 2-core machine beside timing-sensitive tests
// would slow them): `swift test --filter ReadmePackageTests`.
@Suite("README and DocC articles: the snippets build as written in a package of their own", .timeLimit(.minutes(20)))
struct ReadmePackageTests {
    @Test("Each block imports ForgeAPNs, ForgeCampaign, ForgeLiveActivities, ForgeLiveActivitiesGateway or ForgeLoopback, and else only Foundation or a package a user would name")
    func imports() throws {
        for (document, block) in try ReadmeBlocks.all() {
            let imports = ReadmeBlocks.imports(block)
            #expect(imports.contains { ReadmeBlocks.products.contains($0) }, "a block of \(document) that imports no product:\n\(block)")
            #expect(imports.allSatisfy { ReadmeBlocks.products.contains($0) || $0 == "Foundation" || ReadmeBlocks.otherModules[$0] != nil },
                    "\(document): \(imports)")
        }
    }

    @Test("swift build of the outside package compiles every block without a warning; its loopback snippets run")
    func outsideBuild() throws {
        let blocks = try ReadmeBlocks.distinct()
        let imported = Set(blocks.flatMap { ReadmeBlocks.imports($0.block) })
        let files = try OutsidePackage.write(
            blocks, products: imported.intersection(ReadmeBlocks.products).sorted(),
            others: imported.intersection(ReadmeBlocks.otherModules.keys).sorted()
        )
        // SwiftPM keeps the build plan of a path dependency and missed a source file added to ForgePush
        // since the last run ("cannot find 'ISODate' in scope"): plan anew, keep the compiled objects.
        try? FileManager.default.removeItem(at: OutsidePackage.scratch.appendingPathComponent("debug.yaml"))
        let build = try swift(
            ["build", "--package-path", OutsidePackage.package.path, "--scratch-path", OutsidePackage.scratch.path],
            timeout: .seconds(15 * 60)
        )
        try #require(build.exitCode == 0, "the README's or the articles' snippets do not build:\n\(build.stdout)")
        // Warnings in the snippets themselves (a user's code would show them too).
        let warnings = build.stdout.split(separator: "\n").filter { line in
            line.contains("warning:") && files.contains { line.contains("Sources/ReadmeSnippets/\($0)") }
        }
        #expect(warnings.isEmpty, "\(warnings.joined(separator: "\n"))")

        let run = try ChildProcess.run(
            OutsidePackage.scratch.appendingPathComponent("debug/ReadmeSnippets"), [], mergesStandardError: true,
            currentDirectory: FileManager.default.temporaryDirectory, timeout: .seconds(60)
        )
        #expect(run.exitCode == 0, "\(run.stdout)")
        #expect(run.stdout.contains(ReadmeBlocks.shownMark), "\(run.stdout)")
        #expect(run.stdout.contains(ReadmeBlocks.tappedMark), "\(run.stdout)")
    }
}
