/// The JSON form of sessions, as the API returns them. ``SessionDocument`` finds in it the lists
/// the store keeps.
extension Session: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        _ = writeLocatingLists(to: &writer)
    }

    /// Writes the session and returns where, in `writer.bytes`, its path, stack and queue arrays are.
    func writeLocatingLists(to writer: inout JSONWriter) -> SessionDocument.Lists {
        var lists = SessionDocument.Lists()
        writer.object { object in
            object.write("id", string: id)
            object.write("version", integer: version)
            object.write("createdAt", createdAt)
            object.write("updatedAt", updatedAt)
            object.member("path") { writer in
                let start = writer.bytes.count
                writer.write(path)
                lists.path = start..<writer.bytes.count
            }
            // The top is the last of the stack: its text is copied rather than written again.
            var top: Range<Int>?
            object.member("stack") { writer in
                let start = writer.bytes.count
                writer.array { array in
                    for presentation in stack {
                        array.element { writer in
                            let start = writer.bytes.count
                            presentation.write(to: &writer)
                            top = start..<writer.bytes.count
                        }
                    }
                }
                lists.stack = start..<writer.bytes.count
            }
            object.member("top") { writer in
                if let top {
                    writer.bytes.append(contentsOf: Array(writer.bytes[top]))
                } else {
                    writer.write(.null)
                }
            }
            object.member("queue") { writer in
                let start = writer.bytes.count
                writer.write(queue)
                lists.queue = start..<writer.bytes.count
            }
            object.write("ttl", integer: ttlSeconds)
            object.write("expiresAt", expiresAt)
        }
        return lists
    }
}
