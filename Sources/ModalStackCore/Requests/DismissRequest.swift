/// Which presentations a dismiss removes. Removing an entry always removes everything above it,
/// as dismissing a sheet in SwiftUI takes its children with it.
public enum DismissTarget: Sendable, Hashable {
    /// The top presentation: `{}`.
    case top
    /// The top `n` presentations: `{"count": n}`.
    case count(Int)
    /// Everything above this presentation, which stays: `{"to": id}`.
    case above(presentationID: String)
    /// The given presentation and everything above it (`{"presentation": id}` or
    /// `DELETE …/presentations/{id}`); a queued one is taken out of the queue.
    case presentation(id: String)
    /// The whole stack: `{"all": true}`.
    case all
}

/// A dismiss: what to remove, the user's answer for the presentation it names, and whether to
/// override locks.
public struct DismissRequest: Sendable, Hashable {
    /// The largest `count` accepted; deeper stacks are dismissed with `all`.
    public static let maxCount = 1024

    public var target: DismissTarget
    /// The answer handed back to the presenter: for `presentation` that one, otherwise the top.
    public var result: JSONValue?
    /// Dismiss locked presentations too.
    public var force: Bool

    public init(_ target: DismissTarget, result: JSONValue? = nil, force: Bool = false) {
        self.target = target
        self.result = result
        self.force = force
    }

    /// Decodes the body of `POST /v1/sessions/{id}/dismiss`: at most one of `count`, `to`,
    /// `presentation` and `all`, plus `result` and `force`.
    public init(json: JSONValue) throws(ModalError) {
        var reader = try FieldReader(json, at: "")
        let count = reader.integer("count", in: 1...Self.maxCount)
        let to = reader.string("to")
        let presentation = reader.string("presentation")
        let all = reader.bool("all")
        if all == false {
            reader.fail("all", "must be true when present")
        }
        let result = reader.result()
        let force = reader.bool("force") ?? false
        reader.rejectUnknownMembers()
        let chosen = [count != nil, to != nil, presentation != nil, all == true].filter { $0 }.count
        if chosen > 1 {
            reader.failObject("give at most one of count, to, presentation and all")
        }
        guard reader.errors.isEmpty else { throw .validation(reader.errors) }
        let target: DismissTarget
        if let count {
            target = .count(count)
        } else if let to {
            target = .above(presentationID: to)
        } else if let presentation {
            target = .presentation(id: presentation)
        } else if all == true {
            target = .all
        } else {
            target = .top
        }
        self.init(target, result: result, force: force)
    }
}
