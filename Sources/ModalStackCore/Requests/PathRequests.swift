/// A screen to push: `{destination, payload?, key?, level?}` (`POST …/path`), or one entry of a
/// path in a navigation, which names no level.
public struct PushRequest: Sendable, Hashable {
    public var destination: String
    public var payload: JSONObject
    /// Identity within the path; defaults to the destination name.
    public var key: String
    /// The level to push onto; nil: the top-most container on the stack, else the root.
    public var level: NavigationLevel?

    public init(destination: String, payload: JSONObject = [:], key: String? = nil, level: NavigationLevel? = nil) {
        self.destination = destination
        self.payload = payload
        self.key = key ?? destination
        self.level = level
    }

    /// Decodes a push body (`allowsLevel`) or one entry of a navigation's path at `pointer`.
    public init(json: JSONValue, at pointer: String = "", allowsLevel: Bool = true) throws(ModalError) {
        var reader = try FieldReader(json, at: pointer)
        let destination = reader.destination()
        let payload = reader.payload()
        let key = reader.text("key", maxLength: Identifiers.keyMaxLength)
        let level = allowsLevel ? reader.text("level", maxLength: Identifiers.keyMaxLength) : nil
        reader.rejectUnknownMembers()
        guard reader.errors.isEmpty, let destination else { throw .validation(reader.errors) }
        self.init(destination: destination, payload: payload, key: key, level: level.map(NavigationLevel.init(name:)))
    }

    /// Decodes a path of a navigation at `pointer`, reporting each bad entry and each key used twice.
    static func path(_ elements: [JSONValue], at pointer: String, errors: inout [ModalError.FieldError])
        -> [PushRequest]
    {
        var entries: [PushRequest] = []
        var firstIndexOfKey: [String: Int] = [:]
        for (index, element) in elements.enumerated() {
            do {
                let entry = try PushRequest(json: element, at: "\(pointer)/\(index)", allowsLevel: false)
                if let first = firstIndexOfKey[entry.key] {
                    errors.append(
                        .init(
                            pointer: "\(pointer)/\(index)/key",
                            message: "key \"\(entry.key)\" is already used by \(pointer)/\(first)"))
                } else {
                    firstIndexOfKey[entry.key] = index
                }
                entries.append(entry)
            } catch {
                errors += error.fieldErrors
            }
        }
        return entries
    }
}

/// Which entries a pop removes from its level's path, top-most first.
public enum PopTarget: Sendable, Hashable {
    /// The last entry: `{}`.
    case top
    /// The last `n` entries: `{"count": n}`.
    case count(Int)
    /// Every entry after this one, which stays: `{"to": id}`.
    case above(entryID: String)
    /// The whole path, back to the level's own screen: `{"all": true}`.
    case all
}

/// The body of `POST …/path/pop`: `{level?, count? | to? | all?, result?}`.
public struct PopRequest: Sendable, Hashable {
    public var level: NavigationLevel?
    public var target: PopTarget
    /// Handed back for the top-most entry popped, in its `popped` event.
    public var result: JSONValue?

    public init(_ target: PopTarget = .top, level: NavigationLevel? = nil, result: JSONValue? = nil) {
        self.target = target
        self.level = level
        self.result = result
    }

    public init(json: JSONValue) throws(ModalError) {
        var reader = try FieldReader(json, at: "")
        let level = reader.text("level", maxLength: Identifiers.keyMaxLength)
        let count = reader.integer("count", in: 1...DismissRequest.maxCount)
        let to = reader.string("to")
        let all = reader.bool("all")
        if all == false {
            reader.fail("all", "must be true when present")
        }
        let result = reader.result()
        reader.rejectUnknownMembers()
        if [count != nil, to != nil, all == true].filter({ $0 }).count > 1 {
            reader.failObject("give at most one of count, to and all")
        }
        guard reader.errors.isEmpty else { throw .validation(reader.errors) }
        let target: PopTarget =
            if let count { .count(count) } else if let to { .above(entryID: to) } else if all == true { .all } else {
                .top
            }
        self.init(target, level: level.map(NavigationLevel.init(name:)), result: result)
    }
}

/// A whole navigation to go to in one change: the root path and the stack of modals with their
/// paths (`PUT …/navigation`). A path that is nil keeps the one the level has (`PUT …/stack`
/// keeps every path of the modals it keeps, and the root's).
public struct NavigationRequest: Sendable, Hashable {
    public struct Modal: Sendable, Hashable {
        public var present: PresentRequest
        /// Nil: the path the modal has if it is kept, else none.
        public var path: [PushRequest]?

        public init(_ present: PresentRequest, path: [PushRequest]? = nil) {
            self.present = present
            self.path = path
        }
    }

    /// Nil: the root keeps its path.
    public var path: [PushRequest]?
    public var stack: [Modal]
    /// Remove locked presentations too.
    public var force: Bool

    public init(path: [PushRequest]?, stack: [Modal], force: Bool = false) {
        self.path = path
        self.stack = stack
        self.force = force
    }

    /// Decodes `{"path": [...], "stack": [...], "force"?}`: each bad field, each key used twice
    /// (in the stack, or within a path), an alert-like entry anywhere but last or with a path.
    public init(json: JSONValue) throws(ModalError) {
        var reader = try FieldReader(json, at: "")
        let pathElements = reader.array("path", required: true) ?? []
        let stackElements = reader.array("stack", required: true) ?? []
        let force = reader.bool("force") ?? false
        reader.rejectUnknownMembers()
        var errors = reader.errors
        let path = PushRequest.path(pathElements, at: "/path", errors: &errors)
        var modals: [Modal] = []
        var stack = ModalListReader()
        for (index, element) in stackElements.enumerated() {
            let pointer = "/stack/\(index)"
            var modalPath: [PushRequest] = []
            var presentJSON = element
            if var object = element.objectValue, let pathValue = object["path"] {
                object["path"] = nil
                presentJSON = .object(object)
                if let elements = pathValue.arrayValue {
                    modalPath = PushRequest.path(elements, at: pointer + "/path", errors: &errors)
                } else {
                    errors.append(
                        .init(pointer: pointer + "/path", message: "expected an array, got \(pathValue.typeName)"))
                }
            }
            guard let present = stack.read(presentJSON, index: index, count: stackElements.count, errors: &errors)
            else { continue }
            if present.style.isAlertLike, element.objectValue?["path"] != nil {
                errors.append(
                    .init(pointer: pointer + "/path", message: "an alert-like presentation has no path"))
            }
            modals.append(Modal(present, path: modalPath))
        }
        guard errors.isEmpty else { throw .validation(errors) }
        self.init(path: path, stack: modals, force: force)
    }
}

/// The body of `POST …/links`: `{"url": "…"}`.
public struct LinkRequest: Sendable, Hashable {
    public var url: String

    public init(url: String) {
        self.url = url
    }

    public init(json: JSONValue) throws(ModalError) {
        var reader = try FieldReader(json, at: "")
        let url = reader.string("url", required: true)
        reader.rejectUnknownMembers()
        guard reader.errors.isEmpty, let url else { throw .validation(reader.errors) }
        self.init(url: url)
    }
}

/// Reads the presentations of a stack given whole (`PUT …/stack`, `PUT …/navigation`): each
/// bad field, each key used twice, an alert-like entry anywhere but last. One place for the rule.
struct ModalListReader {
    private var firstIndexOfKey: [String: Int] = [:]

    mutating func read(_ element: JSONValue, index: Int, count: Int, errors: inout [ModalError.FieldError])
        -> PresentRequest?
    {
        let pointer = "/stack/\(index)"
        do {
            let request = try PresentRequest(json: element, at: pointer)
            if let first = firstIndexOfKey[request.key] {
                errors.append(
                    .init(
                        pointer: pointer + "/key", message: "key \"\(request.key)\" is already used by /stack/\(first)")
                )
            } else {
                firstIndexOfKey[request.key] = index
            }
            if request.style.isAlertLike, index != count - 1 {
                errors.append(
                    .init(pointer: pointer + "/style", message: "an alert-like presentation must be the last entry"))
            }
            return request
        } catch {
            errors += error.fieldErrors
            return nil
        }
    }
}

extension FieldReader {
    /// The `destination` member: required, and a valid destination name.
    mutating func destination() -> String? {
        let destination = string("destination", required: true)
        if let destination, !Identifiers.isValidDestination(destination) {
            fail(
                "destination",
                "must be 1-\(Identifiers.destinationMaxLength) characters matching ^[A-Za-z][A-Za-z0-9._-]*$")
            return nil
        }
        return destination
    }

    /// The `payload` member: an object within the payload limit; absent is empty.
    mutating func payload() -> JSONObject {
        let payload = object("payload") ?? [:]
        if let size = PresentRequest.oversize(.object(payload)) {
            fail("payload", "is \(size) bytes; the limit is \(PresentRequest.maxPayloadBytes) bytes")
        }
        return payload
    }

    /// The `result` member handed back by a dismiss or a pop: any JSON within the payload limit;
    /// `null` reads as absent.
    mutating func result() -> JSONValue? {
        guard let result = value("result"), !result.isNull else { return nil }
        if let size = PresentRequest.oversize(result) {
            fail("result", "is \(size) bytes; the limit is \(PresentRequest.maxPayloadBytes) bytes")
        }
        return result
    }
}
