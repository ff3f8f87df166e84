import Foundation
@testable import ForgeSupport
import Testing

/// A minimal primitive over ``LockedBox/wait(key:onCancel:decide:)``: a mailbox whose waiters each
/// wait for a message with their own key and get the message itself.
private final class Mailbox: Sendable {
    struct State: WaitingState {
        var posted: [Int: String] = [:]
        var decisions = 0
        var waiters = WaitList<Int, String?>()
    }

    let state = LockedBox(State())

    func receive(_ key: Int, cancellable: Bool) async -> String? {
        await self.state.wait(key: key, onCancel: cancellable ? .some(nil) : nil) { state in
            state.decisions += 1
            return state.posted.removeValue(forKey: key).map { .some($0) }
        }
    }

    func post(_ key: Int, _ message: String) {
        let waiting = self.state.withLock { state in
            let waiting = state.waiters.removeFirst { $0 == key }
            if waiting == nil { state.posted[key] = message }
            return waiting
        }
        waiting?.resume(returning: message)
    }

    var waiting: Int { self.state.withLock { $0.waiters.count } }
}

/// The waiting room under every ForgeSupport primitive: answers of any type, keys of any type,
/// cancellation either answered at once or ignored.
@Suite("WaitList and LockedBox.wait")
struct WaitListTests {
    @Test("An answer ready at once needs no wait; one posted later from another thread reaches the waiter with its key")
    func answers() async {
        let mailbox = Mailbox()
        mailbox.post(1, "early")
        #expect(await mailbox.receive(1, cancellable: true) == "early")
        #expect(mailbox.state.withLock { $0.decisions } == 1, "answered on the first look")
        async let late = mailbox.receive(2, cancellable: true)
        while mailbox.waiting < 1 { await Task.yield() }
        Thread { mailbox.post(2, "late") }.start()
        #expect(await late == "late")
        #expect(mailbox.waiting == 0)
    }

    @Test("Cancelled before: the cancellation answer, and decide is never called; cancelled while waiting: the answer at once, and the waiter leaves")
    func cancellable() async {
        let mailbox = Mailbox()
        mailbox.post(1, "kept")
        let before = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await mailbox.receive(1, cancellable: true)
        }
        #expect(await before.value == nil)
        #expect(mailbox.state.withLock { $0.decisions } == 0 && mailbox.state.withLock { $0.posted[1] } == "kept")
        let during = Task { await mailbox.receive(3, cancellable: true) }
        while mailbox.waiting < 1 { await Task.yield() }
        during.cancel()
        #expect(await during.value == nil)
        #expect(mailbox.waiting == 0)
    }

    @Test("Without a cancellation answer a cancelled task keeps waiting, and gets the answer posted afterwards")
    func ignoringCancellation() async {
        let mailbox = Mailbox()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await mailbox.receive(4, cancellable: false)
        }
        while mailbox.waiting < 1 { await Task.yield() }
        task.cancel()
        // Still waiting after the cancellation: nothing resumes it but the post.
        #expect(mailbox.waiting == 1)
        mailbox.post(4, "delivered")
        #expect(await task.value == "delivered")
    }

    @Test("Many waiters with many keys, posts from several threads: each waiter gets exactly its own message")
    func many() async {
        let mailbox = Mailbox()
        let received = await withTaskGroup(of: (Int, String?).self) { group in
            for key in 0..<200 {
                group.addTask { (key, await mailbox.receive(key, cancellable: key % 2 == 0)) }
            }
            let threads = (0..<4).map { part in
                Thread { for key in stride(from: part, to: 200, by: 4) { mailbox.post(key, "m\(key)") } }
            }
            threads.forEach { $0.start() }
            var all: [Int: String?] = [:]
            for await (key, message) in group { all[key] = message }
            return all
        }
        #expect(received.count == 200)
        #expect(received.allSatisfy { $0.value == "m\($0.key)" })
        #expect(mailbox.waiting == 0 && mailbox.state.withLock { $0.posted.isEmpty })
    }
}
