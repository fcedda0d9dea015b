/* What jansson allows: the CPU time jansson needs to parse every page of a
 * workload once, with nothing else in the way.
 *
 *     floor DIR RUNS RESULT [--append]
 *
 * reads every *.json file in DIR into memory (not timed), then, RUNS times,
 * parses each page with json_loadb and releases it, and writes to RESULT
 * {"pages": N, "bytes": B, "cpu_s": [one CPU time per run]}. With --append,
 * the CPU times of RESULT's earlier runs are kept ahead of this call's
 * (scripts/bench runs the floor once per round, in turn with the programs
 * it is compared with, so that all of them meet the same machine).
 *
 * Nothing is read, written, scanned or kept while the clock runs, and memory
 * comes from a buffer that is reset after each page, so allocation costs next
 * to nothing. Any program that parses each page with jansson needs at least
 * this much CPU time; on two cores, at least half of it in wall time. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pool.h"

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int out_of_memory(void) {
    fprintf(stderr, "floor: out of memory\n");
    return 1;
}

static int ends_with_json(const char *name) {
    size_t n = strlen(name);
    return n > 5 && strcmp(name + n - 5, ".json") == 0;
}

int main(int argc, char **argv) {
    int append = argc == 5 && strcmp(argv[4], "--append") == 0;
    if (argc != 4 && !append) {
        fprintf(stderr, "usage: floor DIR RUNS RESULT [--append]\n");
        return 2;
    }
    const char *dir = argv[1];
    int runs = atoi(argv[2]);
    if (runs < 1) runs = 1;

    /* Earlier runs' CPU times, read before jansson allocates from the pool. */
    json_t *earlier = NULL;
    if (append) {
        json_t *previous = json_load_file(argv[3], 0, NULL);
        json_t *times = previous ? json_object_get(previous, "cpu_s") : NULL;
        earlier = json_is_array(times) ? json_deep_copy(times) : json_array();
        json_decref(previous);
        if (!earlier) return out_of_memory();
    }
    size_t done = earlier ? json_array_size(earlier) : 0;

    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        return 1;
    }
    size_t count = 0, capacity = 1024, total = 0, largest = 0;
    char **pages = malloc(capacity * sizeof *pages);
    size_t *sizes = malloc(capacity * sizeof *sizes);
    if (!pages || !sizes) return out_of_memory();
    struct dirent *entry;
    while ((entry = readdir(d))) {
        if (!ends_with_json(entry->d_name)) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, entry->d_name);
        FILE *f = fopen(path, "rb");
        long size = -1;
        if (f && fseek(f, 0, SEEK_END) == 0) size = ftell(f);
        if (size < 0) {
            perror(path);
            return 1;
        }
        rewind(f);
        if (count == capacity) {
            capacity *= 2;
            pages = realloc(pages, capacity * sizeof *pages);
            sizes = realloc(sizes, capacity * sizeof *sizes);
            if (!pages || !sizes) return out_of_memory();
        }
        pages[count] = malloc(size > 0 ? (size_t)size : 1);
        if (!pages[count]) return out_of_memory();
        if (fread(pages[count], 1, (size_t)size, f) != (size_t)size) {
            perror(path);
            return 1;
        }
        fclose(f);
        sizes[count++] = (size_t)size;
        total += (size_t)size;
        if ((size_t)size > largest) largest = (size_t)size;
    }
    closedir(d);
    if (count == 0) {
        fprintf(stderr, "floor: no *.json pages in %s\n", dir);
        return 1;
    }

    /* A jansson tree takes 6-8 times its text; give it room to spare. */
    pool_size = largest * 16 + (1 << 20);
    pool = malloc(pool_size);
    if (!pool) return out_of_memory();
    /* Touch the pool once so that no run pays for its first faults. */
    memset(pool, 0, pool_size);
    json_set_alloc_funcs(pool_malloc, pool_free);

    FILE *out = fopen(argv[3], "w");
    if (!out) {
        perror(argv[3]);
        return 1;
    }
    fprintf(out, "{\"pages\": %zu, \"bytes\": %zu, \"cpu_s\": [", count, total);
    for (size_t i = 0; i < done; i++)
        fprintf(out, "%s%.4f", i ? ", " : "", json_number_value(json_array_get(earlier, i)));
    for (int run = 0; run < runs; run++) {
        double start = cpu_seconds();
        for (size_t i = 0; i < count; i++) {
            json_error_t error;
            pool_used = 0;
            json_t *page = json_loadb(pages[i], sizes[i], 0, &error);
            if (!page) {
                fprintf(stderr, "floor: page %zu: %s\n", i, error.text);
                return 1;
            }
            json_decref(page);
        }
        double seconds = cpu_seconds() - start;
        fprintf(out, "%s%.4f", done + (size_t)run ? ", " : "", seconds);
        printf("  jansson floor run %zu: %.3f s CPU (%zu pages, %.1f MB)\n", done + (size_t)run + 1, seconds, count, total / 1e6);
    }
    fprintf(out, "]}\n");
    json_decref(earlier);
    fclose(out);
    return 0;
}
