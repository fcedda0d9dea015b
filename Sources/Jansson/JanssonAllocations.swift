import CJansson
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

private let liveBlocks = Atomic<Int>(0)

/// Counts jansson's live allocations, so tests can prove that every `json_t`
/// reference is released: the count returns to where it started.
public enum JanssonAllocations {
    /// Routes jansson's allocations through counting wrappers of `malloc`
    /// and `free` (`json_set_alloc_funcs`). Call before the values under test
    /// are created; compare `live` before and after, not its absolute value.
    public static func startCounting() {
        json_set_alloc_funcs({ size in
            liveBlocks.add(1, ordering: .relaxed)
            return malloc(size)
        }, { pointer in
            if pointer != nil { liveBlocks.subtract(1, ordering: .relaxed) }
            free(pointer)
        })
    }

    /// Blocks allocated through jansson and not yet freed (since counting started).
    public static var live: Int { liveBlocks.load(ordering: .relaxed) }
}
