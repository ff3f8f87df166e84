internal import CForgeNGHTTP2
#if canImport(Glibc)
import Glibc
#endif

/// The memory of one nghttp2 session: small blocks are kept for reuse instead of going back to
/// `malloc` when nghttp2 frees them.
///
/// ## Function
/// Every request costs nghttp2 several small allocations (its stream, the queued HEADERS, a copy
/// of the header list, a buffer per received header value), made and freed in bursts of a whole
/// batch. Bursts that size overflow `malloc`'s per-thread cache and fall through to its slower
/// paths; here each block size has its own stack of freed blocks, so a steady stream of requests
/// allocates nothing after the first burst.
///
/// ## Implementation
/// Blocks carry a 16-byte header before the pointer nghttp2 sees: the size class (or `bigBlock`)
/// and the usable size, which `free` and `realloc` read back. Sizes up to 1 KiB fall into five
/// classes; larger ones go straight to `malloc`. Each class keeps at most `cachedPerClass` free
/// blocks, about 2 MiB per session at most. A session is used on one thread only (nghttp2 is not
/// thread-safe), so neither are the stacks; they live in raw memory, so no access needs an
/// exclusivity check.
final class SessionAllocator {
    private static let classSizes = [64, 128, 256, 512, 1024]
    private static let headerSize = 16
    private static let bigBlock = -1
    /// Free blocks kept per class; none under AddressSanitizer, so that it still sees nghttp2's
    /// every use of a freed block.
    static let cachedPerClass = dlsym(nil, "__asan_init") == nil ? 1024 : 0

    /// `classSizes.count` stacks of `cachedPerClass` block pointers each, and their depths.
    private let stacks: UnsafeMutablePointer<UnsafeMutableRawPointer>
    private let depths: UnsafeMutablePointer<Int>

    init() {
        self.stacks = .allocate(capacity: Self.classSizes.count * Self.cachedPerClass)
        self.depths = .allocate(capacity: Self.classSizes.count)
        self.depths.initialize(repeating: 0, count: Self.classSizes.count)
    }

    deinit {
        for sizeClass in 0..<Self.classSizes.count {
            for index in 0..<self.depths[sizeClass] { Glibc.free(self.stacks[sizeClass * Self.cachedPerClass + index]) }
        }
        self.stacks.deallocate()
        self.depths.deallocate()
    }

    /// The `nghttp2_mem` that sends a session's allocations here. The allocator must outlive the
    /// session (nghttp2 frees the session's last blocks in `nghttp2_session_del`).
    var nghttp2Memory: nghttp2_mem {
        nghttp2_mem(
            mem_user_data: Unmanaged.passUnretained(self).toOpaque(),
            malloc: allocateCallback, free: freeCallback, calloc: callocCallback, realloc: reallocCallback
        )
    }

    @inline(__always)
    private static func sizeClass(for size: Int) -> Int {
        if size <= 64 { return 0 }
        if size <= 128 { return 1 }
        if size <= 256 { return 2 }
        if size <= 512 { return 3 }
        if size <= 1024 { return 4 }
        return Self.bigBlock
    }

    func allocate(_ size: Int) -> UnsafeMutableRawPointer? {
        // A size_t above Int.max arrives negative; nghttp2 never asks for such sizes, malloc would refuse them.
        guard size >= 0, size <= Int.max - Self.headerSize else { return nil }
        let sizeClass = Self.sizeClass(for: size)
        if sizeClass != Self.bigBlock, self.depths[sizeClass] > 0 {
            self.depths[sizeClass] -= 1
            return self.stacks[sizeClass * Self.cachedPerClass + self.depths[sizeClass]] + Self.headerSize
        }
        let usable = sizeClass == Self.bigBlock ? size : Self.classSizes[sizeClass]
        guard let block = Glibc.malloc(Self.headerSize + usable) else { return nil }
        block.storeBytes(of: sizeClass, as: Int.self)
        block.storeBytes(of: usable, toByteOffset: 8, as: Int.self)
        return block + Self.headerSize
    }

    func free(_ pointer: UnsafeMutableRawPointer?) {
        guard let pointer else { return }
        let block = pointer - Self.headerSize
        let sizeClass = block.load(as: Int.self)
        if sizeClass != Self.bigBlock, self.depths[sizeClass] < Self.cachedPerClass {
            self.stacks[sizeClass * Self.cachedPerClass + self.depths[sizeClass]] = block
            self.depths[sizeClass] += 1
        } else {
            Glibc.free(block)
        }
    }

    func reallocate(_ pointer: UnsafeMutableRawPointer?, to size: Int) -> UnsafeMutableRawPointer? {
        guard let pointer else { return self.allocate(size) }
        let usable = (pointer - Self.headerSize).load(fromByteOffset: 8, as: Int.self)
        if size <= usable { return pointer }
        guard let moved = self.allocate(size) else { return nil }
        moved.copyMemory(from: pointer, byteCount: usable)
        self.free(pointer)
        return moved
    }

    /// Blocks waiting for reuse, by size class (for tests).
    var cachedBlocks: [Int] { (0..<Self.classSizes.count).map { self.depths[$0] } }
}

/// Runs `body` with the allocator of `userData`, with no retain and release around it (nghttp2
/// allocates several times per request; the session keeps its allocator alive).
private func withAllocator<Result>(_ userData: UnsafeMutableRawPointer?, _ body: (SessionAllocator) -> Result) -> Result {
    guard let userData else { preconditionFailure("nghttp2 allocation without its allocator") }
    return Unmanaged<SessionAllocator>.fromOpaque(userData)._withUnsafeGuaranteedRef(body)
}

private let allocateCallback: nghttp2_malloc = { size, userData in withAllocator(userData) { $0.allocate(size) } }

private let freeCallback: nghttp2_free = { pointer, userData in withAllocator(userData) { $0.free(pointer) } }

private let callocCallback: nghttp2_calloc = { count, size, userData in
    let (total, overflow) = count.multipliedReportingOverflow(by: size)
    guard !overflow, let pointer = withAllocator(userData, { $0.allocate(total) }) else { return nil }
    pointer.initializeMemory(as: UInt8.self, repeating: 0, count: total)
    return pointer
}

private let reallocCallback: nghttp2_realloc = { pointer, size, userData in withAllocator(userData) { $0.reallocate(pointer, to: size) } }
