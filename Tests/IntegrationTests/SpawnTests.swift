import Foundation
import Glibc
import ModalStackTestSupport
import Synchronization
import Testing

/// The children the tests start (the server, the sqlite3 shell) leave nothing behind in the test
/// process, which starts hundreds of them in a soak; and starting one does not depend on how many
/// descriptors are open (Foundation's `Process.run()` crashed past about 1,350).
@Suite("starting children", .enabled(if: ServerProcess.isLocal, "starts servers itself"))
struct SpawnTests {
    static let truePath = findExecutable("true") ?? "/bin/true"

    @Test("a program run to its end leaves no descriptor open")
    func programLeavesNoDescriptor() throws {
        let runs = 100
        let before = openPipes()
        for _ in 0..<runs {
            #expect(try runProgram(Self.truePath, []).status == 0)
        }
        // Other suites open pipes meanwhile, a few each; a leak is at least one per run.
        let grown = openPipes() - before
        #expect(grown < runs / 2, "\(grown) more pipes open after \(runs) programs ran")
    }

    @Test("a server started and stopped leaves no descriptor open")
    func serverLeavesNoDescriptor() throws {
        let restarts = 30
        let server = try ServerProcess()
        let before = openPipes()
        for _ in 0..<restarts {
            try server.restart()
        }
        #expect(server.stop(signal: SIGTERM) == 0)
        let grown = openPipes() - before
        #expect(grown < restarts / 2, "\(grown) more pipes open after \(restarts) restarts")
    }

    @Test("programs start with more than 1,400 descriptors open, from several threads at once")
    func manyDescriptorsOpen() throws {
        var opened: [Int32] = []
        defer {
            for descriptor in opened { close(descriptor) }
        }
        // readdir's 32 KiB buffer holds about 1,360 entries of /proc/self/fd: past that it is full.
        while openDescriptors() + opened.count < 1_400 {
            let descriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
            try #require(descriptor >= 0)
            opened.append(descriptor)
        }
        let runs = 400
        let started = Atomic<Int>(0)
        let failures = ThreadGroup(count: 8) { _ in
            var failures: [String] = []
            while started.add(1, ordering: .relaxed).newValue <= runs {
                do {
                    let status = try runProgram(Self.truePath, []).status
                    if status != 0 { failures.append("exit status \(status)") }
                } catch {
                    failures.append("\(error)")
                }
            }
            return failures
        }.join().flatMap { $0 }
        #expect(failures.isEmpty, "\(failures.count) of \(runs) runs failed: \(failures.prefix(3))")
    }
}

/// The number of descriptors this process has open.
private func openDescriptors() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
}

/// The number of this process's open descriptors that are pipes.
private func openPipes() -> Int {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return names.count { name in
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + name))?.hasPrefix("pipe:")
            == true
    }
}
