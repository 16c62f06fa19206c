import ModalStackCore
import ModalStackService
import Testing

@Suite("Random ids")
struct RandomIDTests {
    @Test("generated ids are 24 URL-safe characters and do not repeat")
    func randomIDs() {
        let ids = (0..<1000).map { _ in RandomID.make() }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            #expect(id.utf8.count == 24)
            #expect(Identifiers.isValidSessionID(id))
        }
        // Every character carries 6 random bits: over 1000 ids each position takes (nearly) all 64
        // characters; a position fed by constant or too few bits would take far fewer.
        for position in 0..<24 {
            let characters = Set(ids.map { Array($0.utf8)[position] })
            #expect(characters.count >= 48, "position \(position) took \(characters.count) characters")
        }
    }
}
