extension ModalContent {
    /// The fields only some styles have, and which. Any of them on another style is refused with
    /// its pointer (buttons on a sheet, detents on an alert).
    static let styleSpecificFields: [(field: String, styles: Set<ModalStyle>)] = [
        ("detents", [.sheet]),
        ("interactiveDismissDisabled", [.sheet]),
        ("title", [.alert, .confirmationDialog]),
        ("message", [.alert, .confirmationDialog, .progress]),
        ("buttons", [.alert, .confirmationDialog]),
        ("total", [.progress]),
        ("completed", [.progress]),
    ]

    /// The largest `total` a progress may have.
    public static let maxProgressTotal = 1e15

    /// Reads the fields of `style` from a present request, reporting each problem on `reader`.
    static func decode(style: ModalStyle, from reader: inout FieldReader) -> ModalContent? {
        for (field, styles) in styleSpecificFields where !styles.contains(style) && reader.has(field) {
            _ = reader.value(field)
            reader.fail(field, "is not allowed for style \(style.rawValue)")
        }
        switch style {
        case .sheet:
            let detents = decodeDetents(from: &reader)
            let interactiveDismissDisabled = reader.bool("interactiveDismissDisabled") ?? false
            return detents.map {
                .sheet(SheetOptions(detents: $0, interactiveDismissDisabled: interactiveDismissDisabled))
            }
        case .fullScreenCover: return .fullScreenCover
        case .popover: return .popover
        case .dialog: return .dialog
        case .alert, .confirmationDialog:
            let title = reader.text("title", required: true, maxLength: AlertContent.maxTitleLength)
            let message = reader.text("message", maxLength: AlertContent.maxMessageLength, allowsLineBreaks: true)
            let buttons = decodeButtons(from: &reader, required: style == .confirmationDialog)
            guard let title, let buttons else { return nil }
            let content = AlertContent(title: title, message: message, buttons: buttons)
            return style == .alert ? .alert(content) : .confirmationDialog(content)
        case .progress:
            let message = reader.text("message", maxLength: AlertContent.maxMessageLength, allowsLineBreaks: true)
            let total = reader.number("total", required: true, in: 0...maxProgressTotal, excludingLowerBound: true)
            let completed = reader.number("completed", in: 0...maxProgressTotal) ?? 0
            guard let total else { return nil }
            guard completed <= total else {
                reader.fail("completed", "must be between 0 and total (\(JSONValue(total).jsonText))")
                return nil
            }
            return .progress(ProgressContent(message: message, total: total, completed: completed))
        }
    }

    private static func decodeDetents(from reader: inout FieldReader) -> [Detent]? {
        guard let elements = reader.array("detents") else { return reader.has("detents") ? nil : [] }
        var detents: [Detent] = []
        for (index, element) in elements.enumerated() {
            guard let detent = element.stringValue.flatMap(Detent.init) else {
                reader.fail(
                    "detents", at: "/\(index)",
                    "must be medium, large, fraction:<0<x≤1> or height:<points>")
                continue
            }
            guard !detents.contains(detent) else {
                reader.fail("detents", at: "/\(index)", "\(detent.text) is listed twice")
                continue
            }
            detents.append(detent)
        }
        return detents.count == elements.count ? detents : nil
    }

    /// Buttons: 1…16 of `{id, label, role?}`, ids unique, at most one `cancel`. Absent on an alert
    /// means a single OK.
    private static func decodeButtons(from reader: inout FieldReader, required: Bool) -> [AlertButton]? {
        guard let elements = reader.array("buttons", required: required) else {
            return reader.has("buttons") || required ? nil : AlertContent.defaultButtons
        }
        guard (1...AlertContent.maxButtons).contains(elements.count) else {
            reader.fail("buttons", "must hold 1-\(AlertContent.maxButtons) buttons")
            return nil
        }
        var buttons: [AlertButton] = []
        var valid = true
        for (index, element) in elements.enumerated() {
            do {
                var buttonReader = try FieldReader(element, at: reader.pointer(to: "buttons") + "/\(index)")
                let id = buttonReader.text("id", required: true, maxLength: AlertButton.maxIDLength)
                let label = buttonReader.text("label", required: true, maxLength: AlertButton.maxLabelLength)
                var role = AlertButton.Role.default
                if let name = buttonReader.string("role") {
                    if let parsed = AlertButton.Role(rawValue: name) {
                        role = parsed
                    } else {
                        buttonReader.fail("role", "must be default, cancel or destructive")
                    }
                }
                if let id, buttons.contains(where: { $0.id == id }) {
                    buttonReader.fail("id", "\"\(id)\" is used by another button")
                }
                if role == .cancel, buttons.contains(where: { $0.role == .cancel }) {
                    buttonReader.fail("role", "only one button may have the cancel role")
                }
                buttonReader.rejectUnknownMembers()
                reader.adopt(buttonReader.errors)
                if let id, let label, buttonReader.errors.isEmpty {
                    buttons.append(AlertButton(id: id, label: label, role: role))
                } else {
                    valid = false
                }
            } catch {
                reader.adopt(error.fieldErrors)
                valid = false
            }
        }
        return valid ? buttons : nil
    }
}
