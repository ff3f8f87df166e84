import Foundation

/// libFuzzer's own driver, `int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*)(const uint8_t *, size_t))`
/// (compiler-rt `FuzzerInterface.h`, in `libclang_rt.fuzzer`, which `-sanitize=fuzzer` links). It parses
/// the libFuzzer flags and calls the entry point for each input.
///
/// SwiftPM links an executable target with `--defsym main=<Module>_main`, so the `main` of libFuzzer's
/// archive is never the program's: each fuzz target's `@main` calls this driver through
/// ``FuzzDriver/main(_:makeSeeds:)`` instead. Declared with `@_silgen_name` because no module map
/// exports it; its arguments are pointers and an integer, which the Swift and C conventions pass alike
/// on the platforms libFuzzer supports.
@_silgen_name("LLVMFuzzerRunDriver")
private func llvmFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ test: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// The entry point libFuzzer calls for each input, `LLVMFuzzerTestOneInput`: the one place the
/// input's pointer is read. It hands a copy to the target's test.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let test = FuzzDriver.test else { fatalError("LLVMFuzzerTestOneInput before FuzzDriver.main") }
    test(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

/// What every fuzz target's `main` does.
public enum FuzzDriver {
    /// The target's test. Set once by ``main(_:makeSeeds:)`` before libFuzzer starts, then only read,
    /// by libFuzzer's one fuzzing thread.
    nonisolated(unsafe) fileprivate static var test: (([UInt8]) -> Void)?

    /// Runs libFuzzer over `test` with the process's arguments, or, for
    /// `<target> --make-seeds <folder>`, writes the target's generated seed files with `makeSeeds`.
    public static func main(_ test: @escaping ([UInt8]) -> Void, makeSeeds: ((SeedFolder) throws -> Void)? = nil) -> Never {
        let arguments = CommandLine.arguments
        if arguments.count == 3, arguments[1] == "--make-seeds" {
            guard let makeSeeds else {
                Self.diagnostic("\(arguments[0]): this target's seeds are copied from fixtures, not generated")
                exit(64)
            }
            do {
                try makeSeeds(SeedFolder(path: arguments[2]))
                exit(0)
            } catch {
                Self.diagnostic("\(arguments[0]): \(error)")
                exit(70)
            }
        }
        Self.test = test
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(llvmFuzzerRunDriver(&argc, &argv, fuzzTestOneInput))
    }

    private static func diagnostic(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}

/// A seed corpus folder that a target's `--make-seeds` writes into.
public struct SeedFolder: Sendable {
    public let path: String

    public struct WriteError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Writes `bytes` as the file `name` in the folder.
    public func write(_ name: String, _ bytes: [UInt8]) throws {
        let path = self.path + "/" + name
        guard let file = fopen(path, "wb") else { throw WriteError(description: "cannot create \(path)") }
        defer { fclose(file) }
        guard fwrite(bytes, 1, bytes.count, file) == bytes.count else { throw WriteError(description: "cannot write \(path)") }
    }

    /// Writes `text` as the file `name` in the folder.
    public func write(_ name: String, _ text: String) throws { try self.write(name, Array(text.utf8)) }
}
