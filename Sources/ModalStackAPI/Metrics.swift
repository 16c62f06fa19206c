import Glibc
import Locking
import ModalStackCore
import ModalStackService
import Synchronization

/// The service's Prometheus metrics, rendered in the text exposition format (version 0.0.4).
/// Labels are route templates and status classes only: never a session id.
final class Metrics: CommitMetrics {
    /// Upper bounds of the latency histograms, in seconds.
    static let buckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    struct Histogram {
        var counts = [UInt64](repeating: 0, count: Metrics.buckets.count + 1)
        var sum = 0.0

        mutating func observe(_ seconds: Double) {
            counts[Metrics.buckets.firstIndex { seconds <= $0 } ?? Metrics.buckets.count] += 1
            sum += seconds
        }
    }

    /// A route's requests: counted by method and status class, timed together.
    private struct RouteRequests {
        /// (method, 2 for 2xx and so on, count): a route sees a handful of these.
        var counts: [(method: String, statusClass: Int, count: UInt64)] = []
        var durations = Histogram()

        mutating func record(method: String, statusClass: Int, seconds: Double) {
            if let index = counts.firstIndex(where: { $0.method == method && $0.statusClass == statusClass }) {
                counts[index].count += 1
            } else {
                counts.append((method, statusClass, 1))
            }
            durations.observe(seconds)
        }
    }

    private struct State {
        /// By route template; one lookup per request.
        var routes: [String: RouteRequests] = [:]
        var commits = Histogram()
        var presentationEvents: [SessionEvent.Kind: UInt64] = [:]
        var authFailures: [String: UInt64] = [:]
    }

    /// The `method` label of requests whose method the server does not implement.
    static let otherMethod = "other"

    private let state = LockedValue(State())
    let longPollsWaiting = Atomic<Int>(0)
    let eventStreamsOpen = Atomic<Int>(0)

    func recordRequest(method: String, route: String?, status: Int, seconds: Double) {
        let route = route ?? "unmatched"
        state.withLock { state in
            state.routes[route, default: RouteRequests()].record(
                method: method, statusClass: status / 100, seconds: seconds)
        }
    }

    func recordCommit(seconds: Double) {
        state.withLock { $0.commits.observe(seconds) }
    }

    /// A request refused for its credential; `reason` is a fixed label, never the credential.
    func recordAuthFailure(reason: String) {
        state.withLock { $0.authFailures[reason, default: 0] += 1 }
    }

    func recordEvents(_ events: [SessionEvent]) {
        state.withLock { state in
            for event in events where event.kind.isPresentationEvent {
                state.presentationEvents[event.kind, default: 0] += 1
            }
        }
    }

    /// The exposition text; `gauges` are read at scrape time by the caller.
    func render(gauges: [(name: String, help: String, value: Double)]) -> String {
        let state = state.withLock { $0 }
        var text = ""
        text +=
            "# HELP modalstack_http_requests_total HTTP requests answered, by method, route template and status class.\n"
        text += "# TYPE modalstack_http_requests_total counter\n"
        let counts = state.routes.flatMap { route, requests in
            requests.counts.map { (method: $0.method, route: route, statusClass: $0.statusClass, count: $0.count) }
        }
        for series in counts.sorted(by: {
            ($0.method, $0.route, $0.statusClass) < ($1.method, $1.route, $1.statusClass)
        }) {
            text +=
                "modalstack_http_requests_total{method=\"\(series.method)\",route=\"\(series.route)\",status=\"\(series.statusClass)xx\"} \(series.count)\n"
        }
        text +=
            "# HELP modalstack_http_request_duration_seconds Time from the request to its answer, by route template.\n"
        text += "# TYPE modalstack_http_request_duration_seconds histogram\n"
        for (route, requests) in state.routes.sorted(by: { $0.key < $1.key }) {
            text += Self.render(
                requests.durations, name: "modalstack_http_request_duration_seconds", labels: "route=\"\(route)\",")
        }
        text += "# HELP modalstack_db_commit_duration_seconds Time to commit a batch of changes to the database.\n"
        text += "# TYPE modalstack_db_commit_duration_seconds histogram\n"
        text += Self.render(state.commits, name: "modalstack_db_commit_duration_seconds", labels: "")
        text += "# HELP modalstack_presentation_events_total Events of sessions' presentations, by event.\n"
        text += "# TYPE modalstack_presentation_events_total counter\n"
        // Every event from the start, at 0 until it happens (Prometheus' advice for known labels).
        for kind in SessionEvent.Kind.presentationEvents {
            text +=
                "modalstack_presentation_events_total{event=\"\(kind.rawValue)\"} \(state.presentationEvents[kind] ?? 0)\n"
        }
        text += "# HELP modalstack_auth_failures_total Requests refused for their credential, by reason.\n"
        text += "# TYPE modalstack_auth_failures_total counter\n"
        for (reason, count) in state.authFailures.sorted(by: { $0.key < $1.key }) {
            text += "modalstack_auth_failures_total{reason=\"\(reason)\"} \(count)\n"
        }
        for gauge in gauges {
            text +=
                "# HELP \(gauge.name) \(gauge.help)\n# TYPE \(gauge.name) gauge\n\(gauge.name) \(Self.number(gauge.value))\n"
        }
        let (rss, cpu) = Self.processUsage()
        text +=
            "# HELP process_resident_memory_bytes Resident memory size in bytes.\n# TYPE process_resident_memory_bytes gauge\n"
        text += "process_resident_memory_bytes \(rss)\n"
        text +=
            "# HELP process_cpu_seconds_total User and system CPU time spent, in seconds.\n# TYPE process_cpu_seconds_total counter\n"
        text += "process_cpu_seconds_total \(Self.number(cpu))\n"
        return text
    }

    private static func render(_ histogram: Histogram, name: String, labels: String) -> String {
        var text = ""
        var cumulative: UInt64 = 0
        for (index, bound) in buckets.enumerated() {
            cumulative += histogram.counts[index]
            text += "\(name)_bucket{\(labels)le=\"\(number(bound))\"} \(cumulative)\n"
        }
        cumulative += histogram.counts[buckets.count]
        text += "\(name)_bucket{\(labels)le=\"+Inf\"} \(cumulative)\n"
        let plainLabels = labels.isEmpty ? "" : "{\(labels.dropLast())}"
        text += "\(name)_sum\(plainLabels) \(number(histogram.sum))\n\(name)_count\(plainLabels) \(cumulative)\n"
        return text
    }

    private static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        return value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    /// Resident memory (bytes) and CPU time (seconds) of this process, from /proc/self.
    private static func processUsage() -> (rss: Int, cpu: Double) {
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let statm = readFile("/proc/self/statm").split(separator: " ")
        let rss = statm.count > 1 ? (Int(statm[1]) ?? 0) * pageSize : 0
        // Fields after the command name (which may contain spaces) start at state; utime and stime are the 12th and 13th.
        let stat = readFile("/proc/self/stat")
        let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
        let cpu = fields.count > 12 ? (Double(fields[11]) ?? 0) / ticks + (Double(fields[12]) ?? 0) / ticks : 0
        return (rss, cpu)
    }

    private static func readFile(_ path: String) -> String {
        guard let file = fopen(path, "r") else { return "" }
        defer { fclose(file) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = fread(&buffer, 1, buffer.count, file)
        return String(decoding: buffer[..<count], as: UTF8.self)
    }
}
