import Glibc
import ModalStackTestSupport
import Testing

@testable import ModalStackAPI

/// The access log's buffer, writing into a pipe the test reads.
@Suite("Log buffer")
struct LogBufferTests {
    /// A pipe whose read end never blocks.
    private final class Pipe {
        let readEnd: Int32
        let writeEnd: Int32

        init() throws {
            var descriptors: [Int32] = [0, 0]
            try #require(pipe(&descriptors) == 0)
            readEnd = descriptors[0]
            writeEnd = descriptors[1]
            _ = fcntl(readEnd, F_SETFL, fcntl(readEnd, F_GETFL) | O_NONBLOCK)
            // Room for more than one full buffer, so a flush never blocks the test (1031 is
            // F_SETPIPE_SZ, which Glibc does not export).
            _ = fcntl(writeEnd, 1031, 1 << 20)
        }

        deinit {
            close(readEnd)
            close(writeEnd)
        }

        /// Everything written so far and not read yet.
        func drain() -> [UInt8] {
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
                guard count > 0 else { return bytes }
                bytes += chunk[..<count]
            }
        }
    }

    @Test("lines wait for the flush, then come out whole and in order")
    func flushesOnItsOwn() throws {
        let pipe = try Pipe()
        let buffer = LogBuffer(descriptor: pipe.writeEnd)
        let lines = (0..<50).map { Array("line \($0)\n".utf8) }
        for line in lines { buffer.append(line) }
        var received: [UInt8] = []
        #expect(
            waitUntil {
                received += pipe.drain()
                return received.count == lines.joined().count
            })
        #expect(received == Array(lines.joined()))
    }

    @Test("a full buffer is written at once; flush writes what is pending")
    func fullAndExplicitFlush() throws {
        let pipe = try Pipe()
        // No timer flush during the test: only a full buffer and flush() write.
        let buffer = LogBuffer(descriptor: pipe.writeEnd, flushIntervalMilliseconds: 3_600_000)
        let line = [UInt8](repeating: UInt8(ascii: "x"), count: 1023) + [UInt8(ascii: "\n")]
        for _ in 0..<(LogBuffer.capacity / line.count) { buffer.append(line) }
        // The append that filled it wrote it, before any timer could.
        #expect(pipe.drain().count == LogBuffer.capacity)
        buffer.append(Array("last\n".utf8))
        buffer.flush()
        #expect(pipe.drain() == Array("last\n".utf8))
    }
}
