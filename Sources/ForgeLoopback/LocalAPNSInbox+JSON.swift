internal import ForgeAPNsCore
internal import ForgeHTTP2
internal import ForgeSupport
package import ForgeSimulatedDevice
package import struct Foundation.Date

extension LocalAPNSInboxEntry {
    /// The entry as the inbox's JSON API gives it (one object, keys in a fixed order):
    /// `seq`, `apns_id`, `apns_unique_id`, `received_at`, `kind`, `method`, `path`, `token`,
    /// `channel_id`, `topic`, `push_type`, `priority`, `expiration`, `collapse_id`, `status`,
    /// `reason`, `why`, `payload` (the JSON object as sent; the text when it is not one, with a
    /// `warning`), `payload_bytes`, `warning`, `headers` (authorization redacted), `connection`,
    /// `lints`, `fault`, `delivery` (`null`).
    ///
    /// A provider token anywhere in it (a topic, a path, the payload, a header) is shown as
    /// `eyJhbGci…(a provider token, redacted)` (``ProviderTokenRedaction``): the API, its event
    /// stream and `apnsctl serve --record` all write this JSON, and none of them shows one.
    package var json: [UInt8] { self.json(delivery: nil) }

    /// The entry as ``json`` gives it, with `delivery`: what became of the push on its phone
    /// (`DeliveryRecord.json`, from ``LocalAPNSPhones/delivery(of:)``), `null` when not known.
    package func json(delivery: DeliveryRecord?) -> [UInt8] {
        ProviderTokenRedaction.redacting(self.unredactedJSON(delivery: delivery))
    }

    private func unredactedJSON(delivery: DeliveryRecord?) -> [UInt8] {
        var writer = JSONObjectWriter()
        writer.field("seq", self.sequence)
        writer.field("apns_id", self.apnsID)
        writer.field("apns_unique_id", self.decision.apnsUniqueID)
        writer.field("received_at", ISODate.string(self.date))
        writer.field("kind", self.kind)
        writer.field("method", self.method)
        writer.field("path", self.path)
        writer.field("token", self.token)
        writer.field("channel_id", self.channelID)
        writer.field("topic", self.topic)
        writer.field("push_type", self.pushType)
        writer.field("priority", self.priority)
        writer.field("expiration", self.expiration.map { Int($0) })
        writer.field("collapse_id", self.collapseID)
        writer.field("status", self.status)
        writer.field("reason", self.decision.reason?.rawValue)
        writer.field("why", self.why)
        let problem = self.body.isEmpty ? nil : APNSPayloadLint.jsonProblem(in: self.body)
        if self.body.isEmpty {
            writer.field("payload", nil as String?)
        } else if problem == nil {
            // A valid JSON text has line breaks only between tokens (inside strings they are escaped):
            // dropped, the object stays on one line, as NDJSON and Server-Sent Events need.
            writer.raw("payload", self.body.contains(where: { $0 == 0x0A || $0 == 0x0D }) ? self.body.filter { $0 != 0x0A && $0 != 0x0D } : self.body)
        } else {
            writer.field("payload", String(decoding: self.body, as: UTF8.self))
        }
        writer.field("payload_bytes", self.body.count)
        writer.field("warning", self.decision.warning ?? problem.map { "body is " + $0 })
        var headers = JSONObjectWriter()
        for header in self.headersRedacted { headers.field(header.name, header.value) }
        writer.raw("headers", headers.finish())
        writer.field("connection", Int(self.connectionID))
        writer.strings("lints", self.allLints)
        writer.field("fault", self.fault.map { String(describing: $0) })
        if let delivery { writer.raw("delivery", delivery.json) } else { writer.field("delivery", nil as String?) }
        return writer.finish()
    }

    /// ``lints`` and what `APNSLinter` finds in the push as it was judged (at ``date``), as
    /// `ID: message` lines. Computed when read: judging pays nothing for it.
    package var allLints: [String] {
        guard self.decision.target.isPush, !self.body.isEmpty else { return self.lints }
        let found = APNSLinter.lints(
            body: self.body, pushType: self.decision.pushType ?? .alert, priority: self.priority, collapseID: self.collapseID, now: self.date
        )
        return self.lints + found.map(\.description)
    }

    /// `device`, `broadcast`, `channels` or `unknown`.
    package var kind: String {
        if self.path.hasPrefix(APNSJudge.broadcastPrefix) { return "broadcast" }
        if self.path.hasPrefix(APNSJudge.channelsPrefix) { return "channels" }
        if self.path.hasPrefix(APNSJudge.devicePrefix) { return "device" }
        return "unknown"
    }
}

/// A JSON object written field by field, straight into bytes (strings escaped as `JSONEncoder`
/// does, through ``JSONString``).
package struct JSONObjectWriter {
    private var bytes: [UInt8] = [UInt8(ascii: "{")]
    private var first = true

    package init() {}

    private mutating func key(_ name: String) {
        if !self.first { self.bytes.append(UInt8(ascii: ",")) }
        self.first = false
        JSONString.append(name, to: &self.bytes)
        self.bytes.append(UInt8(ascii: ":"))
    }

    package mutating func field(_ name: String, _ value: String?) {
        self.key(name)
        if let value { JSONString.append(value, to: &self.bytes) } else { self.bytes.append(contentsOf: "null".utf8) }
    }

    package mutating func field(_ name: String, _ value: Int?) {
        self.key(name)
        self.bytes.append(contentsOf: (value.map(String.init) ?? "null").utf8)
    }

    package mutating func field(_ name: String, date: Date?) {
        self.field(name, date.map(ISODate.string))
    }

    /// A value that is already JSON.
    package mutating func raw(_ name: String, _ json: [UInt8]) {
        self.key(name)
        self.bytes.append(contentsOf: json)
    }

    package mutating func strings(_ name: String, _ values: [String]) {
        self.key(name)
        self.bytes.append(contentsOf: JSONArrayWriter.strings(values))
    }

    package mutating func finish() -> [UInt8] {
        self.bytes.append(UInt8(ascii: "}"))
        return self.bytes
    }
}

/// A JSON array of values that are already JSON.
package enum JSONArrayWriter {
    package static func array(_ elements: [[UInt8]]) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        for (index, element) in elements.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: element)
        }
        bytes.append(UInt8(ascii: "]"))
        return bytes
    }

    package static func strings(_ values: [String]) -> [UInt8] {
        self.array(values.map { value in
            var bytes: [UInt8] = []
            JSONString.append(value, to: &bytes)
            return bytes
        })
    }
}
