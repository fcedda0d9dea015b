/*
 * naive.c - the reference "C on jansson, the obvious way" server for the
 * nextpage benchmark.
 *
 *   gcc -O2 -o naive naive.c $(pkg-config --cflags --libs jansson)
 *   ./naive DATA_DIR < requests.jsonl > replies.jsonl
 *
 * DATA_DIR is the directory written by bench/gen_data.py.  The program reads
 * newline-delimited JSON-RPC 2.0 requests from stdin and answers each with one
 * line on stdout.  Supported methods:
 *
 *   loadNext {"collection": "small"|"large"}
 *       Reads the next page file of the collection (DATA_DIR/<collection>/
 *       first.json, then <next_cursor>.json), parses it with json_loadb, keeps
 *       every item in an array that lives for the whole run (json_incref via
 *       json_array_append) and replies
 *       {"jsonrpc":"2.0","id":N,"result":{"collection":"small","items":[...],
 *        "page":P,"hasNext":true,"lastId":"p3","count":C}}
 *       lastId is the cursor of the next page (null after the last page),
 *       count the number of items kept so far.  After the end it replies with
 *       items [] and hasNext false.
 *
 *   status {"collection": ...}
 *       {"jsonrpc":"2.0","id":N,"result":{"collection":"small","hasNext":true,
 *        "isLoading":false,"lastId":null,"count":0,"pages":0,"lastError":null}}
 *
 * Replies are built as jansson values and serialised with json_dumpb
 * (JSON_COMPACT).  Nothing here is tuned: it is the baseline.
 */
#include <jansson.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;
    char *next;      /* cursor of the next page; NULL before the first page */
    int done;        /* the last page has been loaded */
    long pages;      /* pages loaded so far */
    json_t *items;   /* every item loaded so far, kept for the whole run */
    char *last_error;
} collection_t;

static const char *data_dir;
static collection_t collections[] = {
    {"small", NULL, 0, 0, NULL, NULL},
    {"large", NULL, 0, 0, NULL, NULL},
};

static collection_t *find_collection(const char *name) {
    for (size_t i = 0; i < sizeof collections / sizeof collections[0]; i++)
        if (strcmp(collections[i].name, name) == 0)
            return &collections[i];
    return NULL;
}

/* Reads a whole file into a malloc'd buffer. */
static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return NULL;
    }
    long size = ftell(f);
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return NULL;
    }
    char *buf = malloc((size_t)size + 1);
    if (!buf) {
        fclose(f);
        return NULL;
    }
    size_t n = fread(buf, 1, (size_t)size, f);
    fclose(f);
    if (n != (size_t)size) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static void write_reply(json_t *reply) {
    size_t size = json_dumpb(reply, NULL, 0, JSON_COMPACT);
    if (size == 0) {
        fprintf(stderr, "naive: json_dumpb failed\n");
        exit(1);
    }
    char *buf = malloc(size);
    if (!buf) {
        fprintf(stderr, "naive: out of memory\n");
        exit(1);
    }
    json_dumpb(reply, buf, size, JSON_COMPACT);
    fwrite(buf, 1, size, stdout);
    fputc('\n', stdout);
    fflush(stdout);
    free(buf);
}

static void reply_result(json_t *id, json_t *result) {
    json_t *reply = json_object();
    json_object_set_new(reply, "jsonrpc", json_string("2.0"));
    json_object_set(reply, "id", id ? id : json_null());
    json_object_set_new(reply, "result", result);
    write_reply(reply);
    json_decref(reply);
}

static void reply_error(json_t *id, int code, const char *message) {
    json_t *reply = json_object();
    json_object_set_new(reply, "jsonrpc", json_string("2.0"));
    json_object_set(reply, "id", id ? id : json_null());
    json_t *error = json_object();
    json_object_set_new(error, "code", json_integer(code));
    json_object_set_new(error, "message", json_string(message));
    json_object_set_new(reply, "error", error);
    write_reply(reply);
    json_decref(reply);
}

static void set_error(collection_t *c, const char *message) {
    free(c->last_error);
    c->last_error = strdup(message);
}

/* Cursors become file names: refuse anything that could leave the directory. */
static int valid_cursor(const char *s) {
    if (*s == '\0' || strlen(s) > 200)
        return 0;
    for (; *s; s++)
        if (*s == '/' || *s == '\\' || (s[0] == '.' && s[1] == '.'))
            return 0;
    return 1;
}

static void load_next(json_t *id, collection_t *c) {
    if (!c->items)
        c->items = json_array();

    if (c->done) {
        json_t *result = json_object();
        json_object_set_new(result, "collection", json_string(c->name));
        json_object_set_new(result, "items", json_array());
        json_object_set_new(result, "page", json_integer(c->pages));
        json_object_set_new(result, "hasNext", json_false());
        json_object_set_new(result, "lastId", json_null());
        json_object_set_new(result, "count", json_integer((json_int_t)json_array_size(c->items)));
        reply_result(id, result);
        return;
    }

    char path[4096];
    snprintf(path, sizeof path, "%s/%s/%s.json", data_dir, c->name, c->next ? c->next : "first");

    size_t len = 0;
    char *text = read_file(path, &len);
    if (!text) {
        char message[4200];
        snprintf(message, sizeof message, "cannot read %s: %s", path, strerror(errno));
        set_error(c, message);
        reply_error(id, -32000, message);
        return;
    }

    json_error_t jerr;
    json_t *page = json_loadb(text, len, 0, &jerr);
    free(text);
    if (!page) {
        char message[4400];
        snprintf(message, sizeof message, "%s: %s (line %d)", path, jerr.text, jerr.line);
        set_error(c, message);
        reply_error(id, -32000, message);
        return;
    }

    json_t *items = json_object_get(page, "items");
    if (!json_is_array(items)) {
        json_decref(page);
        set_error(c, "page has no items array");
        reply_error(id, -32000, "page has no items array");
        return;
    }

    size_t index;
    json_t *item;
    json_array_foreach(items, index, item) {
        json_array_append(c->items, item); /* increfs the item */
    }
    c->pages++;

    json_t *next = json_object_get(page, "next_cursor");
    free(c->next);
    c->next = NULL;
    if (json_is_string(next) && valid_cursor(json_string_value(next))) {
        c->next = strdup(json_string_value(next));
    } else {
        c->done = 1;
    }

    json_t *result = json_object();
    json_object_set_new(result, "collection", json_string(c->name));
    json_object_set(result, "items", items);
    json_object_set_new(result, "page", json_integer(c->pages));
    json_object_set_new(result, "hasNext", json_boolean(!c->done));
    json_object_set_new(result, "lastId", c->next ? json_string(c->next) : json_null());
    json_object_set_new(result, "count", json_integer((json_int_t)json_array_size(c->items)));
    json_decref(page);
    reply_result(id, result);
}

static void status(json_t *id, collection_t *c) {
    json_t *result = json_object();
    json_object_set_new(result, "collection", json_string(c->name));
    json_object_set_new(result, "hasNext", json_boolean(!c->done));
    json_object_set_new(result, "isLoading", json_false());
    json_object_set_new(result, "lastId", c->next ? json_string(c->next) : json_null());
    json_object_set_new(result, "count", json_integer(c->items ? (json_int_t)json_array_size(c->items) : 0));
    json_object_set_new(result, "pages", json_integer(c->pages));
    json_object_set_new(result, "lastError", c->last_error ? json_string(c->last_error) : json_null());
    reply_result(id, result);
}

static void handle_line(const char *line, size_t len) {
    json_error_t jerr;
    json_t *request = json_loadb(line, len, 0, &jerr);
    if (!request) {
        reply_error(NULL, -32700, "Parse error");
        return;
    }
    json_t *id = json_object_get(request, "id");
    const char *method = json_string_value(json_object_get(request, "method"));
    if (!json_is_object(request) || !method) {
        reply_error(id, -32600, "Invalid Request");
        json_decref(request);
        return;
    }
    int is_load = strcmp(method, "loadNext") == 0;
    int is_status = strcmp(method, "status") == 0;
    if (!is_load && !is_status) {
        reply_error(id, -32601, "Method not found");
        json_decref(request);
        return;
    }
    json_t *params = json_object_get(request, "params");
    const char *name = json_string_value(json_object_get(params, "collection"));
    collection_t *c = name ? find_collection(name) : NULL;
    if (!c) {
        reply_error(id, -32602, "Invalid params: unknown collection");
        json_decref(request);
        return;
    }
    if (is_load)
        load_next(id, c);
    else
        status(id, c);
    json_decref(request);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DATA_DIR < requests.jsonl\n", argv[0]);
        return 2;
    }
    data_dir = argv[1];

    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) != -1) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            n--;
        if (n == 0)
            continue;
        handle_line(line, (size_t)n);
    }
    free(line);
    /* The kept items are released by process exit, like any server would. */
    return 0;
}
