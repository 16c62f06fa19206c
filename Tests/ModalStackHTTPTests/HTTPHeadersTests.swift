import ModalStackHTTP
import Testing

@Suite struct HTTPHeadersTests {
    @Test func lookupIsCaseInsensitiveAndReturnsTheFirstMatch() {
        var headers: HTTPHeaders = ["Content-Type": "application/json"]
        headers.add("X-Trace", "one")
        headers.add("x-trace", "two")
        #expect(headers["content-type"] == "application/json")
        #expect(headers["CONTENT-TYPE"] == "application/json")
        #expect(headers["X-TRACE"] == "one")
        #expect(headers.values(for: "x-Trace") == ["one", "two"])
        #expect(headers["Missing"] == nil)
        #expect(headers.contains("x-trace"))
    }

    @Test func setReplacesEveryOccurrenceAtThePositionOfTheFirst() {
        var headers = HTTPHeaders([("A", "1"), ("B", "2"), ("a", "3"), ("C", "4")])
        headers.set("A", "9")
        #expect(headers.map(\.name) == ["A", "B", "C"])
        #expect(headers.map(\.value) == ["9", "2", "4"])
        headers.set("D", "5")
        #expect(headers.map(\.name) == ["A", "B", "C", "D"])
    }

    @Test func removeDropsEveryOccurrence() {
        var headers = HTTPHeaders([("Set-Cookie", "a"), ("Other", "x"), ("set-cookie", "b")])
        headers.remove("SET-COOKIE")
        #expect(headers.count == 1)
        #expect(headers["other"] == "x")
    }

    @Test func iterationKeepsInsertionOrder() {
        var headers = HTTPHeaders()
        headers.add("Z", "1")
        headers.add("A", "2")
        headers.add("M", "3")
        #expect(headers.map { "\($0.name)=\($0.value)" } == ["Z=1", "A=2", "M=3"])
    }

    @Test func equalityComparesOrderedFields() {
        #expect(HTTPHeaders([("A", "1"), ("B", "2")]) == HTTPHeaders([("A", "1"), ("B", "2")]))
        #expect(HTTPHeaders([("A", "1"), ("B", "2")]) != HTTPHeaders([("B", "2"), ("A", "1")]))
    }

    @Test func onlyASCIILettersFoldCase() {
        let headers = HTTPHeaders([("X[1]", "brackets"), ("Été", "accented"), ("Content-Type", "json")])
        #expect(headers["x{1}"] == nil)  // '[' and '{' differ by the same bit as 'A' and 'a'
        #expect(headers["éTÉ"] == nil)
        #expect(headers["Été"] == "accented")
        #expect(headers["X-Request-Id"] == nil)  // same length as Content-Type
        #expect(headers["cONTENT-tYPE"] == "json")
    }

    @Test func namesOfDifferentLengthDoNotMatch() {
        let headers: HTTPHeaders = ["Accept": "x"]
        #expect(headers["Accept-Encoding"] == nil)
        #expect(headers["Accep"] == nil)
    }
}
