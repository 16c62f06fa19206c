@testable import ModalStackHTTP
import Testing

@Suite struct ReplyStateMachineTests {
    let first = HTTPResponse(status: 201, body: [1])
    let second = HTTPResponse(status: 500, body: [2])

    @Test func answerInsideRespondIsQueuedOnTheSameCall() {
        var machine = ReplyStateMachine()
        #expect(machine.send(first) == .none)
        #expect(machine.isAnswered)
        #expect(machine.respondReturned() == .queue(first))
        #expect(machine.state == .delivered)
    }

    @Test func noAnswerInsideRespondSuspendsThenTheSenderResumes() {
        var machine = ReplyStateMachine()
        #expect(machine.respondReturned() == .suspend)
        #expect(machine.suspendCompleted() == .none)
        #expect(machine.state == .suspended)
        #expect(!machine.isAnswered)
        #expect(machine.send(first) == .resume(first))
        #expect(machine.resumed() == first)
        #expect(machine.state == .delivered)
    }

    @Test func answerWhileSuspendingMakesTheWorkerResume() {
        var machine = ReplyStateMachine()
        #expect(machine.respondReturned() == .suspend)
        #expect(machine.send(first) == .none)
        #expect(machine.suspendCompleted() == .resume)
        #expect(machine.resumed() == first)
    }

    @Test func theFirstSendWins() {
        var machine = ReplyStateMachine()
        #expect(machine.send(first) == .none)
        #expect(machine.send(second) == .none)
        #expect(machine.respondReturned() == .queue(first))

        var suspended = ReplyStateMachine()
        _ = suspended.respondReturned()
        _ = suspended.suspendCompleted()
        #expect(suspended.send(first) == .resume(first))
        #expect(suspended.send(second) == .none)
        #expect(suspended.resumed() == first)
        #expect(suspended.send(second) == .none)
    }

    @Test func sendAfterCloseIsIgnored() {
        var machine = ReplyStateMachine()
        _ = machine.respondReturned()
        _ = machine.suspendCompleted()
        machine.close()
        #expect(machine.send(first) == .none)
        #expect(machine.resumed() == nil)
        #expect(machine.state == .closed(answered: false))
        #expect(!machine.isAnswered)
    }

    @Test func closeAfterDeliveryRemembersTheAnswer() {
        var machine = ReplyStateMachine()
        _ = machine.send(first)
        _ = machine.respondReturned()
        machine.close()
        #expect(machine.state == .closed(answered: true))
        #expect(machine.isAnswered)
        #expect(machine.send(second) == .none)
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

    @Test func detachedReplyCallsItsCallbackOnce() {
        let received = ResponseCollector()
        let reply = HTTPReply { received.append($0) }
        #expect(!reply.isAnswered)
        reply.send(first)
        reply.send(second)
        #expect(reply.isAnswered)
        #expect(received.all == [first])
    }
}
