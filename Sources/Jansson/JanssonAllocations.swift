import JanssonArena

/// Counts jansson's live allocations, so tests can prove that every `json_t`
/// reference is released: the count returns to where it started.
///
/// jansson allocates through nextpage's allocator (`JanssonArena`), which is
/// installed before `main` runs; counting only switches its counter on.
public enum JanssonAllocations {
    /// Starts counting. Compare `live` before and after the values under
    /// test, not its absolute value (blocks allocated before counting
    /// started count down when they are freed).
    public static func startCounting() {
        np_alloc_start_counting()
    }

    /// Blocks allocated through jansson and not yet freed (since counting started).
    public static var live: Int { Int(np_alloc_live_blocks()) }

    /// Whether parses inside `JSON.withArena` carve their blocks from
    /// per-thread arenas (false in builds with AddressSanitizer or
    /// ThreadSanitizer, where every block is its own `malloc`).
    public static var arenasEnabled: Bool { np_arena_enabled() != 0 }
}
