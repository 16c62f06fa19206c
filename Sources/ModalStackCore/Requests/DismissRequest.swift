/// Which presentations a dismiss removes. Removing an entry always removes everything above it,
/// as dismissing a sheet in SwiftUI takes its children with it.
public enum DismissTarget: Sendable, Hashable {
    /// The top presentation: `{}`.
    case top
    /// The top `n` presentations: `{"count": n}`.
    case count(Int)
    /// Everything above this presentation, which stays: `{"to": id}`.
    case above(presentationID: String)
    /// The given presentation and everything above it (`DELETE …/presentations/{id}`).
    case presentation(id: String)
    /// The whole stack: `{"all": true}`.
    case all

    /// The largest `count` accepted; deeper stacks are dismissed with `all`.
    public static let maxCount = 1024

    /// Decodes the body of `POST /v1/sessions/{id}/dismiss`. At most one of `count`, `to`, `all`.
    public init(json: JSONValue) throws(ModalError) {
        var reader = try FieldReader(json, at: "")
        let count = reader.integer("count", in: 1...Self.maxCount)
        let to = reader.string("to")
        let all = reader.bool("all")
        if all == false {
            reader.fail("all", "must be true when present")
        }
        reader.rejectUnknownMembers()
        let chosen = [count != nil, to != nil, all == true].filter { $0 }.count
        if chosen > 1 {
            reader.failObject("give at most one of count, to and all")
        }
        guard reader.errors.isEmpty else { throw .validation(reader.errors) }
        if let count {
            self = .count(count)
        } else if let to {
            self = .above(presentationID: to)
        } else if all == true {
            self = .all
        } else {
            self = .top
        }
    }
}
