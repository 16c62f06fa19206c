import ModalStackClient
import ModalStackCore
import Testing

/// The client's style kinds are a copy of the server's (the client cannot import ModalStackCore):
/// this is what keeps the server's `ModalStyle` their one source.
@Suite("Style kinds")
struct StyleKindTests {
    @Test("the client's kinds are the server's, in order, each alert-like on both sides or on neither")
    func sameAsTheServer() {
        let server = ModalStackCore.ModalStyle.allCases
        let client = ModalStackClient.ModalStyle.Kind.allCases
        #expect(client.map(\.rawValue) == server.map(\.rawValue))
        #expect(client.filter(\.isAlertLike).map(\.rawValue) == server.filter(\.isAlertLike).map(\.rawValue))
    }
}
