public import ForgeAPNsCore
package import ForgeHTTP2
internal import ForgeSupport
public import struct Foundation.Date

/// One request the local server judged, as ``LocalAPNSInbox`` keeps it: the request as it came
/// (method, path, headers, body), the answer, and the judge's sentence on a rejection.
public struct LocalAPNSInboxEntry: Sendable {
    /// Its place among everything the inbox recorded, from 1; never reused, not even after a clear.
    public var sequence: Int
    /// When it was judged.
    public var date: Date
    /// The request's method.
    public var method: String
    /// The request's path.
    public var path: String
    /// The request's headers, in order (``headersRedacted`` hides the provider token).
    package var headers: [HTTP2HeaderField]
    /// The body as sent.
    public var body: [UInt8]
    /// The answer.
    package var decision: APNSDecision
    /// Why it was rejected, in one sentence; `nil` when accepted.
    public var why: String?
    /// The injected fault, if one answered instead of the judge.
    public var fault: LocalAPNSFault?
    /// The connection it came on.
    public var connectionID: UInt64
    /// Notes on what a device would make of an accepted push (empty when there are none).
    public var lints: [String]

    /// Creates an entry; ``LocalAPNSInbox/record(_:)`` sets its ``sequence``.
    package init(
        sequence: Int = 0, date: Date, method: String, path: String, headers: [HTTP2HeaderField], body: [UInt8],
        decision: APNSDecision, why: String?, fault: LocalAPNSFault?, connectionID: UInt64, lints: [String]
    ) {
        self.sequence = sequence
        self.date = date
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.decision = decision
        self.why = why
        self.fault = fault
        self.connectionID = connectionID
        self.lints = lints
    }

    /// The `apns-id` (device pushes) or `apns-request-id` (broadcasts, channels) answered.
    public var apnsID: String { self.decision.apnsID }
    /// The HTTP status answered.
    public var status: Int { self.decision.status }
    /// Whether it was accepted (2xx).
    public var isAccepted: Bool { self.decision.isAccepted }
    /// The reason of a rejection, as answered; `nil` when accepted.
    public var reason: APNSErrorReason? { self.decision.reason }
    /// The device token of a device push (lower-case hex).
    public var token: String? {
        if let token = self.decision.target.token { return token }
        guard self.path.hasPrefix(APNSJudge.devicePrefix) else { return nil }
        let text = String(self.path.dropFirst(APNSJudge.devicePrefix.count))
        return text.isEmpty ? nil : text
    }
    /// The broadcast channel of a broadcast.
    public var channelID: String? {
        if case .broadcast(_, let channel) = self.decision.target { return channel }
        return self.path.hasPrefix(APNSJudge.broadcastPrefix) ? self[header: "apns-channel-id"] : nil
    }
    /// `apns-topic`, or the bundle id of a broadcast or channel request.
    public var topic: String? {
        switch self.decision.target {
        case .broadcast(let bundle, _), .channels(let bundle): return bundle
        case .device, .unknown: return self[header: "apns-topic"]
        }
    }
    /// The push type: the judge's reading, else the header as sent.
    public var pushType: String? { self.decision.pushType?.rawValue ?? self[header: "apns-push-type"] }
    /// `apns-priority`, when it is a number.
    public var priority: Int? { self[header: "apns-priority"].flatMap { Int($0) } }
    /// `apns-expiration`, when it is a number.
    public var expiration: Int64? { self[header: "apns-expiration"].flatMap { Int64($0) } }
    /// `apns-collapse-id`.
    public var collapseID: String? { self[header: "apns-collapse-id"] }

    /// The first value of a request header.
    public subscript(header name: String) -> String? { self.headers.first { $0.name == name }?.value }

    /// The headers with `authorization` shown as `bearer <redacted>`: no provider token leaves the server.
    package var headersRedacted: [HTTP2HeaderField] {
        self.headers.map { $0.name == "authorization" ? HTTP2HeaderField("authorization", Self.redacted($0.value)) : $0 }
    }

    static func redacted(_ authorization: String) -> String {
        authorization.hasPrefix("bearer ") ? "bearer <redacted>" : "<redacted>"
    }
}

/// What ``LocalAPNSInbox/pushes(matching:)`` and ``LocalAPNSInbox/waitForPush(matching:timeout:)``
/// select: every field that is set must match.
public struct LocalAPNSInboxQuery: Sendable, Hashable {
    /// A status, or every acceptance or every rejection.
    public enum Status: Sendable, Hashable {
        case code(Int)
        case accepted
        case rejected
    }

    /// The device token (any case).
    public var token: String?
    /// The topic (as sent; the bundle id for broadcasts and channels).
    public var topic: String?
    /// The push type (`alert`, `liveactivity`, …).
    public var pushType: String?
    /// The status.
    public var status: Status?
    /// Text the payload contains (case-insensitive).
    public var text: String?
    /// Judged at or after this date.
    public var since: Date?
    /// The most entries a list returns (newest first).
    public var limit: Int

    /// The largest ``limit``.
    package static let maximumLimit = 10_000

    /// Creates a query; without arguments it matches everything, 100 at a time.
    public init(
        token: String? = nil, topic: String? = nil, pushType: String? = nil, status: Status? = nil, text: String? = nil,
        since: Date? = nil, limit: Int = 100
    ) {
        self.token = token?.lowercased()
        self.topic = topic
        self.pushType = pushType
        self.status = status
        self.text = text
        self.since = since
        self.limit = limit
    }

    /// Whether `entry` passes every filter.
    public func matches(_ entry: LocalAPNSInboxEntry) -> Bool {
        if let token = self.token, entry.token?.lowercased() != token { return false }
        if let topic = self.topic, entry.topic != topic { return false }
        if let pushType = self.pushType, entry.pushType?.lowercased() != pushType.lowercased() { return false }
        if let status = self.status {
            switch status {
            case .code(let code): if entry.status != code { return false }
            case .accepted: if !entry.isAccepted { return false }
            case .rejected: if entry.isAccepted { return false }
            }
        }
        if let since = self.since, entry.date < since { return false }
        if let text = self.text, !text.isEmpty {
            guard String(decoding: entry.body, as: UTF8.self).lowercased().contains(text.lowercased()) else { return false }
        }
        return true
    }
}

/// Every request the local server judged, accepted or rejected, newest first, up to a capacity
/// (the oldest dropped and counted): what `apnsctl serve`'s inbox page and JSON API show, and
/// what a Swift test can query, await and clear without HTTP.
///
/// Thread-safe. Recording costs one append under a lock and a yield per subscriber; the JSON and
/// the filters are computed when someone asks.
public final class LocalAPNSInbox: Sendable {
    /// What subscribers of ``events(buffer:)`` see.
    public enum Event: Sendable {
        /// A request was judged.
        case push(LocalAPNSInboxEntry)
        /// ``clear()`` emptied the inbox.
        case cleared
    }

    /// A page of ``pushes(matching:)``.
    public struct Page: Sendable {
        /// How many entries match, before the limit.
        public var total: Int
        /// How many entries the inbox dropped for room since it was last cleared.
        public var dropped: Int
        /// The matching entries, newest first, at most the query's limit.
        public var entries: [LocalAPNSInboxEntry]
    }

    /// An entry kept by reference: the ring, queries and batches copy one reference, not the
    /// entry's dozen strings and arrays.
    private final class Stored: @unchecked Sendable {
        // @unchecked Sendable: `entry` is written once, under the inbox's lock, before the object
        // is stored; only read afterwards.
        var entry: LocalAPNSInboxEntry
        init(_ entry: consuming LocalAPNSInboxEntry) { self.entry = entry }
    }

    private struct State {
        /// A ring: oldest at `start` once full.
        var storage: [Stored] = []
        var start = 0
        var dropped = 0
        var sequence = 0
        /// How many clears so far.
        var clears = 0
        /// Whether the doorbell was rung since ``entries(after:limit:)`` was last called: it rings
        /// once per batch read, not once per record.
        var rung = false
        /// When each activity token last got an accepted priority-10 update (LA007). Forgotten in
        /// one go past 100,000 tokens: a lint may then be missed, never invented.
        var lastUrgentUpdate: [String: Date] = [:]

        /// The i-th newest entry.
        func newest(_ index: Int) -> LocalAPNSInboxEntry { self.newestStored(index).entry }

        func newestStored(_ index: Int) -> Stored {
            self.storage[(self.start + self.storage.count - 1 - index) % self.storage.count]
        }
    }

    /// The most entries kept.
    public let capacity: Int
    private let state = LockedBox(State())
    private let subscribers = Fanout<Event>()
    /// Rung once per record: readers of ``changes()`` learn that something was recorded and read it
    /// with ``entries(after:limit:)`` in batches, so a flood costs them one wake-up per batch.
    private let doorbell = Fanout<Void>()

    /// Creates an inbox that keeps the newest `capacity` entries.
    public init(capacity: Int = 10_000) {
        precondition(capacity >= 1, "an inbox keeps at least one entry")
        self.capacity = capacity
    }

    /// Records one judged request; returns it with its sequence number.
    @discardableResult
    package func record(_ entry: LocalAPNSInboxEntry) -> LocalAPNSInboxEntry {
        self.store(entry).entry
    }

    /// Records one judged request; returns its sequence number (the server's path: the entry is
    /// moved in, not copied).
    package func append(_ entry: consuming LocalAPNSInboxEntry) -> Int {
        self.store(entry).entry.sequence
    }

    /// Records one judged request (its sequence number and any LA007 lint added); returns what is kept.
    private func store(_ entry: consuming LocalAPNSInboxEntry) -> Stored {
        let stored = Stored(entry)
        let urgentUpdate = Self.urgentUpdateToken(stored.entry)
        let ring = self.state.withLock { state -> Bool in
            if let token = urgentUpdate {
                if let previous = state.lastUrgentUpdate[token],
                    let lint = APNSLinter.frequentUpdate(after: .milliseconds(Int64(stored.entry.date.timeIntervalSince(previous) * 1000)))
                {
                    stored.entry.lints.append(lint.description)
                }
                if state.lastUrgentUpdate.count >= 100_000 { state.lastUrgentUpdate.removeAll() }
                state.lastUrgentUpdate[token] = stored.entry.date
            }
            state.sequence += 1
            stored.entry.sequence = state.sequence
            if state.storage.count < self.capacity {
                state.storage.append(stored)
            } else {
                state.storage[state.start] = stored
                state.start = (state.start + 1) % self.capacity
                state.dropped += 1
            }
            // Under the lock, so every subscriber sees entries in sequence order.
            if !self.subscribers.isEmpty { self.subscribers.yield(.push(stored.entry)) }
            defer { state.rung = true }
            return !state.rung
        }
        if ring { self.doorbell.yield(()) }
        return stored
    }

    /// The token of an accepted Live Activity update at priority 10 (the default), for LA007; `nil`
    /// for anything else. Reads only the push type and priority headers unless they match.
    private static func urgentUpdateToken(_ entry: LocalAPNSInboxEntry) -> String? {
        guard entry.isAccepted, entry.decision.pushType == .liveactivity, (entry.priority ?? 10) == 10,
            let token = entry.decision.target.token, entry.body.firstRange(of: Self.updateEvent) != nil
        else { return nil }
        return token
    }

    private static let updateEvent = Array(#""event":"update""#.utf8)

    /// The entries that match `query`, newest first, at most `query.limit`.
    public func pushes(matching query: LocalAPNSInboxQuery = LocalAPNSInboxQuery()) -> Page {
        // References copied out under the lock, filtered outside it: a query never holds up judging.
        let (stored, dropped) = self.state.withLock { state in
            ((0..<state.storage.count).map { state.newestStored($0) }, state.dropped)
        }
        var total = 0
        var page: [LocalAPNSInboxEntry] = []
        for item in stored where query.matches(item.entry) {
            total += 1
            if page.count < query.limit { page.append(item.entry) }
        }
        return Page(total: total, dropped: dropped, entries: page)
    }

    /// The newest entry answered with `apnsID` (any case).
    public func entry(apnsID: String) -> LocalAPNSInboxEntry? {
        let wanted = apnsID.lowercased()
        return self.state.withLock { state in
            for index in 0..<state.storage.count where state.newest(index).apnsID.lowercased() == wanted {
                return state.newest(index)
            }
            return nil
        }
    }

    /// How many entries are kept now.
    public var count: Int { self.state.withLock { $0.storage.count } }

    /// How many entries were dropped for room since the last clear.
    public var dropped: Int { self.state.withLock { $0.dropped } }

    /// Forgets every entry (and the dropped count); subscribers see ``Event/cleared``.
    public func clear() {
        self.state.withLock { state in
            state.storage.removeAll()
            state.start = 0
            state.dropped = 0
            state.clears += 1
            state.rung = true
            self.subscribers.yield(.cleared)
        }
        self.doorbell.yield(())
    }

    /// The first entry kept since the last clear that matches `query`, oldest first; if none, the
    /// next one recorded within `timeout`; `nil` when none comes in time or the task is cancelled.
    public func waitForPush(matching query: LocalAPNSInboxQuery, timeout: Duration) async -> LocalAPNSInboxEntry? {
        // The scan and the subscription under one lock: an entry recorded in between is not missed.
        let (found, stream) = self.state.withLock { state -> (LocalAPNSInboxEntry?, AsyncStream<Event>?) in
            for index in (0..<state.storage.count).reversed() where query.matches(state.newest(index)) {
                return (state.newest(index), nil)
            }
            let stream = self.subscribers.subscribe(buffer: 1) { event in
                if case .push(let entry) = event { return query.matches(entry) }
                return false
            }
            return (nil, stream)
        }
        if let found { return found }
        guard let stream else { return nil }
        return await withTimeout(timeout) {
            for await event in stream {
                if case .push(let entry) = event { return entry }
            }
            return nil
        }
    }

    /// Every event from now on, as it happens. A subscriber that falls `buffer` events behind is
    /// dropped (its stream ends), so a reader that stops reading cannot grow the server's memory.
    /// The stream also ends when the server shuts down.
    public func events(buffer: Int = 4_096) -> AsyncStream<Event> {
        self.subscribers.subscribe(buffer: buffer)
    }

    /// A batch of ``entries(after:limit:)``.
    package struct Batch: Sendable {
        /// The entries recorded after the sequence asked for, oldest first.
        package var entries: [LocalAPNSInboxEntry]
        /// How many entries after the sequence asked for are not in ``entries``: dropped for room
        /// before they were read, or left out for the limit (the newest are kept).
        package var skipped: Int
        /// How many clears the inbox has had: a reader that sees it change forgets what it derived.
        package var clears: Int
    }

    /// The entries recorded after `sequence`, oldest first; when more than `limit` wait, the newest
    /// `limit` of them.
    package func entries(after sequence: Int, limit: Int) -> Batch {
        self.state.withLock { state in
            state.rung = false
            var newest: [LocalAPNSInboxEntry] = []
            var waiting = 0
            for index in 0..<state.storage.count {
                let entry = state.newest(index)
                guard entry.sequence > sequence else { break }
                waiting += 1
                if newest.count < limit { newest.append(entry) }
            }
            // When every kept entry is newer than `sequence`, those between it and the oldest kept are
            // gone: dropped for room, or cleared (a reader that sees `clears` change ignores the count).
            let oldest = state.storage.isEmpty ? nil : state.newest(state.storage.count - 1).sequence
            let missing = waiting == state.storage.count ? oldest.map { max(0, $0 - sequence - 1) } ?? 0 : 0
            return Batch(entries: newest.reversed(), skipped: waiting - newest.count + missing, clears: state.clears)
        }
    }

    /// The number of the newest entry recorded so far (0 before the first).
    package var lastSequence: Int { self.state.withLock { $0.sequence } }

    /// A signal per record or clear, coalesced: at most one waits unread (see ``entries(after:limit:)``).
    /// Ends with ``close()``.
    package func changes() -> AsyncStream<Void> {
        self.doorbell.subscribeNewest()
    }

    /// Whether ``close()`` was called (the server shut down).
    package var isClosed: Bool { self.subscribers.isFinished }

    /// Ends every subscription; later ones end at once.
    package func close() {
        self.subscribers.finish()
        self.doorbell.finish()
    }
}
