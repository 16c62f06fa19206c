import ModalStackCore
import Testing

@testable import ModalStackAPI

@Suite("Metrics exposition")
struct MetricsTests {
    @Test func requestsAreCountedByMethodRouteAndStatusClassAndTimedByRoute() {
        let metrics = Metrics()
        metrics.recordRequest(method: "GET", route: "/v1/sessions/{sessionId}", status: 200, seconds: 0.0004)
        metrics.recordRequest(method: "GET", route: "/v1/sessions/{sessionId}", status: 204, seconds: 0.002)
        metrics.recordRequest(method: "GET", route: "/v1/sessions/{sessionId}", status: 404, seconds: 0.003)
        metrics.recordRequest(method: "PUT", route: "/v1/sessions/{sessionId}", status: 201, seconds: 0.02)
        metrics.recordRequest(method: "GET", route: "/livez", status: 200, seconds: 0.0001)
        metrics.recordRequest(method: "BREW", route: nil, status: 404, seconds: 0.0001)
        let lines = metrics.render(gauges: []).split(separator: "\n").map(String.init)
        #expect(
            lines.filter { $0.hasPrefix("modalstack_http_requests_total{") } == [
                #"modalstack_http_requests_total{method="BREW",route="unmatched",status="4xx"} 1"#,
                #"modalstack_http_requests_total{method="GET",route="/livez",status="2xx"} 1"#,
                #"modalstack_http_requests_total{method="GET",route="/v1/sessions/{sessionId}",status="2xx"} 2"#,
                #"modalstack_http_requests_total{method="GET",route="/v1/sessions/{sessionId}",status="4xx"} 1"#,
                #"modalstack_http_requests_total{method="PUT",route="/v1/sessions/{sessionId}",status="2xx"} 1"#,
            ])
        #expect(lines.contains(#"modalstack_http_request_duration_seconds_count{route="/v1/sessions/{sessionId}"} 4"#))
        #expect(
            lines.contains(
                #"modalstack_http_request_duration_seconds_bucket{route="/v1/sessions/{sessionId}",le="0.0005"} 1"#))
        #expect(
            lines.contains(
                #"modalstack_http_request_duration_seconds_bucket{route="/v1/sessions/{sessionId}",le="0.0025"} 2"#))
        #expect(
            lines.contains(
                #"modalstack_http_request_duration_seconds_bucket{route="/v1/sessions/{sessionId}",le="0.025"} 4"#))
        #expect(lines.contains(#"modalstack_http_request_duration_seconds_count{route="unmatched"} 1"#))
        let routes = lines.filter { $0.hasPrefix("modalstack_http_request_duration_seconds_count{") }
        #expect(routes.map { $0.split(separator: "\"")[1] } == ["/livez", "/v1/sessions/{sessionId}", "unmatched"])
    }

    @Test func everyPresentationEventHasASeriesFromTheStartAndEachCountsItsOwn() {
        func presentationEvents(_ metrics: Metrics) -> [String] {
            metrics.render(gauges: []).split(separator: "\n").map(String.init).filter {
                $0.hasPrefix("modalstack_presentation_events_total{")
            }
        }
        func series(_ kind: SessionEvent.Kind, _ count: Int) -> String {
            #"modalstack_presentation_events_total{event="\#(kind.rawValue)"} \#(count)"#
        }
        let metrics = Metrics()
        #expect(presentationEvents(metrics) == SessionEvent.Kind.presentationEvents.map { series($0, 0) })
        #expect(SessionEvent.Kind.presentationEvents.contains(.replaced))

        metrics.recordEvents([SessionEvent(.sessionCreated), SessionEvent(.replaced, details: ["stack": []])])
        metrics.recordEvents([SessionEvent(.replaced), SessionEvent(.sessionDeleted)])
        #expect(
            presentationEvents(metrics)
                == SessionEvent.Kind.presentationEvents.map { series($0, $0 == .replaced ? 2 : 0) })
    }
}
