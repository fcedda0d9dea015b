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

/* A chunk of arena memory. `refs` counts the blocks carved from it that are
 * still live, plus one while a thread owns it as its current chunk. */
typedef struct np_chunk {
    atomic_long refs;
    size_t used;
    size_t capacity;
    _Alignas(16) unsigned char data[];
} np_chunk;

/* Precedes every block: the chunk it was carved from, or NULL for malloc. */
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

static _Thread_local np_chunk *np_current;
static _Thread_local int np_depth;
static atomic_int np_counting;
static atomic_long np_live;

static void np_release_chunk(np_chunk *chunk) {
    if (atomic_fetch_sub_explicit(&chunk->refs, 1, memory_order_acq_rel) == 1) free(chunk);
}

static np_chunk *np_new_chunk(size_t at_least) {
    size_t capacity = np_min_chunk;
    while (capacity < at_least) capacity *= 2;
    np_chunk *chunk = malloc(sizeof(np_chunk) + capacity);
    if (!chunk) return NULL;
    atomic_init(&chunk->refs, 1);
    chunk->used = 0;
    chunk->capacity = capacity;
    return chunk;
}

static void *np_malloc(size_t size) {
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
                if (chunk) np_release_chunk(chunk);
                np_current = chunk = fresh;
            } else {
                chunk = NULL;
            }
        }
        if (chunk) {
            np_header *header = (np_header *)(chunk->data + chunk->used);
            chunk->used += need;
            header->chunk = chunk;
            atomic_fetch_add_explicit(&chunk->refs, 1, memory_order_relaxed);
            return header + 1;
        }
    }
#endif
    np_header *header = malloc(size + sizeof(np_header));
    if (!header) return NULL;
    header->chunk = NULL;
    return header + 1;
}

static void np_free(void *pointer) {
    if (!pointer) return;
    if (atomic_load_explicit(&np_counting, memory_order_relaxed)) atomic_fetch_sub_explicit(&np_live, 1, memory_order_relaxed);
    np_header *header = (np_header *)pointer - 1;
    if (header->chunk) {
        np_release_chunk(header->chunk);
    } else {
        free(header);
    }
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
    /* Only this thread's own reference left: every block is free, reuse it. */
    if (atomic_load_explicit(&chunk->refs, memory_order_acquire) == 1 && chunk->capacity <= np_keep_chunk) {
        chunk->used = 0;
        return;
    }
    np_current = NULL;
    np_release_chunk(chunk);
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
