/* The allocator bench/floor.c and bench/lean.c give jansson: blocks carved
 * from one buffer that the caller resets (pool_used = 0) after each page, so
 * allocation costs next to nothing; a page that needs more than the buffer
 * holds falls back to malloc. Set `pool` and `pool_size`, then
 * json_set_alloc_funcs(pool_malloc, pool_free). */
#ifndef BENCH_POOL_H
#define BENCH_POOL_H

#include <stdlib.h>

static unsigned char *pool;
static size_t pool_used, pool_size;

/* Carves from the pool; falls back to malloc if a page needs more. */
static void *pool_malloc(size_t size) {
    size_t need = (size + 15) & ~(size_t)15;
    if (pool_size - pool_used >= need) {
        void *p = pool + pool_used;
        pool_used += need;
        return p;
    }
    return malloc(size);
}

static void pool_free(void *p) {
    if ((unsigned char *)p >= pool && (unsigned char *)p < pool + pool_size) return;
    free(p);
}

#endif
