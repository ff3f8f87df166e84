#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a `pthread_mutex_t`.
///
/// Used instead of `Synchronization.Mutex` because ThreadSanitizer intercepts pthread locks and
/// reports false races on `Mutex`, whose futex-based lock it does not model. Replace with `Mutex` once TSan
/// understands it.
///
/// On Linux the mutex is glibc's adaptive kind: a thread that finds it held spins a little before
/// it sleeps in the kernel. Every critical section here is a few dozen nanoseconds (a pool's
/// bookkeeping, a connection's inbox), so the holder is almost always done within the spin; with
/// the default kind, two threads sending at once put one to sleep in `futex` and made the other
/// wake it, about 0.2 system calls a push for 100 tasks calling `send`.
///
/// `@unchecked Sendable`: every access to `value` happens inside `withLock`, under the mutex.
package final class LockedBox<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        self.mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        self.mutex.initialize(to: pthread_mutex_t())
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        defer { pthread_mutexattr_destroy(&attributes) }
        #if canImport(Glibc)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
        #endif
        let result = pthread_mutex_init(self.mutex, &attributes)
        precondition(result == 0, "pthread_mutex_init failed: \(result)")
    }

    deinit {
        let result = pthread_mutex_destroy(self.mutex)
        precondition(result == 0, "pthread_mutex_destroy failed: \(result)")
        self.mutex.deinitialize(count: 1)
        self.mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    @inline(__always)
    package func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        pthread_mutex_lock(self.mutex)
        defer { pthread_mutex_unlock(self.mutex) }
        return try body(&self.value)
    }
}
