import Testing

@testable import ModalStackHTTP

@Suite struct PercentEncodingTests {
    @Test func strictDecodingDecodesOnce() {
        #expect(PercentEncoding.decodeStrictly("a%2Fb%20c".utf8) == "a/b c")
        #expect(PercentEncoding.decodeStrictly("%2541".utf8) == "%41")
        #expect(PercentEncoding.decodeStrictly("caf%C3%A9".utf8) == "café")
        #expect(PercentEncoding.decodeStrictly("a+b".utf8) == "a+b")
        #expect(PercentEncoding.decodeStrictly("plain".utf8) == "plain")
    }

    @Test func strictDecodingRejectsMalformedEscapesAndInvalidUTF8() {
        #expect(PercentEncoding.decodeStrictly("%zz".utf8) == nil)
        #expect(PercentEncoding.decodeStrictly("abc%".utf8) == nil)
        #expect(PercentEncoding.decodeStrictly("abc%4".utf8) == nil)
        #expect(PercentEncoding.decodeStrictly("%FF%FE".utf8) == nil)
    }

    @Test func lenientDecodingKeepsMalformedEscapes() {
        #expect(PercentEncoding.decodeLeniently("100%") == "100%")
        #expect(PercentEncoding.decodeLeniently("%zz%41") == "%zzA")
        #expect(PercentEncoding.decodeLeniently("a+b", plusAsSpace: true) == "a b")
        #expect(PercentEncoding.decodeLeniently("a+b") == "a+b")
        #expect(PercentEncoding.decodeLeniently("%FF") == "\u{FFFD}")
    }

    @Test func queryParsingDecodesNamesAndValuesInOrder() {
        let query = PercentEncoding.parseQuery("a=1&b=hello%20world&c=x+y&&flag&a=2&%C3%A9=caf%C3%A9&d=%2B")
        #expect(query.map(\.name) == ["a", "b", "c", "flag", "a", "é", "d"])
        #expect(query.map(\.value) == ["1", "hello world", "x y", "", "2", "café", "+"])
    }

    @Test func requestFromTargetSplitsTheQuery() {
        let request = HTTPRequest(method: "GET", target: "/v1/items?limit=10&q=a%26b")
        #expect(request.path == "/v1/items")
        #expect(request.queryValues("limit") == ["10"])
        #expect(request.queryValues("q") == ["a&b"])
        #expect(request.queryValues("missing") == [])
    }
}
