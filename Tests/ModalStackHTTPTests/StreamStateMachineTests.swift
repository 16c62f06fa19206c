import Testing

@testable import ModalStackHTTP

/// The stream's transitions, driven without a socket: `read` stands for libmicrohttpd's reader.
@Suite struct StreamStateMachineTests {
    /// Reads like libmicrohttpd: into a buffer of `capacity` bytes; returns the bytes and the result.
    private func read(_ machine: inout StreamStateMachine, capacity: Int = 64) -> (
        [UInt8], StreamStateMachine.ReadResult
    ) {
        var storage = [UInt8](repeating: 0, count: capacity)
        let result = storage.withUnsafeMutableBytes { machine.read(into: $0) }
        if case .bytes(let count) = result { return (Array(storage[..<count]), result) }
        return ([], result)
    }

    @Test func writesAreReadInOrderAndCoalesced() {
        var machine = StreamStateMachine(bufferLimit: 1000)
        #expect(machine.write(Array("ab".utf8)) == .buffered)
        #expect(machine.write(Array("cd".utf8)) == .buffered)
        #expect(machine.write([]) == .buffered)
        #expect(machine.bufferedCount == 4)
        let (bytes, result) = read(&machine)
        #expect(result == .bytes(4))
        #expect(bytes == Array("abcd".utf8))
        #expect(machine.bufferedCount == 0)
        #expect(machine.state == .open)
    }

    @Test func readsTakeAtMostWhatFits() {
        var machine = StreamStateMachine(bufferLimit: 1000)
        _ = machine.write(Array(0..<10))
        #expect(read(&machine, capacity: 4).0 == [0, 1, 2, 3])
        #expect(read(&machine, capacity: 4).0 == [4, 5, 6, 7])
        _ = machine.write([10])
        #expect(read(&machine, capacity: 4).0 == [8, 9, 10])
        #expect(read(&machine).1 == .suspend)
    }

    @Test func anEmptyBufferSuspendsAndTheNextWriteResumes() {
        var machine = StreamStateMachine(bufferLimit: 1000)
        #expect(read(&machine).1 == .suspend)
        #expect(machine.state == .suspended)
        // Not asked again while suspended; if it were, 0 bytes and no second suspend.
        #expect(read(&machine).1 == .bytes(0))
        #expect(machine.write([]) == .buffered)
        #expect(machine.state == .suspended)
        #expect(machine.write([1]) == .resume)
        #expect(machine.state == .open)
        #expect(machine.write([2]) == .buffered)
        #expect(read(&machine).0 == [1, 2])
    }

    @Test func closeSendsTheRestThenEndsTheBody() {
        var machine = StreamStateMachine(bufferLimit: 1000)
        _ = machine.write([1, 2])
        #expect(machine.close() == .closed(resume: false))
        #expect(machine.isClosed)
        #expect(machine.write([3]) == .rejected)
        #expect(machine.close() == .none)
        #expect(read(&machine).0 == [1, 2])
        #expect(read(&machine).1 == .endOfStream)
        #expect(machine.state == .ended)
        #expect(machine.finish() == .none)
        #expect(machine.state == .finished)
    }

    @Test func closeWhileSuspendedResumes() {
        var machine = StreamStateMachine(bufferLimit: 1000)
        #expect(read(&machine).1 == .suspend)
        #expect(machine.close() == .closed(resume: true))
        #expect(read(&machine).1 == .endOfStream)
    }

    @Test func passingTheLimitDropsTheBufferAndFailsTheBody() {
        var machine = StreamStateMachine(bufferLimit: 10)
        #expect(machine.write(Array(repeating: 1, count: 6)) == .buffered)
        #expect(machine.write(Array(repeating: 2, count: 4)) == .buffered)
        #expect(machine.bufferedCount == 10)
        #expect(machine.write([3]) == .overflowed(wasSuspended: false))
        #expect(machine.bufferedCount == 0)
        #expect(machine.isClosed)
        #expect(machine.write([4]) == .rejected)
        #expect(machine.close() == .none)
        #expect(read(&machine).1 == .endWithError)
        #expect(machine.state == .ended)
        #expect(read(&machine).1 == .endWithError)
    }

    @Test func theLimitCountsOnlyUnsentBytes() {
        var machine = StreamStateMachine(bufferLimit: 10)
        for _ in 0..<100 {
            #expect(machine.write(Array(repeating: 7, count: 8)) == .buffered)
            #expect(read(&machine, capacity: 8).0.count == 8)
        }
        #expect(machine.state == .open)
    }

    @Test func oneWriteOverTheLimitWhileSuspended() {
        var machine = StreamStateMachine(bufferLimit: 10)
        #expect(read(&machine).1 == .suspend)
        #expect(machine.write(Array(repeating: 1, count: 11)) == .overflowed(wasSuspended: true))
        #expect(read(&machine).1 == .endWithError)
    }

    @Test func hangUpCountsOnlyWhileSuspended() {
        var open = StreamStateMachine(bufferLimit: 10)
        #expect(open.hangUp() == .none)
        #expect(!open.isClosed)

        var machine = StreamStateMachine(bufferLimit: 10)
        #expect(read(&machine).1 == .suspend)
        #expect(machine.hangUp() == .closed(resume: true))
        #expect(machine.isClosed)
        #expect(machine.hangUp() == .none)
        #expect(machine.write([1]) == .rejected)
        #expect(read(&machine).1 == .endWithError)
    }

    @Test func finishClosesAnOpenStreamOnceAndAbsorbsEverything() {
        var machine = StreamStateMachine(bufferLimit: 10)
        _ = machine.write([1])
        #expect(machine.finish() == .closed(resume: false))
        #expect(machine.bufferedCount == 0)
        #expect(machine.finish() == .none)
        #expect(machine.write([2]) == .rejected)
        #expect(machine.close() == .none)
        #expect(machine.hangUp() == .none)
        #expect(read(&machine).1 == .endWithError)
        #expect(machine.state == .finished)
    }

    @Test func finishAfterCloseDoesNotCloseAgain() {
        var machine = StreamStateMachine(bufferLimit: 10)
        #expect(read(&machine).1 == .suspend)
        #expect(machine.close() == .closed(resume: true))
        #expect(machine.finish() == .none)
    }

    @Test func largeBuffersAreCompactedWithoutLosingBytes() {
        var machine = StreamStateMachine(bufferLimit: 1 << 20)
        var expected: [UInt8] = []
        var received: [UInt8] = []
        for round in 0..<40 {
            let bytes = (0..<7000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ round) }
            expected += bytes
            #expect(machine.write(bytes) == .buffered)
            received += read(&machine, capacity: 5000).0
        }
        while case (let bytes, .bytes) = read(&machine, capacity: 5000) { received += bytes }
        #expect(received == expected)
        #expect(machine.state == .suspended)
    }

    @Test func deliveredBytesCountWhatTheReaderTookNotWhatWasDropped() {
        var machine = StreamStateMachine(bufferLimit: 1000)
        _ = machine.write(Array(0..<10))
        _ = read(&machine, capacity: 4)
        #expect(machine.deliveredCount == 4)
        _ = read(&machine)
        #expect(machine.deliveredCount == 10)
        _ = machine.write(Array(0..<5))
        #expect(machine.deliveredCount == 10)
        _ = machine.finish()
        #expect(machine.deliveredCount == 10)
    }
}
