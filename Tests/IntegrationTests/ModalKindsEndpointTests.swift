import Foundation
import ModalStackCore
import ModalStackHTTP
import ModalStackTestSupport
import Testing

/// The seeds' catalog, from the repository.
let seedsCatalogPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("../../scripts/seeds-catalog.json").standardized.path

@Suite("Modal kinds, the queue and results over HTTP")
struct ModalKindsEndpointTests {
    private func presentations(_ session: JSONValue?, _ field: String = "stack") -> [String] {
        session?[field]?.arrayValue?.compactMap { $0["destination"]?.stringValue } ?? []
    }

    @Test(
        "the multi-dialog screen: an alert over sheets queues what comes next, its answer goes back, the queue drains")
    func multiDialogScreen() throws {
        let server = try endpointServer()
        let client = server.client()
        let id = uniqueSessionID()
        let base = "/v1/sessions/\(id)"
        try client.call("POST", "\(base)/presentations", json: ["destination": "onboarding"])
        let alert = try client.call(
            "POST", "\(base)/presentations",
            json: [
                "destination": "deleteConfirm", "style": "alert", "title": "Delete the file?",
                "buttons": [
                    ["id": "delete", "label": "Delete", "role": "destructive"],
                    ["id": "cancel", "label": "Cancel", "role": "cancel"],
                ],
            ])
        #expect(alert.status == 201)
        let alertID = try #require(alert.json["presentation"]?["id"]?.stringValue)
        #expect(alert.json["presentation"]?["buttons"]?.arrayValue?.count == 2)

        let downloads = try client.call("POST", "\(base)/presentations", json: ["destination": "downloads"])
        #expect(downloads.status == 202)
        #expect(downloads.json["position"] == 0)
        #expect(downloads.json["presentation"]?["state"] == "queued")
        #expect(downloads.json["presentation"]?["presentedAt"] == .null)
        #expect(downloads.headers["Location"] != nil)
        #expect(presentations(downloads.json["session"], "queue") == ["downloads"])

        let rejected = try client.call(
            "POST", "\(base)/presentations", json: ["destination": "help", "whenBlocked": "reject"])
        #expect(rejected.status == 409)
        #expect(rejected.problemSlug == "alert-on-top")

        let wrongAnswer = try client.call("POST", "\(base)/dismiss", json: ["result": ["buttonId": "maybe"]])
        #expect(wrongAnswer.status == 422)
        #expect(wrongAnswer.errorPointers == ["/result/buttonId"])

        let answered = try client.call("POST", "\(base)/dismiss", json: ["result": ["buttonId": "delete"]])
        #expect(answered.status == 200)
        #expect(answered.json["dismissed"]?.arrayValue?.first?["result"] == ["buttonId": "delete"])
        #expect(presentations(answered.json["promoted"].map { ["stack": $0] }) == ["downloads"])
        #expect(presentations(answered.json["session"]) == ["onboarding", "downloads"])
        #expect(answered.json["session"]?["queue"] == [])

        let asked = try client.call("GET", "\(base)/presentations/\(alertID)")
        #expect(asked.status == 200)
        #expect(asked.json["state"] == "dismissed")
        #expect(asked.json["result"] == ["buttonId": "delete"])
    }

    @Test("a confirmation dialog dismissed without an answer records its cancel button")
    func cancelByDefault() throws {
        let server = try endpointServer()
        let client = server.client()
        let base = "/v1/sessions/\(uniqueSessionID())"
        let dialog = try client.call(
            "POST", "\(base)/presentations",
            json: [
                "destination": "shareOptions", "style": "confirmationDialog", "title": "Share",
                "buttons": [["id": "mail", "label": "Mail"], ["id": "dismiss", "label": "Cancel", "role": "cancel"]],
            ])
        let dialogID = try #require(dialog.json["presentation"]?["id"]?.stringValue)
        try client.call("DELETE", "\(base)/presentations/\(dialogID)")
        #expect(try client.call("GET", "\(base)/presentations/\(dialogID)").json["result"] == ["buttonId": "dismiss"])
    }

    @Test("a progress dialog updates in place with PATCH; completed past total is a 422")
    func progress() throws {
        let server = try endpointServer()
        let client = server.client()
        let base = "/v1/sessions/\(uniqueSessionID())"
        let sync = try client.call(
            "POST", "\(base)/presentations",
            json: ["destination": "sync", "style": "progress", "message": "Syncing", "total": 4])
        let syncID = try #require(sync.json["presentation"]?["id"]?.stringValue)
        #expect(sync.json["presentation"]?["completed"] == 0)
        let step = try client.call(
            "PATCH", "\(base)/presentations/\(syncID)", json: ["completed": 3, "message": "Almost"])
        #expect(step.status == 200)
        #expect(step.json["presentation"]?["completed"] == 3)
        #expect(step.json["presentation"]?["message"] == "Almost")
        #expect(step.json["session"]?["version"] == 2)
        #expect(step.json["session"]?["top"]?["id"] == .string(syncID))
        let over = try client.call("PATCH", "\(base)/presentations/\(syncID)", json: ["completed": 5])
        #expect(over.status == 422)
        #expect(over.errorPointers == ["/completed"])
        let sheet = try client.call("PATCH", "\(base)/presentations/\(syncID)", json: ["title": "x"])
        #expect(sheet.status == 422)
        #expect(try client.call("PATCH", "\(base)/presentations/unknown", json: ["completed": 1]).status == 404)
        #expect(try client.call("GET", base).json["version"] == 2)
    }

    @Test("a wrong field for a style is a 422 with its pointer")
    func wrongFieldForStyle() throws {
        let server = try endpointServer()
        let client = server.client()
        let base = "/v1/sessions/\(uniqueSessionID())"
        let buttonsOnSheet = try client.call(
            "POST", "\(base)/presentations", json: ["destination": "a", "buttons": [["id": "x", "label": "X"]]])
        #expect(buttonsOnSheet.status == 422)
        #expect(buttonsOnSheet.errorPointers == ["/buttons"])
        let detentsOnAlert = try client.call(
            "POST", "\(base)/presentations",
            json: ["destination": "a", "style": "alert", "title": "t", "detents": ["medium"]])
        #expect(detentsOnAlert.errorPointers == ["/detents"])
        let sheet = try client.call(
            "POST", "\(base)/presentations",
            json: ["destination": "a", "detents": ["medium", "fraction:0.3"], "interactiveDismissDisabled": true])
        #expect(sheet.json["presentation"]?["detents"] == ["medium", "fraction:0.3"])
    }

    @Test("a locked presentation is only dismissed with force")
    func locked() throws {
        let server = try endpointServer()
        let client = server.client()
        let base = "/v1/sessions/\(uniqueSessionID())"
        let paywall = try client.call(
            "POST", "\(base)/presentations",
            json: ["destination": "paywall", "style": "fullScreenCover", "locked": true])
        let paywallID = try #require(paywall.json["presentation"]?["id"]?.stringValue)
        let refused = try client.call("POST", "\(base)/dismiss", json: [:])
        #expect(refused.status == 409)
        #expect(refused.problemSlug == "locked")
        #expect(refused.json["presentationId"] == .string(paywallID))
        #expect(try client.call("DELETE", "\(base)/presentations/\(paywallID)").status == 409)
        #expect(try client.call("DELETE", "\(base)/presentations/\(paywallID)?force=maybe").status == 400)
        #expect(try client.call("DELETE", "\(base)/presentations/\(paywallID)?force=true").status == 200)
    }

    @Test("a full queue is a 409 queue-full", .enabled(if: ServerProcess.isLocal))
    func queueFull() throws {
        let server = try endpointServer(arguments: ["--max-depth", "1", "--queue-size", "1"])
        let client = server.client()
        let base = "/v1/sessions/\(uniqueSessionID())"
        #expect(try client.call("POST", "\(base)/presentations", json: ["destination": "a"]).status == 201)
        #expect(try client.call("POST", "\(base)/presentations", json: ["destination": "b"]).status == 202)
        let full = try client.call("POST", "\(base)/presentations", json: ["destination": "c"])
        #expect(full.status == 409)
        #expect(full.problemSlug == "queue-full")
    }
}

@Suite("The destination catalog over HTTP", .enabled(if: ServerProcess.isLocal, "starts servers with a catalog"))
struct CatalogEndpointTests {
    @Test("with the seeds' catalog, unknown destinations, wrong styles and bad payloads are 422s")
    func catalogValidation() throws {
        let server = try endpointServer(arguments: ["--catalog", seedsCatalogPath])
        let client = server.client()
        let base = "/v1/sessions/\(uniqueSessionID())"
        let unknown = try client.call("POST", "\(base)/presentations", json: ["destination": "nowhere"])
        #expect(unknown.status == 422)
        #expect(unknown.errorPointers == ["/destination"])
        #expect(unknown.json["errors"]?.arrayValue?.first?["detail"]?.stringValue?.contains("settings") == true)
        let style = try client.call(
            "POST", "\(base)/presentations", json: ["destination": "deleteConfirm", "style": "sheet"])
        #expect(style.errorPointers == ["/style"])
        let payload = try client.call(
            "POST", "\(base)/presentations", json: ["destination": "profile", "payload": ["userId": "me", "extra": 1]])
        #expect(Set(payload.errorPointers) == ["/payload/userId", "/payload/extra"])
        #expect(
            try client.call(
                "POST", "\(base)/presentations", json: ["destination": "profile", "payload": ["userId": 42]]
            ).status == 201)
        let destinations = try client.call("GET", "/v1/destinations")
        #expect(destinations.json["mode"] == "catalog")
        let names = destinations.json["destinations"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
        #expect(names.contains("sun") && names.contains("sync") && names.contains("help"))
    }

    @Test("without a catalog the service runs open")
    func openMode() throws {
        let server = try endpointServer()
        let response = try server.client().call("GET", "/v1/destinations")
        #expect(response.json == ["mode": "open", "destinations": []])
    }

    @Test("a bad catalog file stops the start naming the file and the place in it")
    func badCatalog() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("catalog.json")
        try Data(#"{"destinations": {"help": {"styles": ["bubble"]}}}"#.utf8).write(to: URL(fileURLWithPath: path))
        let (status, output) = try ServerProcess.runUntilExit(
            ["--port", "0", "--db", directory.appending("unused.sqlite"), "--catalog", path])
        #expect(status != 0)
        #expect(output.contains(path))
        #expect(output.contains("/destinations/help/styles"))
        #expect(output.contains("bubble"))
    }
}
