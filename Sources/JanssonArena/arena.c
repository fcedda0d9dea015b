#include "jansson_arena.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define NP_ARENA_DISABLED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NP_ARENA_DISABLED 1
#endif

/* A chunk of arena memory, carved by the thread that owns it as its current
 * chunk. The owner counts its blocks in `local` without atomics; blocks freed
 * elsewhere (another thread, or after the chunk was retired) count down
 * `remote`, which holds np_bias while the chunk is owned so that it never
 * reaches zero then. Retiring adds `local - np_bias` to `remote`: from then
 * on `remote` is the number of live blocks, and whoever brings it to zero
 * frees the chunk. */
typedef struct np_chunk {
    atomic_long remote;
    long local;
    size_t used;
    size_t capacity;
    /* Chunks filled during a scratch scope, newest first. */
    struct np_chunk *next_full;
    _Alignas(16) unsigned char data[];
} np_chunk;

/* Precedes every block but a scratch scope's: the chunk it was carved
 * from, or NULL for malloc. */
typedef struct {
    np_chunk *chunk;
    size_t reserved;
} np_header;

_Static_assert(sizeof(np_header) == 16, "the header keeps blocks 16-byte aligned");

enum {
    np_min_chunk = 256 * 1024,
    /* A chunk larger than this is returned to the C heap when its scope ends. */
    np_keep_chunk = 16 * 1024 * 1024,
};

static const long np_bias = 1L << 60;

static _Thread_local np_chunk *np_current;
static _Thread_local int np_depth;
/* Inside a scratch scope: chunks it filled are kept here, not retired. */
static _Thread_local int np_scratch;
static _Thread_local np_chunk *np_scratch_full;
static atomic_int np_counting;
static atomic_long np_live;

static np_chunk *np_new_chunk(size_t at_least) {
    size_t capacity = np_min_chunk;
    while (capacity < at_least) capacity *= 2;
    np_chunk *chunk = malloc(sizeof(np_chunk) + capacity);
    if (!chunk) return NULL;
    atomic_init(&chunk->remote, np_bias);
    chunk->local = 0;
    chunk->used = 0;
    chunk->capacity = capacity;
    chunk->next_full = NULL;
    return chunk;
}

/* The owner lets go of its chunk; the last of its blocks frees it. */
static void np_retire(np_chunk *chunk) {
    long delta = chunk->local - np_bias;
    if (atomic_fetch_add_explicit(&chunk->remote, delta, memory_order_acq_rel) + delta == 0) free(chunk);
}

/* A block with a header, from the current chunk inside an arena scope,
 * else from malloc. */
__attribute__((noinline)) static void *np_malloc_headed(size_t size) {
    if (atomic_load_explicit(&np_counting, memory_order_relaxed)) atomic_fetch_add_explicit(&np_live, 1, memory_order_relaxed);
    size_t need = (size + sizeof(np_header) + 15) & ~(size_t)15;
#ifndef NP_ARENA_DISABLED
    if (np_depth > 0) {
        np_chunk *chunk = np_current;
        if (!chunk || chunk->capacity - chunk->used < need) {
            /* Grow: the full chunk lives on until its blocks are freed. */
            size_t wanted = chunk ? chunk->capacity * 2 : np_min_chunk;
            np_chunk *fresh = np_new_chunk(wanted > need ? wanted : need);
            if (fresh) {
                if (chunk) np_retire(chunk);
                np_current = chunk = fresh;
            } else {
                chunk = NULL;
            }
        }
        if (chunk) {
            np_header *header = (np_header *)(chunk->data + chunk->used);
            chunk->used += need;
            chunk->local += 1;
            header->chunk = chunk;
            return header + 1;
        }
    }
#endif
    np_header *header = malloc(size + sizeof(np_header));
    if (!header) return NULL;
    header->chunk = NULL;
    return header + 1;
}

__attribute__((noinline)) static void np_free_headed(void *pointer) {
    if (atomic_load_explicit(&np_counting, memory_order_relaxed)) atomic_fetch_sub_explicit(&np_live, 1, memory_order_relaxed);
    np_header *header = (np_header *)pointer - 1;
    np_chunk *chunk = header->chunk;
    if (!chunk) {
        free(header);
    } else if (chunk == np_current) {
        chunk->local -= 1;
    } else if (atomic_fetch_sub_explicit(&chunk->remote, 1, memory_order_acq_rel) == 1) {
        free(chunk);
    }
}

#ifndef NP_ARENA_DISABLED
/* Inside a scratch scope: the current chunk is full; carve `need` bytes
 * from a fresh one, keeping the full one until the scope ends. */
__attribute__((noinline)) static void *np_scratch_grow(size_t need) {
    np_chunk *chunk = np_current;
    size_t wanted = chunk ? chunk->capacity * 2 : np_min_chunk;
    np_chunk *fresh = np_new_chunk(wanted > need ? wanted : need);
    /* A block from malloc would outlive the scope's drop. */
    if (!fresh) return NULL;
    if (chunk) {
        chunk->next_full = np_scratch_full;
        np_scratch_full = chunk;
    }
    np_current = fresh;
    fresh->used = need;
    return fresh->data;
}

/* Whether `pointer` lies in what `chunk` has carved so far. */
static inline int np_in_chunk(const np_chunk *chunk, const void *pointer) {
    return (uintptr_t)pointer - (uintptr_t)chunk->data < chunk->used;
}

/* Whether `pointer` was carved from one of the chunks this thread's
 * scratch scope has filled. */
__attribute__((noinline)) static int np_in_scratch_full(const void *pointer) {
    for (const np_chunk *chunk = np_scratch_full; chunk; chunk = chunk->next_full)
        if (np_in_chunk(chunk, pointer)) return 1;
    return 0;
}
#endif

/* Inside a scratch scope blocks are carved without a header and never
 * counted: each ends with the scope, so freeing one costs nothing, and
 * the block is told from others by its address (the scope's chunks hold
 * only its own blocks). Elsewhere every block carries its header. */
static void *np_malloc(size_t size) {
#ifndef NP_ARENA_DISABLED
    if (np_scratch) {
        size_t need = (size + 15) & ~(size_t)15;
        np_chunk *chunk = np_current;
        if (chunk && chunk->capacity - chunk->used >= need) {
            void *block = chunk->data + chunk->used;
            chunk->used += need;
            return block;
        }
        return np_scratch_grow(need);
    }
#endif
    return np_malloc_headed(size);
}

static void np_free(void *pointer) {
    if (!pointer) return;
#ifndef NP_ARENA_DISABLED
    if (np_scratch) {
        np_chunk *chunk = np_current;
        if (chunk && np_in_chunk(chunk, pointer)) return;
        if (np_scratch_full && np_in_scratch_full(pointer)) return;
    }
#endif
    np_free_headed(pointer);
}

/* Blocks of a chunk carved and not freed: the owner's count and the
 * count of frees from elsewhere, which started at np_bias. */
static long np_chunk_live(np_chunk *chunk) {
    return chunk->local + atomic_load_explicit(&chunk->remote, memory_order_acquire) - np_bias;
}

/* Empties a chunk whose blocks are all gone (freed or dropped), for its
 * owner to carve again. */
static void np_chunk_reuse(np_chunk *chunk) {
    chunk->used = 0;
    chunk->local = 0;
    atomic_store_explicit(&chunk->remote, np_bias, memory_order_relaxed);
}

void np_arena_begin(void) {
    np_depth += 1;
}

void np_arena_end(void) {
    if (np_depth == 0) return;
    np_depth -= 1;
    if (np_depth > 0) return;
    np_chunk *chunk = np_current;
    if (!chunk) return;
    /* Every block freed (here or elsewhere): reuse the chunk. No block is
     * live, so nobody else can touch it now. */
    if (np_chunk_live(chunk) == 0 && chunk->capacity <= np_keep_chunk) {
        np_chunk_reuse(chunk);
        return;
    }
    np_current = NULL;
    np_retire(chunk);
}

int np_scratch_begin(void) {
#ifdef NP_ARENA_DISABLED
    return 0;
#else
    if (np_depth > 0) return 0;
    /* At depth 0 the current chunk, if any, holds no live block and has
     * been emptied (see np_arena_end): everything carved from now on belongs
     * to the scope, and its blocks are told by their address. */
    if (np_current && np_current->used != 0) {
        np_retire(np_current);
        np_current = NULL;
    }
    np_depth = 1;
    np_scratch = 1;
    np_scratch_full = NULL;
    return 1;
#endif
}

void np_scratch_end(void) {
#ifndef NP_ARENA_DISABLED
    if (!np_scratch) return;
    np_chunk *chunk = np_scratch_full;
    while (chunk) {
        np_chunk *next = chunk->next_full;
        free(chunk);
        chunk = next;
    }
    np_scratch_full = NULL;
    chunk = np_current;
    if (chunk) {
        if (chunk->capacity <= np_keep_chunk) {
            np_chunk_reuse(chunk);
        } else {
            np_current = NULL;
            free(chunk);
        }
    }
    np_scratch = 0;
    np_depth = 0;
#endif
}

int np_arena_enabled(void) {
#ifdef NP_ARENA_DISABLED
    return 0;
#else
    return 1;
#endif
}

void np_alloc_start_counting(void) {
    atomic_store(&np_counting, 1);
}

long np_alloc_live_blocks(void) {
    return atomic_load(&np_live);
}

/* Installed before main, before jansson allocates anything, so that every
 * block it ever frees carries a header. */
__attribute__((constructor)) static void np_install(void) {
    json_set_alloc_funcs(np_malloc, np_free);
}
