/* The least a program must do for a file workload: one thread, one loop,
 * every page read, parsed with jansson, kept and answered.
 *
 *     lean DIR > REPLIES
 *
 * follows the pages of DIR as nextpage does (first.json, then the file that
 * each page's "next_cursor" names, until it is null): opens, reads and closes
 * each page file, parses it with json_loadb (allocating as bench/floor.c
 * does, from a buffer reset after each page), copies the page's bytes into
 * memory kept to the end (fresh memory, as items kept are), and writes one
 * reply line per page with a single writev: a JSON-RPC envelope around the
 * page as sent (whitespace and all, not compacted: as many bytes as the
 * items nextpage writes, give or take a tenth).
 *
 * No requests are read, nothing is scanned, checked for repeated keys or
 * handed between threads, and no id is read. So its CPU time is what the
 * workload's own work costs (the floor's parse, plus the kernel reading
 * 10,000 files, writing the replies and giving memory to what is kept):
 * the floor's CPU time says what jansson allows, this says what the
 * workload allows. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "pool.h"

static int fail(const char *what) {
    fprintf(stderr, "lean: %s: %s\n", what, strerror(errno));
    return 1;
}

/* Writes all of the iovecs (a short write continues where it stopped). */
static int write_all(struct iovec *v, int count) {
    while (count > 0) {
        ssize_t n = writev(STDOUT_FILENO, v, count);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        while (count > 0 && (size_t)n >= v->iov_len) {
            n -= (ssize_t)v->iov_len;
            v++;
            count--;
        }
        if (count > 0) {
            v->iov_base = (char *)v->iov_base + n;
            v->iov_len -= (size_t)n;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: lean DIR > REPLIES\n");
        return 2;
    }
    const char *dir = argv[1];

    pool_size = 64 << 20;
    pool = malloc(pool_size);
    if (!pool) return fail("pool");
    /* Touched once, as the floor's is: no page pays for the parse's first faults. */
    memset(pool, 0, pool_size);
    json_set_alloc_funcs(pool_malloc, pool_free);

    /* What is kept: reserved once, given memory by the kernel as it fills. */
    size_t kept_size = (size_t)1 << 36, kept = 0;
    unsigned char *kept_bytes = mmap(NULL, kept_size, PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (kept_bytes == MAP_FAILED) return fail("mmap");

    size_t capacity = 1 << 20;
    char *page = malloc(capacity);
    if (!page) return fail("buffer");
    char name[1024] = "first.json", path[4096];
    size_t pages = 0;
    for (;;) {
        snprintf(path, sizeof path, "%s/%s", dir, name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) return fail(path);
        struct stat info;
        if (fstat(fd, &info) != 0) return fail(path);
        if ((size_t)info.st_size + 1 > capacity) {
            capacity = (size_t)info.st_size * 2 + 1;
            page = realloc(page, capacity);
            if (!page) return fail("buffer");
        }
        size_t size = 0;
        for (;;) {
            ssize_t n = read(fd, page + size, capacity - size);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) return fail(path);
            size += (size_t)n;
            if (n == 0 || size >= (size_t)info.st_size) break;
        }
        close(fd);

        json_error_t error;
        pool_used = 0;
        json_t *root = json_loadb(page, size, 0, &error);
        if (!root) {
            fprintf(stderr, "lean: %s: %s\n", path, error.text);
            return 1;
        }
        json_t *items = json_object_get(root, "items");
        json_t *next = json_object_get(root, "next_cursor");
        if (!json_is_array(items)) {
            fprintf(stderr, "lean: %s: no items array\n", path);
            return 1;
        }
        size_t count = json_array_size(items);
        int more = json_is_string(next);
        if (more) snprintf(name, sizeof name, "%s.json", json_string_value(next));
        json_decref(root);

        if (kept + size > kept_size) {
            fprintf(stderr, "lean: more than %zu bytes to keep\n", kept_size);
            return 1;
        }
        memcpy(kept_bytes + kept, page, size);
        kept += size;

        char head[160];
        int length = snprintf(head, sizeof head,
                              "{\"jsonrpc\":\"2.0\",\"id\":%zu,\"result\":{\"page\":%zu,\"count\":%zu,\"body\":",
                              pages + 1, pages + 1, count);
        struct iovec reply[3] = {{head, (size_t)length}, {page, size}, {"}}\n", 3}};
        if (write_all(reply, 3) != 0) return fail("stdout");
        pages++;
        if (!more) break;
    }
    fprintf(stderr, "lean: %zu pages, %zu bytes kept\n", pages, kept);
    return 0;
}
