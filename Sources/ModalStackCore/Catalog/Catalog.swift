/// The destinations an app declares: the cases of its navigation enum, each with the styles it may
/// be shown in and the shape of its payload (the case's associated values).
///
/// A catalog file is one JSON object:
///
/// ```json
/// {
///   "destinations": {
///     "settings": { "styles": ["sheet", "fullScreenCover"], "summary": "App settings" },
///     "help": {
///       "styles": ["sheet"],
///       "payload": {
///         "type": "object",
///         "properties": { "text": { "type": "string", "maxLength": 500 } },
///         "required": ["text"],
///         "additionalProperties": false
///       }
///     },
///     "deleteConfirm": { "styles": ["alert"] }
///   }
/// }
/// ```
///
/// - `destinations` (required, at least one): each destination's entry by its name; names follow
///   ``Identifiers/isValidDestination(_:)``.
/// - `styles` (optional): the ``ModalStyle`` names the destination may be presented with, and
///   `push` if it may be pushed onto a path, without duplicates; every style and `push` when absent.
/// - `payload` (optional): a ``PayloadSchema`` for the present's payload; its `type`, if given,
///   must be or include `object`, since payloads are objects. Without it any payload is accepted.
/// - `summary` (optional): a sentence for people.
///
/// - `routes` (optional): the deep links the catalog resolves, matched in order (``Route``).
///
/// `destinations` may also be an array of entries that each carry their `name` — the form ``json``
/// writes — so that a catalog's ``json`` loads back as an equal catalog.
///
/// Loading is strict: a member the format does not define is an error, as is anything of the wrong
/// type; ``CatalogError`` names the JSON pointer of the fault inside the file.
public struct Catalog: Sendable, Hashable {
    /// One declared destination.
    public struct Destination: Sendable, Hashable {
        public let name: String
        /// The styles it may be presented with, in file order.
        public let styles: [ModalStyle]
        /// Whether it may be pushed onto a path (`push` among its styles).
        public let allowsPush: Bool
        /// The shape its payload must have; nil when any payload is accepted.
        public let payloadSchema: PayloadSchema?
        /// A sentence for people.
        public let summary: String?

        /// Makes a destination as given: the name rule and a non-empty `styles` are checked only
        /// when loading from JSON.
        public init(
            name: String, styles: [ModalStyle] = ModalStyle.allCases, allowsPush: Bool = true,
            payloadSchema: PayloadSchema? = nil, summary: String? = nil
        ) {
            self.name = name
            self.styles = styles
            self.allowsPush = allowsPush
            self.payloadSchema = payloadSchema
            self.summary = summary
        }

        /// The name that allows pushing in a destination's `styles`.
        public static let pushStyle = "push"

        /// This destination as one entry of ``Catalog/json``: `name`, `styles`, then `payload` and
        /// `summary` when present.
        public var json: JSONValue {
            let styleNames = styles.map(\.rawValue) + (allowsPush ? [Self.pushStyle] : [])
            var entry: JSONObject = ["name": .string(name), "styles": .array(styleNames.map { .string($0) })]
            if let payloadSchema {
                entry.append("payload", payloadSchema.json)
            }
            if let summary {
                entry.append("summary", .string(summary))
            }
            return .object(entry)
        }
    }

    /// Every destination, sorted by name.
    public let destinations: [Destination]
    private let destinationsByName: [String: Destination]
    /// The deep links it resolves, in the order they are tried.
    public private(set) var routes: [Route] = []

    /// Makes a catalog of `destinations`, whose names must be distinct.
    public init(destinations: [Destination]) {
        self.destinations = destinations.sorted { $0.name < $1.name }
        destinationsByName = Dictionary(uniqueKeysWithValues: destinations.map { ($0.name, $0) })
    }

    /// Reads a catalog file's bytes (UTF-8 JSON).
    public static func load(_ bytes: [UInt8]) throws(CatalogError) -> Catalog {
        let json: JSONValue
        do {
            json = try JSONParser.parse(bytes)
        } catch {
            throw CatalogError(path: "", message: "invalid JSON: \(error)")
        }
        return try Catalog(json: json)
    }

    /// Reads a parsed catalog file, in either form described on ``Catalog``.
    public init(json: JSONValue) throws(CatalogError) {
        guard let root = json.objectValue else {
            throw CatalogError(path: "", message: "expected an object, got \(json.typeName)")
        }
        for key in root.keys where key != "destinations" && key != "routes" {
            throw CatalogError(
                path: "/" + JSONPointer.escape(key),
                message:
                    "unknown member \(JSONValue.string(key).jsonText); the members are \"destinations\" and \"routes\"")
        }
        let destinations: [Destination]
        switch root["destinations"] {
        case nil:
            throw CatalogError(path: "/destinations", message: "is required")
        case .object(let entries)?:
            destinations = try Self.destinations(byName: entries)
        case .array(let entries)?:
            destinations = try Self.destinations(listed: entries)
        case let other?:
            throw CatalogError(path: "/destinations", message: "expected an object, got \(other.typeName)")
        }
        guard !destinations.isEmpty else {
            throw CatalogError(path: "/destinations", message: "must declare at least one destination")
        }
        self.init(destinations: destinations)
        if let routes = root["routes"] {
            self.routes = try loadRoutes(routes)
        }
    }

    /// The destination with this name, if declared.
    public func destination(named name: String) -> Destination? {
        destinationsByName[name]
    }

    /// Checks a present or a push against the catalog.
    /// - Parameters:
    ///   - destination: The destination name the present asks for.
    ///   - style: The style it asks for; nil for a push onto a path.
    ///   - payload: Its payload; nil checks the name and the style alone (a route's template).
    ///   - pointer: The JSON pointer of the present in its request body: empty for a present
    ///     request, `/stack/2` for an element of a stack replacement.
    /// - Returns: Empty when the present is allowed. An unknown destination gives one error at
    ///   `<pointer>/destination` listing the known names; otherwise a style the destination does not
    ///   allow gives an error at `<pointer>/style` listing the allowed ones (a push of a destination
    ///   that does not allow `push`, at `<pointer>/destination`), and every payload violation one
    ///   error under `<pointer>/payload`.
    public func check(destination name: String, style: ModalStyle?, payload: JSONObject?, at pointer: String)
        -> [ModalError.FieldError]
    {
        guard let destination = destination(named: name) else {
            let known = destinations.map(\.name).joined(separator: ", ")
            return [
                ModalError.FieldError(
                    pointer: pointer + "/destination",
                    message: "unknown destination \(JSONValue.string(name).jsonText); known destinations: \(known)")
            ]
        }
        var errors: [ModalError.FieldError] = []
        let allowed = {
            (destination.styles.map(\.rawValue) + (destination.allowsPush ? ["push"] : [])).joined(separator: ", ")
        }
        if let style, !destination.styles.contains(style) {
            errors.append(
                ModalError.FieldError(
                    pointer: pointer + "/style",
                    message: "style \"\(style.rawValue)\" is not allowed for \"\(name)\"; allowed styles: \(allowed())")
            )
        } else if style == nil, !destination.allowsPush {
            errors.append(
                ModalError.FieldError(
                    pointer: pointer + "/destination",
                    message: "\"\(name)\" cannot be pushed (its styles do not list push); allowed styles: \(allowed())")
            )
        }
        if let payload, let payloadSchema = destination.payloadSchema {
            errors += payloadSchema.validate(.object(payload), at: pointer + "/payload")
        }
        return errors
    }

    /// The catalog in its listing form: `{"destinations": [entry, …], "routes"?: [route, …]}`,
    /// destinations by name, each as ``Destination/json``, routes as declared. ``init(json:)``
    /// reads it back as an equal catalog; `GET /v1/destinations` serves its destinations.
    public var json: JSONValue {
        var object: JSONObject = ["destinations": .array(destinations.map(\.json))]
        if !routes.isEmpty {
            object.append("routes", .array(routes.map(\.declared)))
        }
        return .object(object)
    }

    // The index follows from `destinations`, so they and the routes alone decide equality.
    public static func == (lhs: Catalog, rhs: Catalog) -> Bool {
        lhs.destinations == rhs.destinations && lhs.routes == rhs.routes
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(destinations)
        hasher.combine(routes)
    }
}

// MARK: - Loading

extension Catalog {
    private static let entryMembers = ["styles", "payload", "summary"]

    /// Reads the file form, `{"destinations": {name: entry, …}}`.
    private static func destinations(byName entries: JSONObject) throws(CatalogError) -> [Destination] {
        var destinations: [Destination] = []
        for member in entries.members {
            let path = "/destinations/" + JSONPointer.escape(member.key)
            guard Identifiers.isValidDestination(member.key) else {
                throw CatalogError(path: path, message: invalidNameMessage(member.key))
            }
            guard let entry = member.value.objectValue else {
                throw CatalogError(path: path, message: "expected an object, got \(member.value.typeName)")
            }
            destinations.append(try Destination(name: member.key, entry: entry, path: path, knownMembers: entryMembers))
        }
        return destinations
    }

    /// Reads the listing form that ``json`` writes, `{"destinations": [{"name": …, …}, …]}`.
    private static func destinations(listed entries: [JSONValue]) throws(CatalogError) -> [Destination] {
        var destinations: [Destination] = []
        var names: Set<String> = []
        for (index, element) in entries.enumerated() {
            let path = "/destinations/\(index)"
            guard let entry = element.objectValue else {
                throw CatalogError(path: path, message: "expected an object, got \(element.typeName)")
            }
            guard let nameValue = entry["name"] else {
                throw CatalogError(path: path + "/name", message: "is required")
            }
            guard let name = nameValue.stringValue else {
                throw CatalogError(path: path + "/name", message: "expected a string, got \(nameValue.typeName)")
            }
            guard Identifiers.isValidDestination(name) else {
                throw CatalogError(path: path + "/name", message: invalidNameMessage(name))
            }
            guard names.insert(name).inserted else {
                throw CatalogError(path: path + "/name", message: "duplicate destination \"\(name)\"")
            }
            destinations.append(
                try Destination(name: name, entry: entry, path: path, knownMembers: ["name"] + entryMembers))
        }
        return destinations
    }

    private static func invalidNameMessage(_ name: String) -> String {
        "\(JSONValue.string(name).jsonText) is not a valid destination name: it must be "
            + "1-\(Identifiers.destinationMaxLength) characters matching ^[A-Za-z][A-Za-z0-9._-]*$"
    }
}

extension Catalog.Destination {
    /// Reads one entry at `path` in the file; `name` has been read and checked.
    fileprivate init(name: String, entry: JSONObject, path: String, knownMembers: [String]) throws(CatalogError) {
        for key in entry.keys where !knownMembers.contains(key) {
            let known = knownMembers.joined(separator: ", ")
            throw CatalogError(
                path: path + "/" + JSONPointer.escape(key),
                message: "unknown member \(JSONValue.string(key).jsonText); known members: \(known)")
        }
        let (styles, allowsPush) = try Self.styles(entry["styles"], path: path + "/styles")

        var payloadSchema: PayloadSchema?
        if let payload = entry["payload"] {
            let schema = try PayloadSchema(json: payload, path: path + "/payload")
            guard schema.acceptsObjects else {
                throw CatalogError(
                    path: path + "/payload/type", message: "must be or include \"object\", since payloads are objects")
            }
            payloadSchema = schema
        }

        let summary = entry["summary"]
        if let summary, summary.stringValue == nil {
            throw CatalogError(path: path + "/summary", message: "expected a string, got \(summary.typeName)")
        }

        self.init(
            name: name, styles: styles, allowsPush: allowsPush, payloadSchema: payloadSchema,
            summary: summary?.stringValue)
    }

    /// The modal styles listed, and whether `push` is among them.
    private static func styles(_ value: JSONValue?, path: String) throws(CatalogError) -> ([ModalStyle], Bool) {
        guard let value else { return (ModalStyle.allCases, true) }
        guard let names = value.arrayValue else {
            throw CatalogError(path: path, message: "expected an array of style names, got \(value.typeName)")
        }
        guard !names.isEmpty else {
            throw CatalogError(path: path, message: "must list at least one style")
        }
        var styles: [ModalStyle] = []
        var allowsPush = false
        for (index, nameValue) in names.enumerated() {
            guard let name = nameValue.stringValue else {
                throw CatalogError(path: "\(path)/\(index)", message: "expected a string, got \(nameValue.typeName)")
            }
            if name == pushStyle {
                guard !allowsPush else {
                    throw CatalogError(path: "\(path)/\(index)", message: "duplicate style \"push\"")
                }
                allowsPush = true
                continue
            }
            guard let style = ModalStyle(rawValue: name) else {
                let known = (ModalStyle.allCases.map(\.rawValue) + [pushStyle]).joined(separator: ", ")
                throw CatalogError(
                    path: "\(path)/\(index)",
                    message: "unknown style \(JSONValue.string(name).jsonText); known styles: \(known)")
            }
            guard !styles.contains(style) else {
                throw CatalogError(path: "\(path)/\(index)", message: "duplicate style \"\(name)\"")
            }
            styles.append(style)
        }
        return (styles, allowsPush)
    }
}

/// Why a catalog file was refused: where in the file, and what is wrong there.
public struct CatalogError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The RFC 6901 pointer of the fault inside the file, such as
    /// `/destinations/help/payload/properties/text/maxLength`; empty for the document as a whole.
    public let path: String
    /// What is wrong, such as `unknown style "bubble"; known styles: sheet, …`.
    public let message: String

    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    /// `at <path>: <message>`, or the message alone when the path is empty.
    public var description: String {
        path.isEmpty ? message : "at \(path): \(message)"
    }
}
