@testable import ModalStackHTTP

/// Percent-decoding and routing of a request target, differentially: a router built from fuzzed
/// patterns must pick what a plain reading of the routing rules picks (literal segments win over
/// `{name}` segments, position by position; `{name}` takes one non-empty segment that decodes
/// strictly; `HEAD` falls back to `GET`; a path that matches without the method is a 405 naming
/// the first such route's methods). The query is decoded the way the server decodes it.
///
/// Input: a pattern count, then per pattern a method byte, a segment count and one byte per
/// segment (a literal from a small alphabet, or a parameter); then the request's method byte and
/// its target.
enum RequestTargetFuzz {
    private enum Segment: Equatable {
        case literal(String)
        case parameter(String)
    }

    private static let literals = ["v1", "sessions", "a", "%61", "é", "", "A"]
    private static let methods = ["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "get"]

    static func check(_ input: [UInt8]) {
        var bytes = input[...]
        func next() -> UInt8? { bytes.popFirst() }
        guard let count = next() else { return }
        var routes: [(method: String, segments: [Segment])] = []
        for _ in 0..<(1 + Int(count) % 6) {
            guard let method = next(), let length = next() else { return }
            var segments: [Segment] = []
            for position in 0..<(1 + Int(length) % 4) {
                guard let byte = next() else { return }
                let choice = Int(byte) % (literals.count + 1)
                segments.append(choice == literals.count ? .parameter("p\(position)") : .literal(literals[choice]))
            }
            let route = (methods[Int(method) % methods.count], segments)
            if !routes.contains(where: { $0.method == route.0 && $0.segments == route.1 }) { routes.append(route) }
        }
        guard let methodByte = next() else { return }
        let method = methods[Int(methodByte) % methods.count]
        let target = String(decoding: bytes, as: UTF8.self)

        let request = HTTPRequest(method: method, target: target)
        var router = Router(
            notFound: { _ in HTTPResponse(status: 404) }, methodNotAllowed: { _, _ in HTTPResponse(status: 405) })
        for route in routes {
            router.add(route.method, pattern(route.segments)) { _ in HTTPResponse(status: 200) }
        }
        let expected = reference(routes, method: method, path: request.path)
        switch (router.match(method: method, path: request.path), expected) {
        case (.found(_, let template, let parameters), .found(let expectedTemplate, let captures)):
            guard template == expectedTemplate, parameters.map(\.value) == captures else {
                finding(
                    "router found \(template) \(Array(parameters)), expected \(expectedTemplate) \(captures)",
                    input: input)
            }
        case (.methodNotAllowed(let allowed), .methodNotAllowed(let expectedAllowed)):
            guard allowed == expectedAllowed else {
                finding("405 allows \(allowed), expected \(expectedAllowed)", input: input)
            }
        case (.notFound, .notFound):
            break
        case (let actual, let expected):
            finding("router answered \(actual), expected \(expected)", input: input)
        }
    }

    private enum Expected {
        case found(template: String, captures: [String])
        case methodNotAllowed([String])
        case notFound
    }

    private static func pattern(_ segments: [Segment]) -> String {
        "/"
            + segments.map { segment in
                switch segment {
                case .literal(let text): text
                case .parameter(let name): "{\(name)}"
                }
            }.joined(separator: "/")
    }

    /// The routing rules read plainly: every route whose segments match, the most literal first.
    private static func reference(_ routes: [(method: String, segments: [Segment])], method: String, path: String)
        -> Expected
    {
        guard path.utf8.first == UInt8(ascii: "/") else { return .notFound }
        let parts = path.utf8.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        var shapes: [[Segment]] = []
        for route in routes where !shapes.contains(route.segments) { shapes.append(route.segments) }
        let matching = shapes.filter { segments in
            segments.count == parts.count
                && zip(segments, parts).allSatisfy { segment, part in
                    switch segment {
                    case .literal(let text): Array(text.utf8) == Array(part)
                    case .parameter: !part.isEmpty && PercentEncoding.decodeStrictly(part) != nil
                    }
                }
        }.sorted { lhs, rhs in
            let kinds = { (segments: [Segment]) in segments.map { if case .literal = $0 { 0 } else { 1 } } }
            return kinds(lhs).lexicographicallyPrecedes(kinds(rhs))
        }
        func methods(of segments: [Segment]) -> Set<String> {
            Set(routes.filter { $0.segments == segments }.map(\.method))
        }
        if let route = matching.first(where: {
            methods(of: $0).contains(method) || (method == "HEAD" && methods(of: $0).contains("GET"))
        }) {
            let captures = zip(route, parts).compactMap { segment, part -> String? in
                guard case .parameter = segment else { return nil }
                return PercentEncoding.decodeStrictly(part)
            }
            return .found(template: pattern(route), captures: captures)
        }
        guard let first = matching.first else { return .notFound }
        var allowed = methods(of: first)
        if allowed.contains("GET") { allowed.insert("HEAD") }
        return .methodNotAllowed(allowed.sorted())
    }
}
