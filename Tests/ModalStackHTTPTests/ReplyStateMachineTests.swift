import Locking
import Testing

@testable import ModalStackHTTP

@Suite struct ReplyStateMachineTests {
    let first = HTTPResponse(status: 201, body: [1])
    let second = HTTPResponse(status: 500, body: [2])
    var firstAnswer: ReplyStateMachine.Answer { .response(first) }
    var secondAnswer: ReplyStateMachine.Answer { .response(second) }

    @Test func answerInsideRespondIsQueuedOnTheSameCall() {
        var machine = ReplyStateMachine()
        #expect(machine.send(firstAnswer) == .none)
        #expect(machine.isAnswered)
        #expect(machine.respondReturned() == .queue(firstAnswer))
        #expect(machine.state == .delivered)
    }

    @Test func noAnswerInsideRespondSuspendsThenTheSenderResumes() {
        var machine = ReplyStateMachine()
        #expect(machine.respondReturned() == .suspend)
        #expect(machine.suspendCompleted() == .none)
        #expect(machine.state == .suspended)
        #expect(!machine.isAnswered)
        #expect(machine.send(firstAnswer) == .resume(firstAnswer))
        #expect(machine.resumed() == firstAnswer)
        #expect(machine.state == .delivered)
    }

    @Test func answerWhileSuspendingMakesTheWorkerResume() {
        var machine = ReplyStateMachine()
        #expect(machine.respondReturned() == .suspend)
        #expect(machine.send(firstAnswer) == .none)
        #expect(machine.suspendCompleted() == .resume)
        #expect(machine.resumed() == firstAnswer)
    }

    @Test func theFirstSendWins() {
        var machine = ReplyStateMachine()
        #expect(machine.send(firstAnswer) == .none)
        #expect(machine.send(secondAnswer) == .ignored)
        #expect(machine.respondReturned() == .queue(firstAnswer))

        var suspended = ReplyStateMachine()
        _ = suspended.respondReturned()
        _ = suspended.suspendCompleted()
        #expect(suspended.send(firstAnswer) == .resume(firstAnswer))
        #expect(suspended.send(secondAnswer) == .ignored)
        #expect(suspended.resumed() == firstAnswer)
        #expect(suspended.send(secondAnswer) == .ignored)
    }

    @Test func sendAfterCloseIsIgnored() {
        var machine = ReplyStateMachine()
        _ = machine.respondReturned()
        _ = machine.suspendCompleted()
        _ = machine.close()
        #expect(machine.send(firstAnswer) == .ignored)
        #expect(machine.resumed() == nil)
        #expect(machine.state == .closed(answered: false))
        #expect(!machine.isAnswered)
    }

    @Test func closeAfterDeliveryRemembersTheAnswer() {
        var machine = ReplyStateMachine()
        _ = machine.send(firstAnswer)
        _ = machine.respondReturned()
        _ = machine.close()
        #expect(machine.state == .closed(answered: true))
        #expect(machine.isAnswered)
        #expect(machine.send(secondAnswer) == .ignored)
    }

    @Test func outOfOrderEventsAreRejected() {
        var machine = ReplyStateMachine()
        #expect(machine.resumed() == nil)
        #expect(machine.respondReturned() == .suspend)
        #expect(machine.respondReturned() == .fail)
        #expect(machine.suspendCompleted() == .none)
        #expect(machine.suspendCompleted() == .none)
        #expect(machine.state == .suspended)
    }

    @Test func aStartedStreamIsHandedBackOnceOnClose() {
        let stream = HTTPStream(onWrite: { _ in })
        let head = HTTPResponse(status: 200, headers: ["Content-Type": "text/event-stream"])
        var machine = ReplyStateMachine()
        #expect(machine.respondReturned() == .suspend)
        #expect(machine.suspendCompleted() == .none)
        #expect(machine.send(.stream(head: head, stream)) == .resume(.stream(head: head, stream)))
        #expect(machine.send(firstAnswer) == .ignored)
        #expect(machine.resumed() == .stream(head: head, stream))
        #expect(machine.close() === stream)
        #expect(machine.close() == nil)
        #expect(machine.state == .closed(answered: true))
    }

    @Test func aStreamAfterAResponseIsIgnored() {
        var machine = ReplyStateMachine()
        #expect(machine.send(firstAnswer) == .none)
        #expect(machine.send(.stream(head: first, HTTPStream(onWrite: { _ in }))) == .ignored)
        #expect(machine.respondReturned() == .queue(firstAnswer))
        #expect(machine.close() == nil)
    }

    @Test func answersCompareStreamsByIdentity() {
        let one = HTTPStream(onWrite: { _ in })
        let other = HTTPStream(onWrite: { _ in })
        #expect(ReplyStateMachine.Answer.stream(head: first, one) == .stream(head: first, one))
        #expect(ReplyStateMachine.Answer.stream(head: first, one) != .stream(head: first, other))
        #expect(ReplyStateMachine.Answer.stream(head: first, one) != .response(first))
    }

    @Test func detachedReplyCallsItsCallbackOnce() {
        let received = ResponseCollector()
        let reply = HTTPReply { received.append($0) }
        #expect(!reply.isAnswered)
        reply.send(first)
        reply.send(second)
        #expect(reply.isAnswered)
        #expect(received.all == [first])
    }

    @Test func addedHeadersGoWithTheResponseOrTheStreamHead() {
        let received = ResponseCollector()
        let reply = HTTPReply(onSend: { received.append($0) })
        reply.addHeaders(["Vary": "Origin"])
        reply.addHeaders(["Access-Control-Allow-Origin": "https://app.test"])
        reply.send(HTTPResponse(status: 200, headers: ["ETag": "\"1\""], body: [1]))
        #expect(
            received.all == [
                HTTPResponse(
                    status: 200,
                    headers: HTTPHeaders([
                        ("ETag", "\"1\""), ("Vary", "Origin"), ("Access-Control-Allow-Origin", "https://app.test"),
                    ]), body: [1])
            ])
        let streamed = ResponseCollector()
        let streamReply = HTTPReply(onSend: { streamed.append($0) })
        streamReply.addHeaders(["Vary": "Origin"])
        _ = streamReply.startStream(status: 200, headers: ["Content-Type": "text/event-stream"])
        #expect(
            streamed.all == [
                HTTPResponse(
                    status: 200, headers: HTTPHeaders([("Content-Type", "text/event-stream"), ("Vary", "Origin")]))
            ])
    }

    @Test func detachedReplyStreamsToItsCallbacks() {
        let received = ResponseCollector()
        let written = LockedValue<[UInt8]>([])
        let reply = HTTPReply(onSend: { received.append($0) }, onWrite: { bytes in written.withLock { $0 += bytes } })
        let stream = reply.startStream(status: 200, headers: ["Content-Type": "text/event-stream"])
        #expect(stream != nil)
        #expect(reply.isAnswered)
        #expect(reply.startStream(status: 200) == nil)
        reply.send(second)
        #expect(received.all == [HTTPResponse(status: 200, headers: ["Content-Type": "text/event-stream"])])
        #expect(stream?.write("data: 1\n\n") == true)
        #expect(stream?.write(Array("data: 2\n\n".utf8)) == true)
        let closes = LockedValue(0)
        stream?.onClose { closes.withLock { $0 += 1 } }
        stream?.close()
        stream?.close()
        #expect(stream?.write("late") == false)
        #expect(stream?.isClosed == true)
        #expect(written.withLock { $0 } == Array("data: 1\n\ndata: 2\n\n".utf8))
        #expect(closes.withLock { $0 } == 1)
        stream?.onClose { closes.withLock { $0 += 1 } }
        #expect(closes.withLock { $0 } == 2)
    }
}
