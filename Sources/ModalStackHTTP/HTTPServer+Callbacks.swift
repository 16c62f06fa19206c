import CMicroHTTPD

/// The C callbacks given to libmicrohttpd.
///
/// Non-capturing closures in static lets, so they are nonisolated: a closure that inherits the main
/// actor's isolation (e.g. written in `main.swift`) crashes when a worker thread calls it. Context
/// comes through `cls` (the ``RequestDispatcher``, retained by the server while the daemon runs) and
/// `*con_cls` (the ``RequestContext``, retained there until `requestCompleted`).
enum MHDCallbacks {
    static let accessHandler: MHD_AccessHandlerCallback = {
        cls, connection, url, method, _, uploadData, uploadDataSize, contextSlot in
        guard let cls, let connection, let uploadDataSize, let contextSlot else { return .NO }
        let dispatcher = Unmanaged<RequestDispatcher>.fromOpaque(cls).takeUnretainedValue()
        if let raw = contextSlot.pointee {
            let context = Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue()
            return dispatcher.proceed(context, uploadData: uploadData, uploadDataSize: uploadDataSize)
        }
        guard let url, let method else { return .NO }
        return dispatcher.begin(connection: connection, url: url, method: method, contextSlot: contextSlot)
    }

    static let requestCompleted: MHD_RequestCompletedCallback = { cls, _, contextSlot, _ in
        guard let cls, let contextSlot else { return }
        Unmanaged<RequestDispatcher>.fromOpaque(cls).takeUnretainedValue().complete(contextSlot: contextSlot)
    }

    /// Appends each (key, value) to the `[(name: String, value: String)]` that `cls` points to.
    static let collectValue: MHD_KeyValueIteratorN = { cls, _, key, keySize, value, valueSize in
        guard let cls, let key else { return .YES }
        let sink = cls.assumingMemoryBound(to: [(name: String, value: String)].self)
        let name = String(decoding: UnsafeRawBufferPointer(start: key, count: keySize), as: UTF8.self)
        let text = value.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: valueSize), as: UTF8.self) }
        sink.pointee.append((name: name, value: text ?? ""))
        return .YES
    }
}
