import Foundation

/// One parser under the fuzzer: `check` feeds it an input and stops the process (a finding) when
/// something it must never do happens: a crash, a broken invariant, a disagreement with a second
/// implementation. Refusing the input is fine.
struct FuzzTarget: Sendable {
    let name: String
    let check: @Sendable ([UInt8]) -> Void
}

/// Every target, by the name `scripts/fuzz` and the corpus folders use.
let fuzzTargets: [FuzzTarget] = [
    FuzzTarget(name: "json", check: JSONFuzz.check),
    FuzzTarget(name: "request-bodies", check: RequestBodyFuzz.check),
    FuzzTarget(name: "payload-schema", check: PayloadSchemaFuzz.check),
    FuzzTarget(name: "catalog", check: CatalogFuzz.check),
    FuzzTarget(name: "links", check: LinkFuzz.check),
    FuzzTarget(name: "tokens", check: TokenFuzz.check),
    FuzzTarget(name: "request-target", check: RequestTargetFuzz.check),
    FuzzTarget(name: "headers", check: HeaderFuzz.check),
    FuzzTarget(name: "stored-rows", check: StoredRowFuzz.check),
    FuzzTarget(name: "client-sse", check: ClientSSEFuzz.check),
    FuzzTarget(name: "client-responses", check: ClientResponseFuzz.check),
]

/// A finding: says what broke, with the input, and stops the process so libFuzzer keeps the input.
func finding(_ message: String, input: [UInt8]) -> Never {
    let shown = String(decoding: input.prefix(1000), as: UTF8.self)
    fatalError("FUZZ FINDING: \(message.prefix(1000))\ninput (\(input.count) bytes): \(shown.debugDescription)")
}

/// Splits an input at its first NUL byte: targets that take two texts (a catalog and a request,
/// a header and another) read them this way, and NUL is rare inside either.
func splitAtNUL(_ input: [UInt8]) -> (first: ArraySlice<UInt8>, rest: ArraySlice<UInt8>) {
    guard let nul = input.firstIndex(of: 0) else { return (input[...], []) }
    return (input[..<nul], input[(nul + 1)...])
}

#if FUZZING
    nonisolated(unsafe) private var selectedTarget: FuzzTarget?

    /// libFuzzer calls this once before any input: the target comes from `MODALSTACK_FUZZ_TARGET`
    /// (one binary holds every target; scripts/fuzz sets it).
    @_cdecl("LLVMFuzzerInitialize")
    public func fuzzerInitialize(
        _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
    ) -> CInt {
        let name = ProcessInfo.processInfo.environment["MODALSTACK_FUZZ_TARGET"] ?? ""
        guard let target = fuzzTargets.first(where: { $0.name == name }) else {
            let names = fuzzTargets.map(\.name).joined(separator: ", ")
            FileHandle.standardError.write(Data("set MODALSTACK_FUZZ_TARGET to one of: \(names)\n".utf8))
            exit(2)
        }
        selectedTarget = target
        return 0
    }

    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
        let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
        selectedTarget!.check(input)
        return 0
    }
#else
    /// Without libFuzzer: replays files (or every file of folders) through one target, so a
    /// finding can be debugged in a normal build. `ModalStackFuzz TARGET PATH…`
    @main
    enum Replay {
        static func main() {
            let arguments = CommandLine.arguments.dropFirst()
            guard let name = arguments.first, let target = fuzzTargets.first(where: { $0.name == name }) else {
                let names = fuzzTargets.map(\.name).joined(separator: ", ")
                print("usage: ModalStackFuzz TARGET PATH…  (targets: \(names))")
                exit(2)
            }
            var count = 0
            for path in arguments.dropFirst() {
                for file in files(at: path) {
                    guard let data = FileManager.default.contents(atPath: file) else { continue }
                    target.check(Array(data))
                    count += 1
                }
            }
            print("\(name): \(count) inputs, no finding")
        }

        static func files(at path: String) -> [String] {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else { return [] }
            guard isFolder.boolValue else { return [path] }
            let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            return names.sorted().map { path + "/" + $0 }
        }
    }
#endif
