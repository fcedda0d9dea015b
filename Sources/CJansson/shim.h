#ifndef NEXTPAGE_CJANSSON_SHIM_H
#define NEXTPAGE_CJANSSON_SHIM_H

#include <jansson.h>

/* Macros and inline helpers that Swift cannot import directly. */

static inline json_t *np_json_incref(json_t *json) { return json_incref(json); }
static inline void np_json_decref(json_t *json) { json_decref(json); }
static inline int np_json_typeof(const json_t *json) { return (int)json_typeof(json); }
static inline size_t np_json_real_precision(int n) { return JSON_REAL_PRECISION(n); }

#endif
