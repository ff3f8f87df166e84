internal import ForgeHTTP2
internal import Synchronization

/// ``APNSClient/executor``: runs tasks on the I/O threads of the client's connections.
///
/// A task resumed by a response is queued on the thread that read it, and its next request goes
/// out on that thread's connection when it has room: a task that sends in a loop then crosses no
/// thread at all, where one on the global executor crosses two per push (its request to the I/O
/// thread, its response back). Other jobs (a task's start, a wake after a sleep) go to the
/// connections in turn; with no connection open yet, to the global executor.
final class ClientExecutor: TaskExecutor {
    private let pools: [ConnectionPool]
    private let turn = Atomic<Int>(0)

    init(pools: [ConnectionPool]) {
        self.pools = pools
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let identity = self.asUnownedTaskExecutor()
        if HTTP2Connection.enqueueOnCurrentThread(job, as: identity) { return }
        if !self.pools.isEmpty {
            let turn = self.turn.wrappingAdd(1, ordering: .relaxed).oldValue & Int.max
            if self.pools[turn % self.pools.count].enqueue(job, as: identity, turn: turn / self.pools.count) { return }
        }
        globalConcurrentExecutor.enqueue(ExecutorJob(job))
    }
}
