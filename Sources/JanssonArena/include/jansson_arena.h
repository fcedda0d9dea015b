#ifndef NEXTPAGE_JANSSON_ARENA_H
#define NEXTPAGE_JANSSON_ARENA_H

/*
 * jansson's allocator for nextpage.
 *
 * Every block jansson allocates carries a 16-byte header naming where it
 * came from: the C heap, or an arena chunk; only blocks carved inside a
 * scratch scope (below) have none. Inside an arena scope (opened by
 * the thread that parses a page, closed when the page's tree has been
 * released) blocks are carved from a per-thread chunk and freeing them only
 * counts them down, so building and dropping a page's tree costs no malloc
 * or free per value. A chunk is reused when every block of it has been
 * freed; a block that outlives its scope keeps its chunk alive until that
 * block is freed too, on whatever thread, so correctness never depends on
 * the scope. Outside a scope, and in builds with AddressSanitizer, blocks
 * come from malloc one by one.
 *
 * The allocator is installed with json_set_alloc_funcs before main runs.
 */

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opens an arena scope on this thread (scopes nest; the outermost counts). */
void np_arena_begin(void);

/* Closes the scope opened by the matching np_arena_begin. */
void np_arena_end(void);

/* Opens a scratch scope on this thread: an arena scope whose blocks are
 * all dropped at once by np_scratch_end, without being freed one by one.
 * Its blocks are carved without a header, one after the other, and freeing
 * one does nothing (a block is known to be the scope's by its address);
 * they are not counted by np_alloc_live_blocks, since none outlives the
 * scope. Blocks from elsewhere freed inside the scope are freed as usual.
 * Nothing carved inside may be used or released after the scope ends.
 * Returns 0, opening nothing, when a scope is already open on this thread
 * or arenas are disabled in this build: the caller then releases what it
 * built as usual. */
int np_scratch_begin(void);

/* Ends the scratch scope opened by np_scratch_begin, dropping every block
 * carved inside it. */
void np_scratch_end(void);

/* Whether blocks are carved from arenas in this build (0 under AddressSanitizer). */
int np_arena_enabled(void);

/* Starts counting live jansson blocks (for tests). */
void np_alloc_start_counting(void);

/* Blocks allocated and not yet freed since counting started. */
long np_alloc_live_blocks(void);

#ifdef __cplusplus
}
#endif

#endif
