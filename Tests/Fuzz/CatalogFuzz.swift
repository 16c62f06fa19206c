import ModalStackCore

/// Catalog loading: whatever loads serves a listing (`GET /v1/destinations`, ``Catalog/json``)
/// that loads back as the same catalog.
enum CatalogFuzz {
    static func check(_ input: [UInt8]) {
        guard let catalog = try? Catalog.load(input) else { return }
        var writer = JSONWriter()
        writer.write(catalog.json)
        switch Result(catching: { () throws(CatalogError) in try Catalog.load(writer.bytes) }) {
        case .success(let again) where again == catalog:
            break
        case .success:
            finding("the catalog's listing loads as another catalog", input: input)
        case .failure(let error):
            finding("the catalog's listing does not load: \(error)", input: input)
        }
    }
}

/// Payload-schema validation against a fuzzed catalog: a catalog, NUL, then a present or push body
/// whose destination and payload the catalog checks. The same request checks the same way twice.
enum PayloadSchemaFuzz {
    static func check(_ input: [UInt8]) {
        let (catalogBytes, bodyBytes) = splitAtNUL(input)
        guard let catalog = try? Catalog.load(Array(catalogBytes)), let body = try? JSONParser.parse(bodyBytes) else {
            return
        }
        let request: (destination: String, style: ModalStyle?, payload: JSONObject)
        if let present = try? PresentRequest(json: body) {
            request = (present.destination, present.style, present.payload)
        } else if let push = try? PushRequest(json: body) {
            request = (push.destination, nil, push.payload)
        } else {
            return
        }
        let errors = catalog.check(
            destination: request.destination, style: request.style, payload: request.payload, at: "")
        let again = catalog.check(
            destination: request.destination, style: request.style, payload: request.payload, at: "")
        guard errors == again else { finding("one request checked twice gives \(errors), then \(again)", input: input) }
        guard errors.allSatisfy({ $0.pointer.hasPrefix("/") }) else {
            finding("an error points nowhere: \(errors)", input: input)
        }
    }
}

/// Deep-link route matching: a catalog, NUL, then a link. A link that resolves opens on a new
/// session under that catalog without breaking the rules' invariants.
enum LinkFuzz {
    static func check(_ input: [UInt8]) {
        let (catalogBytes, linkBytes) = splitAtNUL(input)
        guard let catalog = try? Catalog.load(Array(catalogBytes)) else { return }
        let link = String(decoding: linkBytes, as: UTF8.self)
        guard let resolved = try? catalog.resolve(link) else { return }
        guard (try? catalog.resolve(link)) == resolved else { finding("one link resolves two ways", input: input) }
        let now = Timestamp(millisecondsSinceEpoch: 1_796_083_200_000)
        var nextID = 0
        let context = CommandContext(now: now, rules: SessionRules(), catalog: catalog) {
            nextID += 1
            return "p\(nextID)"
        }
        let session = Session.unwritten(id: "fuzz", at: now)
        guard let outcome = try? session.applying(.openLink(resolved), in: context), let change = outcome.change else {
            return
        }
        guard (try? session.applying(change)) == outcome.session else {
            finding("the link's change record does not replay to the session it made", input: input)
        }
    }
}
