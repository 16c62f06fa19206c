import ModalStackHTTP
import ModalStackTestSupport
import Testing

/// A live server on 127.0.0.1 (ephemeral port) driven by HTTPClient.
@Suite struct HTTPServerRoutingTests {
    private func router() -> Router {
        var router = makeRouter()
        router.add("GET", "/items/{id}") { request in
            HTTPResponse(
                status: 200,
                body: bytes("item [\(request.pathParameters["id"] ?? "?")] via \(request.routeTemplate ?? "-")"))
        }
        router.add("PUT", "/items/{id}") { _ in HTTPResponse(status: 204) }
        router.add("GET", "/hello") { _ in
            HTTPResponse(status: 200, headers: ["Content-Type": "text/plain"], body: bytes("hello"))
        }
        router.add("GET", "/status/{code}") { request in
            let code = Int(request.pathParameters["code"] ?? "") ?? 500
            let body = code == 204 || code == 304 ? [] : bytes("status \(code)")
            return HTTPResponse(status: code, headers: ["X-Code": "\(code)"], body: body)
        }
        router.add("GET", "/query") { request in
            let pairs = request.query.map { "\($0.name)=\($0.value)" }.joined(separator: "|")
            return HTTPResponse(status: 200, body: bytes(pairs))
        }
        router.add("GET", "/headers") { request in
            var headers = HTTPHeaders()
            headers.add("X-Echo", request.headers["x-custom-thing"] ?? "missing")
            headers.add("X-Count", "\(request.headers.values(for: "X-Repeated").count)")
            headers.add("X-Remote", request.remoteAddress ?? "none")
            headers.add("X-Path", request.path)
            return HTTPResponse(status: 200, headers: headers)
        }
        router.add("GET", "/inject") { _ in
            let fields = [
                ("X-Bad", "a\r\nX-Injected: yes"), ("X-Lone-LF", "a\nb"), ("X-Lone-CR", "a\rb"), ("X-NUL", "a\u{0}b"),
                ("X-Bad Name", "v"), ("X:Colon", "v"), ("X-Tab\t", "v"), ("", "v"), ("X-Good", "fine"),
            ]
            return HTTPResponse(
                status: 200,
                headers: fields.reduce(into: HTTPHeaders()) {
                    $0.add($1.0, $1.1)
                })
        }
        return router
    }

    @Test func pathParametersAreDecodedExactlyOnce() throws {
        try withServer(router()) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let slash = try client.send(path: "/items/a%2Fb%20c")
            #expect(slash.status == 200)
            #expect(slash.text == "item [a/b c] via /items/{id}")
            let doubleEncoded = try client.send(path: "/items/%2541")
            #expect(doubleEncoded.text == "item [%41] via /items/{id}")
            let unicode = try client.send(path: "/items/caf%C3%A9")
            #expect(unicode.text == "item [café] via /items/{id}")
            let plus = try client.send(path: "/items/a+b")
            #expect(plus.text == "item [a+b] via /items/{id}")
        }
    }

    @Test func unknownPathsAndMalformedEscapesAre404() throws {
        try withServer(router()) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let missing = try client.send(path: "/nothing/here")
            #expect(missing.status == 404)
            #expect(missing.text == "no route for /nothing/here")
            #expect(try client.send(path: "/items/%zz").status == 404)
            #expect(try client.send(path: "/items/x/").status == 404)
            #expect(try client.send(path: "/hello/").status == 404)
            // An encoded NUL stays encoded in the path: libmicrohttpd no longer cuts the URL at it.
            let nul = try client.send(path: "/items/a%00b")
            #expect(nul.status == 200)
            #expect(nul.text == "item [a\u{0}b] via /items/{id}")
        }
    }

    @Test func wrongMethodIs405WithTheAllowedMethods() throws {
        try withServer(router()) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let response = try client.send(method: "DELETE", path: "/items/1")
            #expect(response.status == 405)
            #expect(response.headers["Allow"] == "GET, HEAD, PUT")
            let put = try client.send(method: "PUT", path: "/items/1", body: bytes("x"))
            #expect(put.status == 204)
            #expect(put.body.isEmpty)
        }
    }

    @Test func headUsesTheGETRouteWithoutABody() throws {
        try withServer(router()) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let head = try client.send(method: "HEAD", path: "/hello")
            #expect(head.status == 200)
            #expect(head.body.isEmpty)
            #expect(head.headers["Content-Length"] == "5")
            #expect(head.headers["Content-Type"] == "text/plain")
            // The connection is still in sync: no stray body bytes.
            let get = try client.send(path: "/hello")
            #expect(get.text == "hello")
            #expect(client.connectCount == 1)
        }
    }

    @Test(arguments: [200, 201, 202, 204, 304, 400, 409, 412, 418, 422, 428, 429, 500, 503, 599])
    func statusCodesPassThrough(code: Int) throws {
        try withServer(router()) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let response = try client.send(path: "/status/\(code)")
            #expect(response.status == code)
            #expect(response.headers["X-Code"] == "\(code)")
            #expect(response.text == (code == 204 || code == 304 ? "" : "status \(code)"))
        }
    }

    @Test func invalidStatusCodesBecome500() throws {
        try withServer(router()) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let tooSmall = try client.send(path: "/status/99")
            let tooLarge = try client.send(path: "/status/1000")
            #expect(tooSmall.status == 500)
            #expect(tooLarge.status == 500)
        }
    }

    @Test func queryArgumentsAreDecodedInOrder() throws {
        try withServer(router()) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let response = try client.send(path: "/query?a=1&b=hello%20world&c=x+y&d=%2B&e&a=2&%C3%A9=caf%C3%A9&f=100%")
            #expect(response.text == "a=1|b=hello world|c=x y|d=+|e=|a=2|é=café|f=100%")
        }
    }

    @Test func requestHeadersAreCaseInsensitive() throws {
        try withServer(router()) { server throws in
            let client = HTTPClient(port: server.boundPort)
            var headers = HTTPHeaders()
            headers.add("X-CUSTOM-THING", "value 1")
            headers.add("x-repeated", "a")
            headers.add("X-Repeated", "b")
            let response = try client.send(path: "/headers", headers: headers)
            #expect(response.headers["x-echo"] == "value 1")
            #expect(response.headers["X-ECHO"] == "value 1")
            #expect(response.headers["x-count"] == "2")
            #expect(response.headers["x-remote"] == "127.0.0.1")
            #expect(response.headers["x-path"] == "/headers")
        }
    }

    @Test func responseHeadersThatWouldBreakTheFramingAreDropped() throws {
        try withServer(router()) { server throws in
            let client = HTTPClient(port: server.boundPort)
            let response = try client.send(path: "/inject")
            #expect(response.status == 200)
            #expect(response.headers["X-Injected"] == nil)
            #expect(response.headers["X-Good"] == "fine")
            // Dropped: a value with CR, LF or NUL; a name with a space, a colon or a control character, or none.
            let sent = Set(response.headers.map { $0.name.lowercased() })
            for name in ["x-bad", "x-lone-lf", "x-lone-cr", "x-nul", "x-bad name", "x", "x-tab\t", "x-tab"] {
                #expect(!sent.contains(name), "\(name) was sent")
            }
        }
    }
}
