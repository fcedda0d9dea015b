#ifndef NEXTPAGE_CJANSSON_SHIM_H
#define NEXTPAGE_CJANSSON_SHIM_H

#include <jansson.h>

/* Macros and inline helpers that Swift cannot import directly. */

static inline json_t *np_json_incref(json_t *json) { return json_incref(json); }
static inline void np_json_decref(json_t *json) { json_decref(json); }
static inline int np_json_typeof(const json_t *json) { return (int)json_typeof(json); }
static inline size_t np_json_real_precision(int n) { return JSON_REAL_PRECISION(n); }

/* Object members in the tree below `json`: the sum of the sizes of every
 * object in it. A parse that kept every member it read would hold one per
 * `"key":value` in the text; jansson keeps one per key. */
static inline size_t np_json_member_count(json_t *json) {
    size_t count = 0;
    if (json_is_object(json)) {
        count = json_object_size(json);
        for (void *it = json_object_iter(json); it; it = json_object_iter_next(json, it))
            count += np_json_member_count(json_object_iter_value(it));
    } else if (json_is_array(json)) {
        size_t size = json_array_size(json);
        for (size_t i = 0; i < size; i++)
            count += np_json_member_count(json_array_get(json, i));
    }
    return count;
}

/* Whether no value in the tree below `json` is referenced from elsewhere:
 * every reference count is 1 (true, false and null are shared constants
 * that are never counted). */
static inline int np_json_unshared(json_t *json) {
    if (json_is_true(json) || json_is_false(json) || json_is_null(json)) return 1;
    if (json->refcount != 1) return 0;
    if (json_is_object(json)) {
        for (void *it = json_object_iter(json); it; it = json_object_iter_next(json, it))
            if (!np_json_unshared(json_object_iter_value(it))) return 0;
    } else if (json_is_array(json)) {
        size_t size = json_array_size(json);
        for (size_t i = 0; i < size; i++)
            if (!np_json_unshared(json_array_get(json, i))) return 0;
    }
    return 1;
}

#endif
