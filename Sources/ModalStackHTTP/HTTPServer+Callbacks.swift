import CMicroHTTPD
import Glibc

/// The C callbacks given to libmicrohttpd.
///
/// Non-capturing closures in static lets, so they are nonisolated: a closure that inherits the main
/// actor's isolation (e.g. written in `main.swift`) crashes when a worker thread calls it. Context
/// comes through `cls` (the ``RequestDispatcher`` for the daemon's callbacks, retained by the server
/// while the daemon runs, or for streamed bodies the ``HTTPStream``, retained by its response) and
/// `*con_cls` (the ``RequestContext``, retained there from `uriReceived` until `requestCompleted`).
enum MHDCallbacks {
    static let accessHandler: MHD_AccessHandlerCallback = {
        cls, connection, url, method, version, uploadData, uploadDataSize, contextSlot in
        guard let cls, let connection, let uploadDataSize, let raw = contextSlot?.pointee else { return .NO }
        let dispatcher = Unmanaged<RequestDispatcher>.fromOpaque(cls).takeUnretainedValue()
        let context = Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue()
        guard context.request == nil else {
            return dispatcher.proceed(context, uploadData: uploadData, uploadDataSize: uploadDataSize)
        }
        guard let url, let method, let version else { return .NO }
        return dispatcher.begin(context, connection: connection, url: url, method: method, version: version)
    }

    /// The request line was read (libmicrohttpd's URI log callback): `uri` is the request target
    /// as received, not yet cut at `?` nor unescaped. Makes the request's ``RequestContext``,
    /// retained in `*con_cls` until `requestCompleted`.
    static let uriReceived: modalstack_mhd_uri_callback = { cls, uri, connection in
        guard let cls, let connection else { return nil }
        let dispatcher = Unmanaged<RequestDispatcher>.fromOpaque(cls).takeUnretainedValue()
        let context = dispatcher.requestLineReceived(
            connection: connection, targetLengthBeforeNUL: uri.map { strlen($0) } ?? 0)
        return Unmanaged.passRetained(context).toOpaque()
    }

    static let requestCompleted: MHD_RequestCompletedCallback = { cls, _, contextSlot, termination in
        guard let cls, let contextSlot else { return }
        Unmanaged<RequestDispatcher>.fromOpaque(cls).takeUnretainedValue().complete(
            contextSlot: contextSlot, endedNormally: termination == .REQUEST_TERMINATED_COMPLETED_OK)
    }

    /// Called for each accepted socket before libmicrohttpd makes it a connection; `.NO` closes it.
    static let acceptPolicy: MHD_AcceptPolicyCallback = { cls, _, _ in
        guard let cls else { return .NO }
        return Unmanaged<RequestDispatcher>.fromOpaque(cls).takeUnretainedValue().admitsConnection() ? .YES : .NO
    }

    /// A connection was set up or is about to be closed. `*socketContext` keeps the connection's
    /// ``RequestDeadlines/Entry`` (retained) in between.
    static let connectionNotified: MHD_NotifyConnectionCallback = { cls, connection, socketContext, event in
        guard let cls, let connection, let socketContext else { return }
        let dispatcher = Unmanaged<RequestDispatcher>.fromOpaque(cls).takeUnretainedValue()
        switch event {
        case .CONNECTION_NOTIFY_STARTED:
            let entry = dispatcher.connectionOpened(socket: modalstack_mhd_connection_socket(connection))
            socketContext.pointee = entry.map { Unmanaged.passRetained($0).toOpaque() }
        case .CONNECTION_NOTIFY_CLOSED:
            let entry = socketContext.pointee.map {
                Unmanaged<RequestDeadlines.Entry>.fromOpaque($0).takeRetainedValue()
            }
            socketContext.pointee = nil
            dispatcher.connectionClosed(entry, socket: modalstack_mhd_connection_socket(connection))
        @unknown default: break
        }
    }

    /// `MHD_SIZE_UNKNOWN` (a macro that does not import): the body's size is not known in advance.
    static let unknownSize = UInt64.max

    /// The content reader of streamed responses; `cls` is the ``HTTPStream``, retained by the response.
    static let streamReader: MHD_ContentReaderCallback = { cls, _, buffer, max in
        guard let cls, let buffer else { return MHD_CONTENT_READER_END_WITH_ERROR }
        let stream = Unmanaged<HTTPStream>.fromOpaque(cls).takeUnretainedValue()
        return stream.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: max))
    }

    /// libmicrohttpd is done with a streamed response: releases its ``HTTPStream``.
    static let streamReleased: MHD_ContentReaderFreeCallback = { cls in
        guard let cls else { return }
        Unmanaged<HTTPStream>.fromOpaque(cls).release()
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
