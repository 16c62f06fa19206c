import Testing

@testable import ModalStackHTTP

/// Routing without a socket: the router answers through detached replies.
@Suite struct RouterTests {
    private func answer(_ router: Router, _ method: String, _ target: String) -> HTTPResponse? {
        let collector = ResponseCollector()
        router.respond(to: HTTPRequest(method: method, target: target), reply: HTTPReply { collector.append($0) })
        return collector.all.first
    }

    private func echoing(_ name: String) -> Router.Handler {
        { request in
            let parameters = request.pathParameters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            let text = "\(name) \(request.routeTemplate ?? "-") \(parameters.joined(separator: ","))"
            return HTTPResponse(status: 200, body: Array(text.utf8))
        }
    }

    private func text(_ response: HTTPResponse?) -> String? {
        response.map { String(decoding: $0.body, as: UTF8.self) }
    }

    @Test func capturesAndDecodesParameters() {
        var router = makeRouter()
        router.add("GET", "/v1/sessions/{sessionId}/presentations/{presentationId}", echoing("presentation"))
        let response = answer(router, "GET", "/v1/sessions/s%201/presentations/p%2F2")
        #expect(response?.status == 200)
        #expect(
            text(response)
                == "presentation /v1/sessions/{sessionId}/presentations/{presentationId} presentationId=p/2,sessionId=s 1"
        )
    }

    @Test func pathParametersAreFoundByNameAndListedInPatternOrder() {
        var router = makeRouter()
        router.add("GET", "/a/{z}/b/{a}") { request in
            let parameters = request.pathParameters
            let names = parameters.map(\.key).joined(separator: ",")
            let text =
                "\(parameters["z"] ?? "-") \(parameters["a"] ?? "-") \(parameters["b"] ?? "nil") \(parameters.count) \(names)"
            return HTTPResponse(status: 200, body: Array(text.utf8))
        }
        router.add("GET", "/plain", echoing("plain"))
        #expect(text(answer(router, "GET", "/a/1/b/2")) == "1 2 nil 2 z,a")
        #expect(text(answer(router, "GET", "/plain")) == "plain /plain ")
        #expect(HTTPRequest(method: "GET", path: "/").pathParameters["z"] == nil)
    }

    @Test func literalSegmentsWinAndMatchingBacktracks() {
        var router = makeRouter()
        router.add("GET", "/items/{id}", echoing("param"))
        router.add("GET", "/items/special", echoing("literal"))
        router.add("GET", "/items/special/extra/{x}", echoing("deep-literal"))
        router.add("GET", "/items/{id}/extra/child", echoing("deep-param"))
        #expect(text(answer(router, "GET", "/items/special")) == "literal /items/special ")
        #expect(text(answer(router, "GET", "/items/other")) == "param /items/{id} id=other")
        // "special" is tried as a literal first, then the {id} branch matches.
        #expect(
            text(answer(router, "GET", "/items/special/extra/child")) == "deep-literal /items/special/extra/{x} x=child"
        )
        #expect(text(answer(router, "GET", "/items/abc/extra/child")) == "deep-param /items/{id}/extra/child id=abc")
    }

    @Test func methodNotAllowedListsTheSortedMethodsWithHEADForGET() {
        var router = makeRouter()
        router.add("PUT", "/things/{id}", echoing("put"))
        router.add("GET", "/things/{id}", echoing("get"))
        router.add("DELETE", "/things/{id}", echoing("delete"))
        let response = answer(router, "POST", "/things/1")
        #expect(response?.status == 405)
        #expect(response?.headers["Allow"] == "DELETE, GET, HEAD, PUT")
    }

    @Test func methodNotAllowedPrefersAnotherMatchingRouteWithTheMethod() {
        var router = makeRouter()
        router.add("POST", "/a/b", echoing("literal-post"))
        router.add("GET", "/a/{x}", echoing("param-get"))
        #expect(text(answer(router, "GET", "/a/b")) == "param-get /a/{x} x=b")
        #expect(answer(router, "DELETE", "/a/b")?.headers["Allow"] == "POST")
    }

    @Test func headFallsBackToGETUnlessRegistered() {
        var router = makeRouter()
        router.add("GET", "/a", echoing("get-a"))
        router.add("GET", "/b", echoing("get-b"))
        router.add("HEAD", "/b", echoing("head-b"))
        #expect(text(answer(router, "HEAD", "/a")) == "get-a /a ")
        #expect(text(answer(router, "HEAD", "/b")) == "head-b /b ")
    }

    @Test func notFoundCases() {
        var router = makeRouter()
        router.add("GET", "/", echoing("root"))
        router.add("GET", "/items/{id}", echoing("item"))
        #expect(text(answer(router, "GET", "/")) == "root / ")
        #expect(answer(router, "GET", "/items/x/")?.status == 404, "a trailing slash is another path")
        #expect(answer(router, "GET", "/items/")?.status == 404, "a parameter needs a non-empty segment")
        #expect(answer(router, "GET", "/items")?.status == 404)
        #expect(answer(router, "GET", "/items/%zz")?.status == 404, "malformed escape")
        #expect(answer(router, "GET", "/items/%FF")?.status == 404, "invalid UTF-8")
        #expect(answer(router, "GET", "items/x")?.status == 404)
        #expect(answer(router, "GET", "*")?.status == 404)
        #expect(text(answer(router, "GET", "/nowhere")) == "no route for /nowhere")
    }

    @Test func literalSegmentsCompareWithTheRawPath() {
        var router = makeRouter()
        router.add("GET", "/a b", echoing("space"))
        #expect(answer(router, "GET", "/a%20b")?.status == 404)
    }

    @Test func deferredHandlersAnswerThroughTheReply() {
        var router = makeRouter()
        router.addDeferred("POST", "/jobs/{id}") { request, reply in
            reply.send(HTTPResponse(status: 202, body: Array((request.pathParameters["id"] ?? "").utf8)))
        }
        let response = answer(router, "POST", "/jobs/j7")
        #expect(response?.status == 202)
        #expect(text(response) == "j7")
    }

    @Test func matchReportsTheTemplate() {
        var router = makeRouter()
        router.add("GET", "/v1/sessions/{sessionId}", echoing("s"))
        guard case .found(_, let template, let parameters) = router.match(method: "GET", path: "/v1/sessions/abc")
        else {
            Issue.record("no match")
            return
        }
        #expect(template == "/v1/sessions/{sessionId}")
        #expect(parameters.map { "\($0.key)=\($0.value)" } == ["sessionId=abc"])
    }

    @Test func theMatchedTemplateIsNotedOnTheReplyForTheCompletionHook() {
        var router = makeRouter()
        router.add("GET", "/v1/sessions/{sessionId}", echoing("session"))
        router.add("PUT", "/v1/sessions/{sessionId}", echoing("put"))
        func template(_ method: String, _ target: String) -> String? {
            let reply = HTTPReply { _ in }
            router.respond(to: HTTPRequest(method: method, target: target), reply: reply)
            #expect(reply.isAnswered)
            return reply.routeTemplate
        }
        #expect(template("GET", "/v1/sessions/abc") == "/v1/sessions/{sessionId}")
        #expect(template("HEAD", "/v1/sessions/abc") == "/v1/sessions/{sessionId}")
        #expect(template("GET", "/v1/other") == nil)
        #expect(template("DELETE", "/v1/sessions/abc") == nil)
    }
}
