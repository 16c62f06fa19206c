import Foundation
import ModalStackCore
import ModalStackHTTP
import ModalStackTestSupport
import Testing

@Suite("Presentations over HTTP")
struct PresentationEndpointTests {
    @Test("the seeds' story: settings, help on top with a payload, dismiss")
    func seedsStory() throws {
        let server = try endpointServer()
        let client = server.client()
        let id = uniqueSessionID()
        let settings = try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "settings"])
        #expect(settings.status == 201)
        let settingsID = try #require(settings.json["presentation"]?["id"]?.stringValue)
        #expect(settings.headers["Location"] == "/v1/sessions/\(id)/presentations/\(settingsID)")
        #expect(settings.json["presentation"]?["style"] == "sheet")
        #expect(settings.json["presentation"]?["key"] == "settings")
        #expect(settings.json["presentation"]?["payload"] == [:])
        #expect(settings.json["session"]?["version"] == 1)

        let help = try client.call(
            "POST", "/v1/sessions/\(id)/presentations",
            json: ["destination": "help", "style": "fullScreenCover", "payload": ["text": "How can we help?"]])
        #expect(help.status == 201)
        let session = try #require(help.json["session"])
        #expect(session["version"] == 2)
        #expect(session["stack"]?.arrayValue?.compactMap { $0["destination"]?.stringValue } == ["settings", "help"])
        #expect(session["top"]?["payload"]?["text"] == "How can we help?")
        #expect(session["top"] == help.json["presentation"])

        let fetched = try client.call("GET", "/v1/sessions/\(id)/presentations/\(settingsID)")
        #expect(fetched.status == 200)
        #expect(fetched.json == settings.json["presentation"])

        let dismissed = try client.call("POST", "/v1/sessions/\(id)/dismiss", json: [:])
        #expect(dismissed.status == 200)
        #expect(dismissed.json["dismissed"]?.arrayValue?.count == 1)
        #expect(dismissed.json["dismissed"]?.arrayValue?.first?["destination"] == "help")
        #expect(dismissed.json["session"]?["top"]?["id"] == .string(settingsID))
        #expect(dismissed.json["session"]?["version"] == 3)
    }

    @Test("Prefer: return=minimal answers every change with its version and transition only, same status and tags")
    func minimalReturn() throws {
        let server = try endpointServer()
        let client = server.client()
        let id = uniqueSessionID()
        let minimal: HTTPHeaders = ["Prefer": "respond-async, return=minimal"]
        let presented = try client.call(
            "POST", "/v1/sessions/\(id)/presentations", json: ["destination": "settings"], headers: minimal)
        #expect(presented.status == 201)
        #expect(presented.headers["Preference-Applied"] == "return=minimal")
        #expect(presented.headers["ETag"] == "\"1\"")
        #expect(presented.headers["Location"]?.hasPrefix("/v1/sessions/\(id)/presentations/") == true)
        let settingsID = try #require(presented.headers["Location"]?.split(separator: "/").last.map(String.init))
        #expect(presented.json == ["version": 1, "transition": [["present": .string(settingsID)]]])

        // Every other change answers the same way; without the preference, the full answer.
        let alert: JSONValue = ["destination": "confirm", "style": "alert", "title": "Sure?"]
        #expect(try client.call("POST", "/v1/sessions/\(id)/presentations", json: alert).json["session"] != nil)
        let queued = try client.call(
            "POST", "/v1/sessions/\(id)/presentations", json: ["destination": "later"], headers: minimal)
        #expect(queued.status == 202)
        #expect(queued.json == ["version": 3, "transition": []])
        let updated = try client.call(
            "PATCH", "/v1/sessions/\(id)/presentations/\(settingsID)", json: ["payload": ["a": 1]], headers: minimal)
        #expect(updated.json == ["version": 4, "transition": []])
        let dismissed = try client.call("POST", "/v1/sessions/\(id)/dismiss", json: [:], headers: minimal)
        #expect(dismissed.status == 200)
        #expect(dismissed.json["version"] == 5)
        #expect(dismissed.json["transition"]?.arrayValue?.count == 2)  // the alert goes, the queued one comes
        #expect(dismissed.json["session"] == nil)
        let replaced = try client.call(
            "PUT", "/v1/sessions/\(id)/stack", json: ["stack": []], headers: ["Prefer": "return=minimal"])
        #expect(replaced.json["version"] == 6)
        #expect(replaced.headers["ETag"] == "\"6\"")
        // What the minimal answers skipped is all there.
        let session = try client.call("GET", "/v1/sessions/\(id)")
        #expect(session.json["version"] == 6)
        #expect(session.json["stack"] == [])
        // Any other return preference is the full answer, without Preference-Applied.
        let full = try client.call(
            "POST", "/v1/sessions/\(id)/presentations", json: ["destination": "help"],
            headers: ["Prefer": "return=representation"])
        #expect(full.json["session"]?["version"] == 7)
        #expect(full.headers["Preference-Applied"] == nil)

        // Creating a session is a change too; finding it changes nothing, in as few bytes.
        let other = uniqueSessionID()
        let created = try client.call("PUT", "/v1/sessions/\(other)", headers: minimal)
        #expect(created.status == 201)
        #expect(created.headers["Preference-Applied"] == "return=minimal")
        #expect(created.headers["Location"] == "/v1/sessions/\(other)")
        #expect(created.json == ["version": 1, "transition": []])
        let found = try client.call("PUT", "/v1/sessions/\(other)", headers: minimal)
        #expect(found.status == 200)
        #expect(found.json == ["version": 1, "transition": []])
        let made = try client.call("POST", "/v1/sessions", headers: minimal)
        #expect(made.status == 201)
        #expect(made.headers["Preference-Applied"] == "return=minimal")
        #expect(made.json == ["version": 1, "transition": []])
    }

    @Test("the same key on top updates in place (200); lower on the stack is a 409 that says where")
    func keys() throws {
        let server = try endpointServer()
        let client = server.client()
        let id = uniqueSessionID()
        let first = try client.call(
            "POST", "/v1/sessions/\(id)/presentations", json: ["destination": "help", "payload": ["text": "a"]])
        let updated = try client.call(
            "POST", "/v1/sessions/\(id)/presentations", json: ["destination": "help", "payload": ["text": "b"]])
        #expect(updated.status == 200)
        #expect(updated.json["presentation"]?["id"] == first.json["presentation"]?["id"])
        #expect(updated.json["session"]?["stack"]?.arrayValue?.count == 1)
        #expect(updated.json["session"]?["top"]?["payload"]?["text"] == "b")
        #expect(updated.json["session"]?["version"] == 2)
        try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "settings"])
        let conflict = try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "help"])
        #expect(conflict.status == 409)
        #expect(conflict.problemSlug == "already-presented")
        #expect(conflict.json["position"] == 0)
        #expect(conflict.json["presentationId"] == first.json["presentation"]?["id"])
        #expect(try client.call("GET", "/v1/sessions/\(id)").json["version"] == 3)
    }

    @Test("presenting past the maximum depth with whenBlocked reject is a 409 stack-full and changes nothing")
    func depth() throws {
        let server = try endpointServer(arguments: ServerProcess.isLocal ? ["--max-depth", "3"] : [])
        let client = server.client()
        let id = uniqueSessionID()
        let depth = ServerProcess.isLocal ? 3 : 8
        for index in 0..<depth {
            #expect(
                try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": .string("d\(index)")])
                    .status == 201)
        }
        let full = try client.call(
            "POST", "/v1/sessions/\(id)/presentations", json: ["destination": "overflow", "whenBlocked": "reject"])
        #expect(full.status == 409)
        #expect(full.problemSlug == "stack-full")
        #expect(full.json["maxDepth"] == JSONValue(depth))
        let state = try client.call("GET", "/v1/sessions/\(id)")
        #expect(state.json["version"] == JSONValue(depth))
        #expect(state.json["stack"]?.arrayValue?.count == depth)
    }

    @Test("dismiss by count, to, all, by DELETE; an empty stack is a 409")
    func dismissForms() throws {
        let server = try endpointServer()
        let client = server.client()
        let id = uniqueSessionID()
        var ids: [String] = []
        for name in ["a", "b", "c", "d", "e"] {
            let response = try client.call(
                "POST", "/v1/sessions/\(id)/presentations", json: ["destination": .string(name)])
            ids.append(try #require(response.json["presentation"]?["id"]?.stringValue))
        }
        let two = try client.call("POST", "/v1/sessions/\(id)/dismiss", json: ["count": 2])
        #expect(two.json["dismissed"]?.arrayValue?.compactMap { $0["destination"]?.stringValue } == ["e", "d"])
        let to = try client.call("POST", "/v1/sessions/\(id)/dismiss", json: ["to": .string(ids[0])])
        #expect(to.json["dismissed"]?.arrayValue?.compactMap { $0["destination"]?.stringValue } == ["c", "b"])
        #expect(to.json["session"]?["top"]?["id"] == .string(ids[0]))
        let gone = try client.call("GET", "/v1/sessions/\(id)/presentations/\(ids[2])")
        #expect(gone.status == 200)
        #expect(gone.json["state"] == "dismissed")
        #expect(gone.json["dismissedAt"]?.stringValue != nil)
        let unknown = try client.call("GET", "/v1/sessions/\(id)/presentations/nothing-here")
        #expect(unknown.status == 404)
        #expect(unknown.problemSlug == "presentation-not-found")
        let tooMany = try client.call("POST", "/v1/sessions/\(id)/dismiss", json: ["count": 2])
        #expect(tooMany.status == 409)
        #expect(tooMany.problemSlug == "nothing-to-dismiss")

        let f = try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "f"])
        let deleted = try client.call("DELETE", "/v1/sessions/\(id)/presentations/\(ids[0])")
        #expect(deleted.status == 200)
        let fID = try #require(f.json["presentation"]?["id"]?.stringValue)
        #expect(deleted.json["dismissed"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == [fID, ids[0]])
        #expect(deleted.json["session"]?["stack"] == [])
        let empty = try client.call("POST", "/v1/sessions/\(id)/dismiss")
        #expect(empty.status == 409)
        #expect(empty.problemSlug == "nothing-to-dismiss")
        #expect(try client.call("POST", "/v1/sessions/\(id)/dismiss", json: ["all": true]).status == 409)
        #expect(try client.call("DELETE", "/v1/sessions/\(id)/presentations/\(ids[0])").status == 409)
    }

    @Test("a dismissed presentation is refused as dismissed, a queued one as queued, where GET finds them")
    func dismissedAndQueuedAreNamed() throws {
        let server = try endpointServer()
        let client = server.client()
        let base = "/v1/sessions/\(uniqueSessionID())"
        let alert = try client.call(
            "POST", "\(base)/presentations",
            json: [
                "destination": "confirm", "style": "alert", "title": "Delete?",
                "buttons": [
                    ["id": "delete", "label": "Delete"], ["id": "cancel", "label": "Cancel", "role": "cancel"],
                ],
            ])
        let alertID = try #require(alert.json["presentation"]?["id"]?.stringValue)
        let queued = try client.call("POST", "\(base)/presentations", json: ["destination": "later"])
        #expect(queued.status == 202)
        let queuedID = try #require(queued.json["presentation"]?["id"]?.stringValue)

        let keepQueued = try client.call("POST", "\(base)/dismiss", json: ["to": .string(queuedID)])
        #expect(keepQueued.status == 409)
        #expect(keepQueued.problemSlug == "presentation-queued")
        #expect(keepQueued.json["presentationId"] == .string(queuedID))
        #expect(keepQueued.json["position"] == 0)
        #expect(try client.call("GET", "\(base)/presentations/\(queuedID)").json["state"] == "queued")

        let answer: JSONValue = ["presentation": .string(alertID), "result": ["buttonId": "delete"]]
        #expect(try client.call("POST", "\(base)/dismiss", json: answer).status == 200)
        let version = try client.call("GET", base).json["version"]
        let secondAnswer = try client.call(
            "POST", "\(base)/dismiss", json: ["presentation": .string(alertID), "result": ["buttonId": "cancel"]])
        #expect(secondAnswer.status == 409)
        #expect(secondAnswer.problemSlug == "presentation-dismissed")
        #expect(secondAnswer.json["presentationId"] == .string(alertID))
        #expect(secondAnswer.json["state"] == "dismissed")
        #expect(secondAnswer.json["detail"]?.stringValue?.contains("was dismissed at") == true)
        let deleted = try client.call("DELETE", "\(base)/presentations/\(alertID)")
        #expect(deleted.problemSlug == "presentation-dismissed")
        let patched = try client.call("PATCH", "\(base)/presentations/\(alertID)", json: ["payload": ["a": 1]])
        #expect(patched.status == 409)
        #expect(patched.problemSlug == "presentation-dismissed")
        let kept = try client.call("POST", "\(base)/dismiss", json: ["to": .string(alertID)])
        #expect(kept.problemSlug == "presentation-dismissed")

        let read = try client.call("GET", "\(base)/presentations/\(alertID)")
        #expect(read.status == 200)
        #expect(read.json["result"] == ["buttonId": "delete"])
        #expect(try client.call("GET", base).json["version"] == version)
        #expect(try client.call("DELETE", "\(base)/presentations/never-made").problemSlug == "presentation-not-found")
    }

    @Test("GET of a presentation is tagged with the session's version; If-None-Match with it is a 304")
    func presentationTags() throws {
        let server = try endpointServer()
        let client = server.client()
        let base = "/v1/sessions/\(uniqueSessionID())"
        let presented = try client.call("POST", "\(base)/presentations", json: ["destination": "settings"])
        let location = try #require(presented.headers["Location"])
        let read = try client.call("GET", location)
        #expect(read.headers["ETag"] == "\"1\"")
        let unchanged = try client.call("GET", location, headers: ["If-None-Match": "\"1\""])
        #expect(unchanged.status == 304)
        #expect(unchanged.raw.isEmpty)
        #expect(unchanged.headers["ETag"] == "\"1\"")
        try client.call("POST", "\(base)/presentations", json: ["destination": "help"])
        let changed = try client.call("GET", location, headers: ["If-None-Match": "\"1\""])
        #expect(changed.status == 200)
        #expect(changed.headers["ETag"] == "\"2\"")
        #expect(try client.call("GET", location, headers: ["If-None-Match": "\"1"]).status == 400)
    }

    @Test("dismiss all clears the stack in one version")
    func dismissAll() throws {
        let server = try endpointServer()
        let client = server.client()
        let id = uniqueSessionID()
        for name in ["a", "b", "c"] {
            try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": .string(name)])
        }
        let all = try client.call("POST", "/v1/sessions/\(id)/dismiss", json: ["all": true])
        #expect(all.status == 200)
        #expect(all.json["dismissed"]?.arrayValue?.count == 3)
        #expect(all.json["session"]?["stack"] == [])
        #expect(all.json["session"]?["version"] == 4)
    }

    @Test("PUT stack replaces it atomically, keeping the identity of the unchanged bottom")
    func replaceStack() throws {
        let server = try endpointServer()
        let client = server.client()
        let id = uniqueSessionID()
        let settings = try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "settings"])
        try client.call("POST", "/v1/sessions/\(id)/presentations", json: ["destination": "help"])
        let replaced = try client.call(
            "PUT", "/v1/sessions/\(id)/stack",
            json: ["stack": [["destination": "settings"], ["destination": "profile", "payload": ["user": 42]]]])
        #expect(replaced.status == 200)
        let stack = try #require(replaced.json["session"]?["stack"]?.arrayValue)
        #expect(stack.compactMap { $0["destination"]?.stringValue } == ["settings", "profile"])
        #expect(stack[0]["id"] == settings.json["presentation"]?["id"])
        #expect(stack[1]["payload"]?["user"] == 42)
        #expect(replaced.json["session"]?["version"] == 3)

        let duplicate = try client.call(
            "PUT", "/v1/sessions/\(id)/stack", json: ["stack": [["destination": "a"], ["destination": "a"]]])
        #expect(duplicate.status == 422)
        #expect(duplicate.errorPointers == ["/stack/1/key"])
        #expect(try client.call("GET", "/v1/sessions/\(id)").json["version"] == 3)

        let fresh = uniqueSessionID()
        let deepLink = try client.call(
            "PUT", "/v1/sessions/\(fresh)/stack", json: ["stack": [["destination": "onboarding"]]])
        #expect(deepLink.status == 200)
        #expect(deepLink.json["session"]?["version"] == 1)
    }
}
