import ForgeNotificationService
import ForgeNotificationTypes
import ForgeSupport
import Foundation
import Testing

/// Collects what the content handler delivered.
final class Deliveries: Sendable {
    private let delivered = LockedBox<[NotificationContent]>([])

    func record(_ content: NotificationContent) { self.delivered.withLock { $0.append(content) } }
    var all: [NotificationContent] { self.delivered.withLock { $0 } }
}

private func mutableRequest(mutable: Bool = true) throws -> NotificationRequest {
    let payload = try JSONValue(parsing: Array(
        #"{"aps":{"alert":{"title":"New photo","body":"From Ada"}\#(mutable ? #","mutable-content":1"# : "")},"image-url":"https://example.com/a.jpg"}"#.utf8
    ))
    return NotificationRequest(identifier: "photo-1", content: NotificationContent(payload: payload))
}

@Suite("NotificationServiceManager")
struct NotificationServiceManagerTests {
    @Test("The seed's pattern: wait, modify from the task, notify, complete(false): delivered once, modified")
    func normalPath() throws {
        let deliveries = Deliveries()
        let manager = try #require(NotificationServiceManager(request: try mutableRequest()) { deliveries.record($0) })
        manager.wait()
        manager.complete(forces: false)  // didReceive returns while the download runs
        #expect(deliveries.all.isEmpty)
        manager.mutableContent.update {
            $0.title = "New photo from Ada"
            $0.attachments = [NotificationAttachment(identifier: "img", url: URL(fileURLWithPath: "/tmp/a.jpg"))]
        }
        manager.notify()
        #expect(deliveries.all.count == 1)
        #expect(deliveries.all.first?.title == "New photo from Ada")
        #expect(deliveries.all.first?.attachments.count == 1)
        #expect(manager.isDelivered)
        manager.notify()
        manager.complete(forces: true)
        #expect(deliveries.all.count == 1)
    }

    @Test("No task: complete(false) delivers at once")
    func noTasks() throws {
        let deliveries = Deliveries()
        let manager = try #require(NotificationServiceManager(request: try mutableRequest()) { deliveries.record($0) })
        manager.complete(forces: false)
        #expect(deliveries.all.count == 1 && deliveries.all.first?.title == "New photo")
    }

    @Test("Time will expire: complete(true) delivers what there is while a task hangs; its late notify does nothing")
    func forced() throws {
        let deliveries = Deliveries()
        let manager = try #require(NotificationServiceManager(request: try mutableRequest()) { deliveries.record($0) })
        manager.wait()
        manager.complete(forces: false)
        manager.complete(forces: false)  // no-op
        #expect(deliveries.all.isEmpty)
        manager.complete(forces: true)
        #expect(deliveries.all.count == 1 && deliveries.all.first?.title == "New photo")
        manager.notify()
        #expect(deliveries.all.count == 1)
    }

    @Test("wait() after completion was asked for, and notify() at zero, are no-ops")
    func noOps() throws {
        let deliveries = Deliveries()
        let manager = try #require(NotificationServiceManager(request: try mutableRequest()) { deliveries.record($0) })
        manager.notify()  // at zero: nothing
        manager.wait()
        manager.complete(forces: false)
        manager.wait()  // ignored: would otherwise keep the delivery waiting forever
        manager.notify()
        #expect(deliveries.all.count == 1)
        #expect(manager.debugDescription == "NotificationServiceManager(request: photo-1, pending tasks: 0, delivered)")
    }

    @Test("Without mutable-content there is no extension to manage")
    func notMutable() throws {
        #expect(NotificationServiceManager(request: try mutableRequest(mutable: false)) { _ in } == nil)
    }

    @Test("Stress: 100 tasks ending concurrently with a forced completion racing them: delivered exactly once", arguments: 0..<20)
    func stress(_ round: Int) async throws {
        let deliveries = Deliveries()
        let manager = try #require(NotificationServiceManager(request: try mutableRequest()) { deliveries.record($0) })
        for _ in 0..<100 { manager.wait() }
        manager.complete(forces: false)
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<100 {
                group.addTask {
                    manager.mutableContent.update { $0.body += "." }
                    manager.notify()
                    if index == round * 5 { manager.complete(forces: true) }
                }
            }
        }
        #expect(deliveries.all.count == 1)
        #expect(manager.isDelivered)
    }
}
