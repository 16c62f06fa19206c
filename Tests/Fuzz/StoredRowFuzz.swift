import ModalStackCore
import ModalStackStore

/// The stored forms a database row holds (a list of presentations, a path, one presentation, a
/// change, idempotency headers), as a corrupted or hand-edited row might hold them: refused as
/// corrupt or read; what is read writes back to a form that reads as the same value.
enum StoredRowFuzz {
    static func check(_ input: [UInt8]) {
        guard let kind = input.first else { return }
        let text = String(decoding: input.dropFirst(), as: UTF8.self)
        switch kind % 5 {
        case 0:
            guard let list = try? RowCodec.decodeList(text) else { return }
            guard (try? RowCodec.decodeList(RowCodec.encode(list))) == list else {
                finding("a stored list does not read back as itself", input: input)
            }
        case 1:
            guard let path = try? RowCodec.decodePath(text) else { return }
            guard (try? RowCodec.decodePath(RowCodec.encode(path))) == path else {
                finding("a stored path does not read back as itself", input: input)
            }
        case 2:
            guard let presentation = try? RowCodec.decodeOne(text) else { return }
            guard (try? RowCodec.decodeOne(presentation.jsonText)) == presentation else {
                finding("a stored presentation does not read back as itself", input: input)
            }
        case 3:
            guard let change = try? RowCodec.decodeChange(text, sessionID: "fuzz") else { return }
            let again = Result { () throws(StoreError) in
                try RowCodec.decodeChange(change.jsonText, sessionID: "fuzz")
            }
            guard case .success(change) = again else {
                finding("the change \(change.jsonText) reads back as \(again)", input: input)
            }
        default:
            guard let headers = try? RowCodec.decodeHeaders(text) else { return }
            guard (try? RowCodec.decodeHeaders(RowCodec.encodeHeaders(headers))) == headers else {
                finding("stored headers do not read back as themselves", input: input)
            }
        }
    }
}
