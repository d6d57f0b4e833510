/// A connection's open streams by id. nghttp2's callbacks for one stream come in runs (a
/// request's headers one by one, its data, the reads of its response), so the stream found
/// last is kept beside the table: most lookups cost a comparison rather than hashing an id.
struct StreamTable<Stream: AnyObject> {
    private var byID: [Int32: Stream] = [:]
    /// The stream found or added last, and its id (0, the connection's own id, when none).
    private var recentID: Int32 = 0
    private var recent: Stream?

    var count: Int { byID.count }
    var isEmpty: Bool { byID.isEmpty }
    var values: Dictionary<Int32, Stream>.Values { byID.values }

    subscript(id: Int32) -> Stream? {
        mutating get {
            if id == recentID, let recent { return recent }
            guard let found = byID[id] else { return nil }
            (recentID, recent) = (id, found)
            return found
        }
    }

    mutating func insert(_ stream: Stream, id: Int32) {
        byID[id] = stream
        (recentID, recent) = (id, stream)
    }

    @discardableResult
    mutating func removeValue(forKey id: Int32) -> Stream? {
        if id == recentID { (recentID, recent) = (0, nil) }
        return byID.removeValue(forKey: id)
    }

    mutating func removeAll() {
        byID.removeAll()
        (recentID, recent) = (0, nil)
    }
}
