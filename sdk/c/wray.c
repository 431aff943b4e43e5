/*
 * wray.c: the C guest SDK of wray (see wray.h), over the wit-bindgen C
 * bindings of the `wray:runtime/library` world in bindings/.
 *
 * It implements the two exports from the table of functions:
 * `metadata.describe` lists them, `functions.invoke` finds one by name,
 * checks the argument count, calls it and hands its results (or its error)
 * back. Every number that comes from the host (lengths, codecs, the page
 * size, mapped sizes) is checked before it is used.
 */
#include "wray.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bindings/library.h"

/* The static table and the set-up hook are optional: weak, so that a
 * component without them still links (their addresses are then NULL). */
extern const wray_function wray_functions[] __attribute__((weak));
extern const size_t wray_num_functions __attribute__((weak));
extern void wray_setup(void) __attribute__((weak));

typedef wray_runtime_types_task_error_t task_error_t;
typedef wray_runtime_types_payload_t payload_t;
typedef wray_runtime_types_arg_t arg_t;

static const char *const CODEC_NAMES[] = {"rkyv", "json", "raw"};

/* The name of a codec from the host, which may be any byte. */
static const char *codec_name(unsigned codec) {
    return codec < 3 ? CODEC_NAMES[codec] : "an unknown codec";
}

static size_t utf8_len(const uint8_t *s, size_t len);

/* Replaces each byte that does not start a well-formed UTF-8 sequence with
 * '?': a WIT `string` must be UTF-8, and the host traps on one that is not
 * (messages quote user text and names; names from the host arrive valid). */
static void sanitize_utf8(uint8_t *s, size_t len) {
    for (size_t at = 0; at < len;) {
        size_t n = utf8_len(s + at, len - at);
        if (n == 0) {
            s[at++] = '?';
        } else {
            at += n;
        }
    }
}

const char *wray_codec_name(int codec) {
    return codec >= 0 ? codec_name((unsigned)codec) : "an unknown codec";
}

/* ---- the function table ------------------------------------------------- */

static const wray_function **registered;
static size_t num_registered, cap_registered;
static bool set_up;

static size_t static_count(void) {
    if (&wray_num_functions == NULL || wray_functions == NULL) return 0;
    return wray_num_functions;
}

/* Function `k` of static table + registered ones. */
static const wray_function *function_at(size_t k) {
    size_t n = static_count();
    return k < n ? &wray_functions[k] : registered[k - n];
}

static size_t function_count(void) { return static_count() + num_registered; }

static void ensure_setup(void) {
    if (set_up) return;
    set_up = true;
    if (wray_setup) wray_setup();
}

static const wray_function *find_function(const uint8_t *name, size_t len) {
    size_t n = function_count();
    for (size_t k = 0; k < n; k++) {
        const wray_function *f = function_at(k);
        if (f->name && strlen(f->name) == len && memcmp(f->name, name, len) == 0)
            return f;
    }
    return NULL;
}

bool wray_register(const wray_function *f) {
    if (!f || !f->name || !f->fn) return false;
    if (find_function((const uint8_t *)f->name, strlen(f->name))) return false;
    if (num_registered == cap_registered) {
        size_t cap = cap_registered ? cap_registered * 2 : 8;
        const wray_function **grown = realloc(registered, cap * sizeof *grown);
        if (!grown) return false;
        registered = grown;
        cap_registered = cap;
    }
    registered[num_registered++] = f;
    return true;
}

static uint32_t returns_of(const wray_function *f) {
    return f->num_returns ? f->num_returns : 1;
}

/* ---- describe ----------------------------------------------------------- */

/* Returned strings are freed by the export's post-return (free), so each is
 * a copy. */
static void dup_str(library_string_t *out, const char *s) {
    library_string_dup(out, s ? s : "");
    sanitize_utf8(out->ptr, out->len);
}

static void *xcalloc(size_t n, size_t size) {
    if (n == 0) return NULL;
    void *p = calloc(n, size);
    if (!p) abort(); /* describe cannot fail: a trap is all there is */
    return p;
}

void exports_wray_runtime_metadata_describe(
    exports_wray_runtime_metadata_component_info_t *ret) {
    ensure_setup();
    size_t n = function_count();
    wray_runtime_types_function_info_t *infos = xcalloc(n, sizeof *infos);
    for (size_t k = 0; k < n; k++) {
        const wray_function *f = function_at(k);
        wray_runtime_types_function_info_t *info = &infos[k];
        info->kind = WRAY_RUNTIME_TYPES_FUNCTION_KIND_FUNCTION;
        dup_str(&info->name, f->name);
        info->class_.is_some = false;
        info->num_returns = returns_of(f);
        wray_runtime_types_param_info_t *params =
            xcalloc(f->num_params, sizeof *params);
        for (size_t p = 0; p < f->num_params; p++) {
            dup_str(&params[p].name, f->params[p].name);
            dup_str(&params[p].schema,
                    f->params[p].schema ? f->params[p].schema : WRAY_SCHEMA_ANY);
        }
        info->params.ptr = params;
        info->params.len = f->num_params;
        library_string_t *returns = xcalloc(info->num_returns, sizeof *returns);
        for (uint32_t r = 0; r < info->num_returns; r++) {
            const char *schema = f->returns && f->returns[r] ? f->returns[r] : NULL;
            dup_str(&returns[r], schema ? schema : WRAY_SCHEMA_ANY);
        }
        info->returns.ptr = returns;
        info->returns.len = info->num_returns;
        /* No declared resources or limits: the node's defaults apply. */
        info->resources.custom.ptr = NULL;
        info->resources.custom.len = 0;
        info->reuse = false;
    }
    ret->functions.ptr = infos;
    ret->functions.len = n;
    dup_str(&ret->sdk, WRAY_SDK);
    fflush(NULL);
}

/* ---- windows: zero-copy mapping ----------------------------------------- */

#define WASM_PAGE ((size_t)65536)
/* The largest window alignment accepted from the host (2 MiB huge pages are
 * the largest real one). */
#define MAX_ALIGN ((size_t)1 << 30)

typedef struct window {
    uintptr_t addr;
    size_t len;
    bool mapped; /* in use by wray_map (else free for reuse) */
} window;

static window *windows;
static size_t num_windows, cap_windows;
static size_t window_align; /* 0: not asked yet */

/* The host's page size, rounded up to a power of two and to at least a wasm
 * page; 0 when the host says something unusable. */
static size_t get_align(void) {
    if (window_align == 0) {
        uint64_t page = wray_runtime_mapping_page_size();
        if (page == 0 || page > MAX_ALIGN) return 0;
        size_t align = WASM_PAGE;
        while (align < page) align *= 2;
        window_align = align;
    }
    return window_align;
}

/* A free window of at least `len` bytes (smallest fit), or a new one grown
 * with memory.grow: -1 with an error recorded when none can be had. */
static long take_window(wray_call *c, uint64_t len) {
    size_t align = get_align();
    if (align == 0) {
        wray_fail(c, WRAY_ERROR_SYSTEM, "the host's page size (%llu) is unusable",
                  (unsigned long long)wray_runtime_mapping_page_size());
        return -1;
    }
    /* need = len rounded up to the alignment, at least one page, all in 64
     * bits (len comes from the host) and within the 4 GiB of wasm32. */
    uint64_t need = len == 0 ? 1 : len;
    uint64_t limit = (uint64_t)1 << 32;
    if (need > limit) goto too_big;
    need = (need + align - 1) / align * align;
    long best = -1;
    for (size_t k = 0; k < num_windows; k++) {
        if (!windows[k].mapped && windows[k].len >= need &&
            (best < 0 || windows[k].len < windows[(size_t)best].len))
            best = (long)k;
    }
    if (best >= 0) {
        windows[best].mapped = true;
        return best;
    }
    if (num_windows == cap_windows) {
        size_t cap = cap_windows ? cap_windows * 2 : 8;
        window *grown = realloc(windows, cap * sizeof *grown);
        if (!grown) goto oom;
        windows = grown;
        cap_windows = cap;
    }
    /* Grown by align - WASM_PAGE more than needed, so an aligned start lies
     * inside. */
    uint64_t pages = (need + align - WASM_PAGE) / WASM_PAGE;
    if (pages > limit / WASM_PAGE) goto too_big;
    size_t old = __builtin_wasm_memory_grow(0, (size_t)pages);
    if (old == SIZE_MAX) goto oom;
    uint64_t start = (uint64_t)old * WASM_PAGE;
    uint64_t addr = (start + align - 1) / align * align;
    if (addr + need > limit) goto oom;
    windows[num_windows] = (window){(uintptr_t)addr, (size_t)need, true};
    return (long)num_windows++;
too_big:
    wray_fail(c, WRAY_ERROR_OUT_OF_MEMORY,
              "an object of %llu bytes does not fit in a 32-bit instance's memory",
              (unsigned long long)len);
    return -1;
oom:
    wray_fail(c, WRAY_ERROR_OUT_OF_MEMORY,
              "cannot reserve a window of %llu bytes of linear memory",
              (unsigned long long)need);
    return -1;
}

static library_list_u8_t window_list(const window *w) {
    return (library_list_u8_t){(uint8_t *)w->addr, w->len};
}

static void release_window(window *w) {
    if (!w->mapped) return;
    library_list_u8_t list = window_list(w);
    wray_runtime_mapping_unmap(&list);
    w->mapped = false;
}

void wray_unmap(const uint8_t *data) {
    for (size_t k = 0; k < num_windows; k++) {
        if (windows[k].mapped && windows[k].addr == (uintptr_t)data) {
            release_window(&windows[k]);
            return;
        }
    }
}

static void unmap_all(void) {
    for (size_t k = 0; k < num_windows; k++) release_window(&windows[k]);
}

/* ---- the call ----------------------------------------------------------- */

struct wray_call {
    const wray_function *f;
    const arg_t *args;
    size_t num_args;
    bool has_result_codec;
    unsigned result_codec;
    payload_t *out;
    size_t num_out, cap_out;
    bool failed;
    task_error_t error;
    void **temps; /* freed when the call ends */
    size_t num_temps, cap_temps;
};

const char *wray_function_name(const wray_call *c) { return c->f->name; }
size_t wray_num_args(const wray_call *c) { return c->num_args; }

static void task_id(wray_runtime_types_task_id_t *id) {
    wray_runtime_runtime_task_id(id);
}

/* Records an error (the first one wins); takes ownership of `message`'s
 * malloc'd text. */
static void set_error(wray_call *c, wray_error_kind kind, char *message, size_t len) {
    if (c->failed) {
        free(message);
        return;
    }
    c->failed = true;
    c->error.kind = (uint8_t)kind;
    dup_str(&c->error.function, c->f->name);
    task_id(&c->error.task);
    c->error.message.ptr = (uint8_t *)message;
    c->error.message.len = message ? len : 0;
    c->error.causes.ptr = NULL;
    c->error.causes.len = 0;
    if (message) sanitize_utf8(c->error.message.ptr, c->error.message.len);
}

static bool vfail(wray_call *c, wray_error_kind kind, const char *fmt, va_list ap) {
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *message = NULL;
    size_t len = 0;
    if (n > 0 && (message = malloc((size_t)n + 1)) != NULL) {
        vsnprintf(message, (size_t)n + 1, fmt, again);
        len = (size_t)n;
    }
    va_end(again);
    set_error(c, kind, message, len);
    return false;
}

bool wray_fail(wray_call *c, wray_error_kind kind, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfail(c, kind, fmt, ap);
    va_end(ap);
    return false;
}

/* Takes a task error `get` returned as the call's error: the call fails
 * passing it on, so it becomes the first of the error's causes (the host
 * keeps the chain: wit `task-error.causes`), its own causes after it. */
static void take_host_error(wray_call *c, task_error_t *err) {
    if (c->failed) {
        wray_runtime_types_task_error_free(err);
        return;
    }
    c->failed = true;
    size_t n = err->causes.len;
    wray_runtime_types_error_cause_t *causes =
        n < SIZE_MAX / sizeof *causes - 1 ? malloc((n + 1) * sizeof *causes) : NULL;
    if (causes) {
        causes[0].kind = err->kind;
        causes[0].task = err->task;
        library_string_dup_n(&causes[0].function, (const char *)err->function.ptr,
                             err->function.len);
        library_string_dup_n(&causes[0].message, (const char *)err->message.ptr,
                             err->message.len);
        if (n) memcpy(causes + 1, err->causes.ptr, n * sizeof *causes);
        free(err->causes.ptr);
        err->causes.ptr = causes;
        err->causes.len = n + 1;
    }
    c->error = *err;
}

static void *temp(wray_call *c, size_t size) {
    if (c->num_temps == c->cap_temps) {
        size_t cap = c->cap_temps ? c->cap_temps * 2 : 8;
        void **grown = realloc(c->temps, cap * sizeof *grown);
        if (!grown) return NULL;
        c->temps = grown;
        c->cap_temps = cap;
    }
    void *p = malloc(size ? size : 1);
    if (p) c->temps[c->num_temps++] = p;
    return p;
}

/* The name of parameter `i`, for messages. */
static const char *param_name(const wray_call *c, size_t i) {
    if (i < c->f->num_params && c->f->params && c->f->params[i].name)
        return c->f->params[i].name;
    return "?";
}

static const arg_t *arg_at(wray_call *c, size_t i) {
    if (i >= c->num_args) {
        wray_fail(c, WRAY_ERROR_INVALID_ARGUMENT,
                  "%s has no argument %zu (it got %zu)", c->f->name, i, c->num_args);
        return NULL;
    }
    return &c->args[i];
}

/* ---- object ids --------------------------------------------------------- */

static wray_object_id from_wit(const wray_runtime_types_object_id_t *id) {
    return (wray_object_id){id->task.hi, id->task.lo, id->index};
}

static wray_runtime_types_object_id_t to_wit(wray_object_id id) {
    return (wray_runtime_types_object_id_t){{id.task_hi, id.task_lo}, id.index};
}

static int hex_digit(uint8_t ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

static bool parse_hex(const uint8_t *s, size_t digits, uint64_t *out) {
    uint64_t v = 0;
    for (size_t k = 0; k < digits; k++) {
        int d = hex_digit(s[k]);
        if (d < 0) return false;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return true;
}

static bool is_ws(uint8_t ch) {
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

static size_t skip_ws(const uint8_t *s, size_t len, size_t at) {
    while (at < len && is_ws(s[at])) at++;
    return at;
}

/* Whether JSON text `s` is exactly `{"$object": "<40 hex>"}`. */
static bool parse_object_ref(const uint8_t *s, size_t len, wray_object_id *id) {
    static const char key[] = "\"$object\"";
    size_t at = skip_ws(s, len, 0);
    if (at >= len || s[at++] != '{') return false;
    at = skip_ws(s, len, at);
    if (len - at < sizeof key - 1 || memcmp(s + at, key, sizeof key - 1) != 0)
        return false;
    at = skip_ws(s, len, at + sizeof key - 1);
    if (at >= len || s[at++] != ':') return false;
    at = skip_ws(s, len, at);
    if (len - at < 42 || s[at] != '"' || s[at + 41] != '"') return false;
    uint64_t hi, lo, index;
    if (!parse_hex(s + at + 1, 16, &hi) || !parse_hex(s + at + 17, 16, &lo) ||
        !parse_hex(s + at + 33, 8, &index))
        return false;
    at = skip_ws(s, len, at + 42);
    if (at >= len || s[at++] != '}') return false;
    if (skip_ws(s, len, at) != len) return false;
    *id = (wray_object_id){hi, lo, (uint32_t)index};
    return true;
}

bool wray_arg_object(wray_call *c, size_t i, wray_object_id *id) {
    if (i >= c->num_args) return false;
    const arg_t *a = &c->args[i];
    if (a->tag == WRAY_RUNTIME_TYPES_ARG_OBJECT) {
        *id = from_wit(&a->val.object);
        return true;
    }
    if (a->tag != WRAY_RUNTIME_TYPES_ARG_VALUE) return false;
    const payload_t *p = &a->val.value;
    wray_object_id parsed;
    if (p->codec != WRAY_CODEC_JSON || !parse_object_ref(p->data.ptr, p->data.len, &parsed))
        return false;
    /* Only a ref the value lists in its refs is one the host holds for us. */
    for (size_t k = 0; k < p->refs.len; k++) {
        wray_object_id r = from_wit(&p->refs.ptr[k]);
        if (r.task_hi == parsed.task_hi && r.task_lo == parsed.task_lo &&
            r.index == parsed.index) {
            *id = parsed;
            return true;
        }
    }
    return false;
}

/* ---- mapping ------------------------------------------------------------ */

const uint8_t *wray_map(wray_call *c, wray_object_id id, size_t *len, wray_codec *codec) {
    wray_runtime_types_object_id_t wid = to_wit(id);
    wray_runtime_mapping_tuple2_codec_u64_t st;
    task_error_t err;
    if (!wray_runtime_mapping_stat(&wid, &st, &err)) {
        take_host_error(c, &err);
        return NULL;
    }
    long w = take_window(c, st.f1);
    if (w < 0) return NULL;
    library_list_u8_t list = window_list(&windows[w]);
    uint64_t mapped;
    if (!wray_runtime_mapping_map(&wid, &list, &mapped, &err)) {
        release_window(&windows[w]); /* zero pages again, whatever happened */
        take_host_error(c, &err);
        return NULL;
    }
    /* Never more than the window, nor than stat said. */
    uint64_t n = mapped < st.f1 ? mapped : st.f1;
    if (n > windows[w].len) n = windows[w].len;
    *len = (size_t)n;
    if (codec) *codec = (wray_codec)st.f0;
    return (const uint8_t *)windows[w].addr;
}

int wray_arg_codec(wray_call *c, size_t i) {
    const arg_t *a = arg_at(c, i);
    if (!a) return -1;
    if (a->tag == WRAY_RUNTIME_TYPES_ARG_VALUE) return a->val.value.codec;
    wray_runtime_types_object_id_t wid = a->val.object;
    wray_runtime_mapping_tuple2_codec_u64_t st;
    task_error_t err;
    if (!wray_runtime_mapping_stat(&wid, &st, &err)) {
        take_host_error(c, &err);
        return -1;
    }
    return st.f0;
}

/* The bytes of argument `i` in codec `want`: inline, or mapped. */
static const uint8_t *arg_in(wray_call *c, size_t i, wray_codec want, size_t *len) {
    const arg_t *a = arg_at(c, i);
    if (!a) return NULL;
    if (a->tag == WRAY_RUNTIME_TYPES_ARG_VALUE && a->val.value.codec == want) {
        *len = a->val.value.data.len;
        return a->val.value.data.ptr ? a->val.value.data.ptr : (const uint8_t *)"";
    }
    unsigned got;
    wray_object_id id;
    /* A raw reader follows a JSON object ref; a JSON reader reads the JSON. */
    bool follow = a->tag == WRAY_RUNTIME_TYPES_ARG_OBJECT ||
                  (want == WRAY_CODEC_RAW && wray_arg_object(c, i, &id));
    if (follow) {
        if (a->tag == WRAY_RUNTIME_TYPES_ARG_OBJECT) id = from_wit(&a->val.object);
        wray_codec codec;
        const uint8_t *data = wray_map(c, id, len, &codec);
        if (!data) return NULL;
        if (codec == want) return data;
        wray_unmap(data);
        got = codec;
    } else {
        got = a->val.value.codec;
    }
    wray_fail(c, WRAY_ERROR_INVALID_ARGUMENT,
              "%s: argument %zu (`%s`) is %s, but %s reads %s", c->f->name, i,
              param_name(c, i), codec_name(got), c->f->name, codec_name(want));
    return NULL;
}

const uint8_t *wray_arg_bytes(wray_call *c, size_t i, size_t *len) {
    return arg_in(c, i, WRAY_CODEC_RAW, len);
}

const char *wray_arg_json(wray_call *c, size_t i, size_t *len) {
    return (const char *)arg_in(c, i, WRAY_CODEC_JSON, len);
}

/* ---- the scalar JSON reader --------------------------------------------- */

static bool bad_arg(wray_call *c, size_t i, const char *what) {
    return wray_fail(c, WRAY_ERROR_INVALID_ARGUMENT, "%s: argument %zu (`%s`) %s",
                     c->f->name, i, param_name(c, i), what);
}

/* The JSON text of argument `i`, trimmed of whitespace. */
static const uint8_t *json_arg(wray_call *c, size_t i, size_t *len) {
    size_t n;
    const uint8_t *s = (const uint8_t *)wray_arg_json(c, i, &n);
    if (!s) return NULL;
    size_t start = skip_ws(s, n, 0);
    while (n > start && is_ws(s[n - 1])) n--;
    *len = n - start;
    return s + start;
}

/* Length of the JSON number at the start of s (RFC 8259 grammar), 0 if none;
 * sets *integral when it has no fraction and no exponent. */
static size_t number_span(const uint8_t *s, size_t len, bool *integral) {
    size_t at = 0;
    *integral = true;
    if (at < len && s[at] == '-') at++;
    if (at >= len) return 0;
    if (s[at] == '0') {
        at++;
    } else if (s[at] >= '1' && s[at] <= '9') {
        while (at < len && s[at] >= '0' && s[at] <= '9') at++;
    } else {
        return 0;
    }
    if (at < len && s[at] == '.') {
        *integral = false;
        at++;
        size_t digits = at;
        while (at < len && s[at] >= '0' && s[at] <= '9') at++;
        if (at == digits) return 0;
    }
    if (at < len && (s[at] == 'e' || s[at] == 'E')) {
        *integral = false;
        at++;
        if (at < len && (s[at] == '+' || s[at] == '-')) at++;
        size_t digits = at;
        while (at < len && s[at] >= '0' && s[at] <= '9') at++;
        if (at == digits) return 0;
    }
    return at;
}

/* Longest number text handed to strtod. */
#define MAX_NUMBER_TEXT 4096

static bool to_double(const uint8_t *s, size_t len, double *out) {
    char stack[64];
    char *buf = len < sizeof stack ? stack : malloc(len + 1);
    if (!buf) return false;
    memcpy(buf, s, len);
    buf[len] = 0;
    *out = strtod(buf, NULL);
    if (buf != stack) free(buf);
    return true;
}

/* The double of argument i's number text s[..n], or false with the error
 * recorded (text over MAX_NUMBER_TEXT, or no memory to copy it). */
static bool number_value(wray_call *c, size_t i, const uint8_t *s, size_t n, double *v) {
    if (n > MAX_NUMBER_TEXT) return bad_arg(c, i, "is a number of over 4096 characters");
    if (!to_double(s, n, v))
        return wray_fail(c, WRAY_ERROR_OUT_OF_MEMORY, "%s: out of memory", c->f->name);
    return true;
}

/* Argument i's JSON number text (*n bytes, whether it is written as an
 * integer), or NULL with the error recorded. */
static const uint8_t *number_arg(wray_call *c, size_t i, size_t *n, bool *integral) {
    size_t len;
    const uint8_t *s = json_arg(c, i, &len);
    if (!s) return NULL;
    *n = number_span(s, len, integral);
    if (*n == 0 || *n != len) {
        bad_arg(c, i, "is not a JSON number");
        return NULL;
    }
    return s;
}

bool wray_arg_number(wray_call *c, size_t i, double *out) {
    size_t n;
    bool integral;
    const uint8_t *s = number_arg(c, i, &n, &integral);
    if (!s) return false;
    double v;
    if (!number_value(c, i, s, n, &v)) return false;
    if (v != v || v - v != 0) return bad_arg(c, i, "is a number out of range");
    *out = v;
    return true;
}

bool wray_arg_int(wray_call *c, size_t i, int64_t *out) {
    size_t n;
    bool integral;
    const uint8_t *s = number_arg(c, i, &n, &integral);
    if (!s) return false;
    if (!integral) {
        /* 3.0 or 3e2: exact through a double, within +-2^53. */
        double v;
        if (!number_value(c, i, s, n, &v)) return false;
        if (!(v >= -9007199254740992.0 && v <= 9007199254740992.0) || v != (double)(int64_t)v)
            return bad_arg(c, i, "is not an integer (within 2^53)");
        *out = (int64_t)v;
        return true;
    }
    bool negative = s[0] == '-';
    uint64_t magnitude = 0;
    for (size_t k = negative; k < n; k++) {
        uint64_t d = (uint64_t)(s[k] - '0');
        if (magnitude > (UINT64_MAX - d) / 10) return bad_arg(c, i, "does not fit in 64 bits");
        magnitude = magnitude * 10 + d;
    }
    if (negative ? magnitude > (uint64_t)INT64_MAX + 1 : magnitude > (uint64_t)INT64_MAX)
        return bad_arg(c, i, "does not fit in 64 bits");
    *out = negative ? (int64_t)(0 - magnitude) : (int64_t)magnitude;
    return true;
}

bool wray_arg_bool(wray_call *c, size_t i, bool *out) {
    size_t len;
    const uint8_t *s = json_arg(c, i, &len);
    if (!s) return false;
    if (len == 4 && memcmp(s, "true", 4) == 0) {
        *out = true;
        return true;
    }
    if (len == 5 && memcmp(s, "false", 5) == 0) {
        *out = false;
        return true;
    }
    return bad_arg(c, i, "is not a JSON boolean");
}

/* Length of the UTF-8 sequence at s (well formed: no overlongs, no
 * surrogates, at most U+10FFFF), 0 when it is not one. */
static size_t utf8_len(const uint8_t *s, size_t len) {
    uint8_t b = s[0];
    if (b < 0x80) return 1;
    size_t n;
    uint32_t cp;
    if (b >= 0xc2 && b <= 0xdf) {
        n = 2;
        cp = b & 0x1f;
    } else if (b >= 0xe0 && b <= 0xef) {
        n = 3;
        cp = b & 0x0f;
    } else if (b >= 0xf0 && b <= 0xf4) {
        n = 4;
        cp = b & 0x07;
    } else {
        return 0;
    }
    if (len < n) return 0;
    for (size_t k = 1; k < n; k++) {
        if ((s[k] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (s[k] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

static size_t put_utf8(uint8_t *out, uint32_t cp) {
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xc0 | cp >> 6);
        out[1] = (uint8_t)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xe0 | cp >> 12);
        out[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
        out[2] = (uint8_t)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (uint8_t)(0xf0 | cp >> 18);
    out[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f));
    out[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
    out[3] = (uint8_t)(0x80 | (cp & 0x3f));
    return 4;
}

static bool read_u16(const uint8_t *s, size_t len, size_t at, uint32_t *out) {
    uint64_t v;
    if (len - at < 4 || !parse_hex(s + at, 4, &v)) return false;
    *out = (uint32_t)v;
    return true;
}

const char *wray_arg_string(wray_call *c, size_t i, size_t *out_len) {
    size_t len;
    const uint8_t *s = json_arg(c, i, &len);
    if (!s) return NULL;
    if (len < 2 || s[0] != '"' || s[len - 1] != '"') {
        bad_arg(c, i, "is not a JSON string");
        return NULL;
    }
    /* Unescaping never lengthens: \uXXXX (6) gives at most 3 bytes and a
     * surrogate pair (12) 4. */
    uint8_t *out = temp(c, len);
    if (!out) {
        wray_fail(c, WRAY_ERROR_OUT_OF_MEMORY, "%s: out of memory", c->f->name);
        return NULL;
    }
    size_t o = 0, at = 1, end = len - 1;
    while (at < end) {
        uint8_t b = s[at];
        if (b == '"' || b < 0x20) goto bad;
        if (b != '\\') {
            size_t n = utf8_len(s + at, end - at);
            if (n == 0) goto bad;
            memcpy(out + o, s + at, n);
            o += n;
            at += n;
            continue;
        }
        if (++at >= end) goto bad;
        uint8_t e = s[at++];
        switch (e) {
        case '"': out[o++] = '"'; break;
        case '\\': out[o++] = '\\'; break;
        case '/': out[o++] = '/'; break;
        case 'b': out[o++] = '\b'; break;
        case 'f': out[o++] = '\f'; break;
        case 'n': out[o++] = '\n'; break;
        case 'r': out[o++] = '\r'; break;
        case 't': out[o++] = '\t'; break;
        case 'u': {
            uint32_t cp, low;
            if (!read_u16(s, end, at, &cp)) goto bad;
            at += 4;
            if (cp >= 0xdc00 && cp <= 0xdfff) goto bad;
            if (cp >= 0xd800 && cp <= 0xdbff) {
                if (end - at < 6 || s[at] != '\\' || s[at + 1] != 'u' ||
                    !read_u16(s, end, at + 2, &low) || low < 0xdc00 || low > 0xdfff)
                    goto bad;
                at += 6;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
            }
            o += put_utf8(out + o, cp);
            break;
        }
        default:
            goto bad;
        }
    }
    out[o] = 0;
    *out_len = o;
    return (const char *)out;
bad:
    bad_arg(c, i, "is not a valid JSON string");
    return NULL;
}

/* ---- results ------------------------------------------------------------ */

/* Whether the caller takes results in `codec`; records the error if not. */
static bool codec_allowed(wray_call *c, wray_codec codec) {
    if (!c->has_result_codec || c->result_codec == (unsigned)codec) return true;
    return wray_fail(c, WRAY_ERROR_INVALID_ARGUMENT,
                     "%s: the caller wants its results as %s, but it returns %s "
                     "(the C SDK writes json and raw)",
                     c->f->name, codec_name(c->result_codec), codec_name(codec));
}

/* Appends a result; takes ownership of `data` (malloc'd, or NULL when len
 * is 0). */
static bool push_result(wray_call *c, wray_codec codec, uint8_t *data, size_t len) {
    if (c->failed) {
        free(data);
        return false;
    }
    if (c->num_out >= returns_of(c->f)) {
        free(data);
        return wray_fail(c, WRAY_ERROR_APPLICATION, "%s returned more than its %u results",
                         c->f->name, (unsigned)returns_of(c->f));
    }
    if (c->num_out == c->cap_out) {
        size_t cap = c->cap_out ? c->cap_out * 2 : 1;
        payload_t *grown = realloc(c->out, cap * sizeof *grown);
        if (!grown) {
            free(data);
            return wray_fail(c, WRAY_ERROR_OUT_OF_MEMORY, "%s: out of memory", c->f->name);
        }
        c->out = grown;
        c->cap_out = cap;
    }
    c->out[c->num_out++] = (payload_t){
        .codec = (uint8_t)codec,
        .data = {data, data ? len : 0},
        .refs = {NULL, 0},
    };
    return true;
}

static bool push_copy(wray_call *c, wray_codec codec, const void *data, size_t len) {
    if (!codec_allowed(c, codec)) return false;
    uint8_t *copy = NULL;
    if (len > 0) {
        copy = malloc(len);
        if (!copy)
            return wray_fail(c, WRAY_ERROR_OUT_OF_MEMORY,
                             "%s: cannot allocate a result of %zu bytes", c->f->name, len);
        memcpy(copy, data, len);
    }
    return push_result(c, codec, copy, len);
}

bool wray_return_number(wray_call *c, double value) {
    if (value != value || value - value != 0)
        return wray_fail(c, WRAY_ERROR_APPLICATION,
                         "%s returned %f, which JSON cannot hold", c->f->name, value);
    /* The shortest of %.15g..%.17g that reads back as the same double. */
    char text[40];
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(text, sizeof text, "%.*g", digits, value);
        if (strtod(text, NULL) == value) break;
    }
    return push_copy(c, WRAY_CODEC_JSON, text, strlen(text));
}

bool wray_return_int(wray_call *c, int64_t value) {
    char text[24];
    int n = snprintf(text, sizeof text, "%lld", (long long)value);
    return push_copy(c, WRAY_CODEC_JSON, text, (size_t)n);
}

bool wray_return_uint(wray_call *c, uint64_t value) {
    char text[24];
    int n = snprintf(text, sizeof text, "%llu", (unsigned long long)value);
    return push_copy(c, WRAY_CODEC_JSON, text, (size_t)n);
}

bool wray_return_bool(wray_call *c, bool value) {
    return push_copy(c, WRAY_CODEC_JSON, value ? "true" : "false", value ? 4 : 5);
}

bool wray_return_json(wray_call *c, const char *json, size_t len) {
    return push_copy(c, WRAY_CODEC_JSON, json, len);
}

bool wray_return_bytes(wray_call *c, const uint8_t *data, size_t len) {
    return push_copy(c, WRAY_CODEC_RAW, data, len);
}

bool wray_return_string(wray_call *c, const char *str, size_t len) {
    if (!codec_allowed(c, WRAY_CODEC_JSON)) return false;
    const uint8_t *s = (const uint8_t *)str;
    /* At most 6 bytes per input byte (\u00XX), plus the quotes. */
    if (len > (SIZE_MAX - 2) / 6)
        return wray_fail(c, WRAY_ERROR_OUT_OF_MEMORY, "%s: a string of %zu bytes is too long",
                         c->f->name, len);
    uint8_t *out = malloc(len * 6 + 2);
    if (!out)
        return wray_fail(c, WRAY_ERROR_OUT_OF_MEMORY,
                         "%s: cannot allocate a string of %zu bytes", c->f->name, len);
    size_t o = 0;
    out[o++] = '"';
    for (size_t at = 0; at < len;) {
        uint8_t b = s[at];
        if (b == '"' || b == '\\') {
            out[o++] = '\\';
            out[o++] = b;
            at++;
        } else if (b < 0x20) {
            static const char SHORT[] = "btn\0fr"; /* \b \t \n, \f \r */
            if (b >= '\b' && b <= '\r' && b != '\v') {
                out[o++] = '\\';
                out[o++] = (uint8_t)SHORT[b - '\b'];
            } else {
                o += (size_t)snprintf((char *)out + o, 7, "\\u%04x", b);
            }
            at++;
        } else {
            size_t n = utf8_len(s + at, len - at);
            if (n == 0) {
                free(out);
                return wray_fail(c, WRAY_ERROR_APPLICATION,
                                 "%s returned a string that is not UTF-8 (byte %zu)",
                                 c->f->name, at);
            }
            memcpy(out + o, s + at, n);
            o += n;
            at += n;
        }
    }
    out[o++] = '"';
    return push_result(c, WRAY_CODEC_JSON, out, o);
}

/* ---- actors ------------------------------------------------------------- */

/* The longest actor name, in bytes (the actor directory's). */
#define MAX_ACTOR_NAME 128
/* The longest class or method name sent (the host's bound). */
#define MAX_CLASS_NAME 256

typedef wray_runtime_tasks_actor_id_t actor_id_t;

static bool is_utf8(const char *s, size_t len) {
    const uint8_t *b = (const uint8_t *)s;
    for (size_t at = 0; at < len;) {
        size_t n = utf8_len(b + at, len - at);
        if (n == 0) return false;
        at += n;
    }
    return true;
}

/* A WIT string over NUL-terminated `s` (borrowed: imports copy it). */
static library_string_t borrow(const char *s) {
    return (library_string_t){(uint8_t *)s, strlen(s)};
}

/* Whether `s` (`what`, for the message) is text the host takes: not NULL,
 * UTF-8, at most `max` bytes (0: any); records invalid-argument if not. */
static bool check_text(wray_call *c, const char *s, const char *what, size_t max) {
    if (!s) return wray_fail(c, WRAY_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", c->f->name, what);
    size_t len = strlen(s);
    if (!is_utf8(s, len))
        return wray_fail(c, WRAY_ERROR_INVALID_ARGUMENT, "%s: %s is not UTF-8", c->f->name, what);
    if (max && len > max)
        return wray_fail(c, WRAY_ERROR_INVALID_ARGUMENT, "%s: %s is %zu bytes long, over %zu",
                         c->f->name, what, len, max);
    return true;
}

/* Why UTF-8 `name` cannot be an actor's name (the WIT's rule for
 * `actor-options.name`), or NULL when it can. */
static const char *bad_actor_name(const char *name) {
    size_t len = strlen(name);
    if (len == 0) return "it is empty";
    if (len > MAX_ACTOR_NAME) return "it is longer than 128 bytes";
    if (strchr(name, '/')) return "it contains `/`";
    if (strchr(name, '@')) return "it contains `@`";
    for (size_t k = 0; k < len; k++) {
        uint8_t b = (uint8_t)name[k];
        /* C0 controls and DEL; C1 controls are U+0080..U+009F (C2 80..9F). */
        if (b < 0x20 || b == 0x7f || (b == 0xc2 && k + 1 < len && (uint8_t)name[k + 1] < 0xa0))
            return "it contains a control character";
    }
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) return "it is `.` or `..`";
    return NULL;
}

static bool check_actor_name(wray_call *c, const char *name) {
    if (!check_text(c, name, "the actor name", 0)) return false;
    const char *why = bad_actor_name(name);
    if (why)
        return wray_fail(c, WRAY_ERROR_INVALID_ARGUMENT, "%s: actor name \"%.*s\" is refused: %s",
                         c->f->name, MAX_ACTOR_NAME, name, why);
    return true;
}

/* The arguments as WIT args over the texts (borrowed), in `c`'s temporary
 * memory; false with an error recorded. */
static bool json_args(wray_call *c, const char *const *args, size_t n,
                      wray_runtime_tasks_list_arg_t *out) {
    out->ptr = NULL;
    out->len = 0;
    if (n == 0) return true;
    if (!args) return wray_fail(c, WRAY_ERROR_INVALID_ARGUMENT, "%s: %zu arguments, but none given",
                                c->f->name, n);
    if (n > SIZE_MAX / sizeof(arg_t))
        return wray_fail(c, WRAY_ERROR_INVALID_ARGUMENT, "%s: too many arguments", c->f->name);
    arg_t *list = temp(c, n * sizeof *list);
    if (!list) return wray_fail(c, WRAY_ERROR_OUT_OF_MEMORY, "%s: out of memory", c->f->name);
    for (size_t k = 0; k < n; k++) {
        if (!args[k])
            return wray_fail(c, WRAY_ERROR_INVALID_ARGUMENT, "%s: argument %zu is NULL (JSON text expected)",
                             c->f->name, k);
        list[k].tag = WRAY_RUNTIME_TYPES_ARG_VALUE;
        list[k].val.value = (payload_t){
            .codec = WRAY_CODEC_JSON,
            .data = {(uint8_t *)args[k], strlen(args[k])},
            .refs = {NULL, 0},
        };
    }
    out->ptr = list;
    out->len = n;
    return true;
}

static library_option_f64_t opt_f64(wray_opt_f64 v) {
    return (library_option_f64_t){v.set, v.set ? v.value : 0};
}

static library_option_u64_t opt_u64(wray_opt_u64 v) {
    return (library_option_u64_t){v.set, v.set ? v.value : 0};
}

static bool quantity_ok(wray_call *c, const char *what, double q) {
    if (q >= 0 && q - q == 0) return true;
    return wray_fail(c, WRAY_ERROR_INVALID_ARGUMENT, "%s: %s must be a finite number >= 0, got %g",
                     c->f->name, what, q);
}

/* The WIT task-options of an actor's creation (one return, results in
 * JSON); the custom resources' list in `c`'s temporary memory. */
static bool actor_task_options(wray_call *c, const wray_actor_options *o,
                               wray_runtime_tasks_task_options_t *out) {
    memset(out, 0, sizeof *out);
    out->num_returns = 1;
    if ((o->num_cpus.set && !quantity_ok(c, "num_cpus", o->num_cpus.value)) ||
        (o->num_gpus.set && !quantity_ok(c, "num_gpus", o->num_gpus.value)))
        return false;
    out->resources.num_cpus = opt_f64(o->num_cpus);
    out->resources.num_gpus = opt_f64(o->num_gpus);
    out->resources.memory = opt_u64(o->memory);
    if (o->num_resources) {
        if (!o->resources)
            return wray_fail(c, WRAY_ERROR_INVALID_ARGUMENT, "%s: num_resources is %zu, resources NULL",
                             c->f->name, o->num_resources);
        if (o->num_resources > SIZE_MAX / sizeof(library_tuple2_string_f64_t))
            return wray_fail(c, WRAY_ERROR_INVALID_ARGUMENT, "%s: too many resources", c->f->name);
        library_tuple2_string_f64_t *custom = temp(c, o->num_resources * sizeof *custom);
        if (!custom) return wray_fail(c, WRAY_ERROR_OUT_OF_MEMORY, "%s: out of memory", c->f->name);
        for (size_t k = 0; k < o->num_resources; k++) {
            if (!check_text(c, o->resources[k].name, "a resource's name", MAX_CLASS_NAME) ||
                !quantity_ok(c, "a resource's quantity", o->resources[k].quantity))
                return false;
            custom[k].f0 = borrow(o->resources[k].name);
            custom[k].f1 = o->resources[k].quantity;
        }
        out->resources.custom.ptr = custom;
        out->resources.custom.len = o->num_resources;
    }
    out->limits.max_memory = opt_u64(o->max_memory);
    out->limits.timeout_ms = opt_u64(o->timeout_ms);
    out->limits.fuel = opt_u64(o->fuel);
    out->result_codec.is_some = true;
    out->result_codec.val = WRAY_CODEC_JSON;
    out->detached = o->detached;
    return true;
}

static wray_actor actor_of(const actor_id_t *id) { return (wray_actor){id->hi, id->lo}; }

static bool same_actor(wray_actor a, wray_actor b) { return a.hi == b.hi && a.lo == b.lo; }

/* `get-actor`: true with *actor, or false with *err (the caller's to free
 * or take). */
static bool lookup(const char *name, const char *class_name, wray_actor *actor, task_error_t *err) {
    library_string_t n = borrow(name), k = borrow(class_name);
    actor_id_t id;
    if (!wray_runtime_tasks_get_actor(&n, &k, &id, err)) return false;
    *actor = actor_of(&id);
    return true;
}

/* The most bytes of a host's message quoted in one of this SDK's (the host
 * cuts its own at 16 KiB). */
#define MAX_QUOTED 16384

/* The length of host message `m` to quote (`%.*s`). */
static int quoted_len(const library_string_t *m) {
    return (int)(m->len < MAX_QUOTED ? m->len : MAX_QUOTED);
}

/* Records the host's error `err` (freed) as this call's, kind and message
 * kept (a kind the SDK does not know is `system`), the message after
 * `what: `. */
static bool host_failure(wray_call *c, const char *what, task_error_t *err) {
    wray_error_kind kind = err->kind <= WRAY_ERROR_CANCELLED ? (wray_error_kind)err->kind
                                                              : WRAY_ERROR_SYSTEM;
    wray_fail(c, kind, "%s: %.*s", what, quoted_len(&err->message),
              (const char *)err->message.ptr);
    wray_runtime_types_task_error_free(err);
    return false;
}

static bool name_taken(wray_call *c, const char *name, const char *holder, task_error_t *err) {
    if (err) {
        wray_fail(c, WRAY_ERROR_INVALID_ARGUMENT,
                  "%s: actor name \"%s\" is taken: %.*s; reach that actor with wray_get_actor, "
                  "or set get_if_exists",
                  c->f->name, name, quoted_len(&err->message), (const char *)err->message.ptr);
        wray_runtime_types_task_error_free(err);
        return false;
    }
    return wray_fail(c, WRAY_ERROR_INVALID_ARGUMENT,
                     "%s: actor name \"%s\" is taken: it is held by live actor %s (a name is held "
                     "until its actor dies); reach that actor with wray_get_actor, or set "
                     "get_if_exists",
                     c->f->name, name, holder);
}

bool wray_actor_create(wray_call *c, const char *qualified_class, const char *const *args,
                       size_t num_args, const wray_actor_options *options, wray_actor *actor) {
    static const wray_actor_options defaults;
    const wray_actor_options *o = options ? options : &defaults;
    if (!actor)
        return wray_fail(c, WRAY_ERROR_INVALID_ARGUMENT, "%s: wray_actor_create: actor is NULL",
                         c->f->name);
    if (!check_text(c, qualified_class, "the actor class", 2 * MAX_CLASS_NAME)) return false;
    const char *slash = strrchr(qualified_class, '/');
    if (!slash || slash == qualified_class || slash[1] == 0)
        return wray_fail(c, WRAY_ERROR_INVALID_ARGUMENT,
                         "%s: actor class \"%s\": name it as component/Class (the class of the "
                         "component deployed under that name; a C component has no actor classes)",
                         c->f->name, qualified_class);
    const char *class_name = slash + 1;
    if (strlen(class_name) > MAX_CLASS_NAME)
        return wray_fail(c, WRAY_ERROR_INVALID_ARGUMENT, "%s: an actor class is at most %d bytes",
                         c->f->name, MAX_CLASS_NAME);
    if (o->name && !check_actor_name(c, o->name)) return false;
    bool get_if_exists = o->name && o->get_if_exists;
    task_error_t err;
    if (get_if_exists) {
        if (lookup(o->name, class_name, actor, &err)) return true;
        if (err.kind != WRAY_ERROR_NOT_FOUND) {
            if (err.kind == WRAY_ERROR_INVALID_ARGUMENT) return name_taken(c, o->name, NULL, &err);
            return host_failure(c, "wray_actor_create", &err);
        }
        wray_runtime_types_task_error_free(&err);
    }
    wray_runtime_tasks_list_arg_t wargs;
    wray_runtime_tasks_task_options_t topts;
    if (!json_args(c, args, num_args, &wargs) || !actor_task_options(c, o, &topts)) return false;
    size_t component_len = (size_t)(slash - qualified_class);
    library_string_t component = {(uint8_t *)qualified_class, component_len};
    library_string_t klass = borrow(class_name);
    actor_id_t id;
    if (o->name || o->max_restarts || o->max_task_retries) {
        wray_runtime_tasks_actor_options_t life = {
            .name = {o->name != NULL, o->name ? borrow(o->name) : (library_string_t){NULL, 0}},
            .max_restarts = o->max_restarts,
            .max_task_retries = o->max_task_retries,
        };
        wray_runtime_tasks_create_actor_with(&component, &klass, &wargs, &topts, &life, &id);
    } else {
        wray_runtime_tasks_create_actor_of(&component, &klass, &wargs, &topts, &id);
    }
    *actor = actor_of(&id);
    if (!o->name) return true;
    /* The host gave the name out before create-actor-with returned: read it
     * back. Held by another actor, the new one is dead already (the host
     * kills an actor that cannot take its name). */
    wray_actor held;
    if (!lookup(o->name, class_name, &held, &err)) {
        if (err.kind == WRAY_ERROR_INVALID_ARGUMENT) return name_taken(c, o->name, NULL, &err);
        /* Not found: it died before its name could be read (its calls say
         * why); or the directory cannot be read now. */
        wray_runtime_types_task_error_free(&err);
        return true;
    }
    if (same_actor(held, *actor)) return true;
    if (get_if_exists) {
        *actor = held;
        return true;
    }
    char hex[33];
    wray_actor_hex(held, hex);
    return name_taken(c, o->name, hex, NULL);
}

bool wray_get_actor(wray_call *c, const char *name, const char *class_name, wray_actor *actor) {
    if (!actor)
        return wray_fail(c, WRAY_ERROR_INVALID_ARGUMENT, "%s: wray_get_actor: actor is NULL",
                         c->f->name);
    if (!check_actor_name(c, name)) return false;
    if (class_name && !check_text(c, class_name, "the actor class", MAX_CLASS_NAME)) return false;
    task_error_t err;
    if (lookup(name, class_name ? class_name : "", actor, &err)) return true;
    return host_failure(c, "wray_get_actor", &err);
}

bool wray_actor_call(wray_call *c, wray_actor actor, const char *method, const char *const *args,
                     size_t num_args, wray_object_id *result) {
    if (!result)
        return wray_fail(c, WRAY_ERROR_INVALID_ARGUMENT, "%s: wray_actor_call: result is NULL",
                         c->f->name);
    if (!check_text(c, method, "the method", MAX_CLASS_NAME)) return false;
    wray_runtime_tasks_list_arg_t wargs;
    if (!json_args(c, args, num_args, &wargs)) return false;
    wray_runtime_tasks_task_options_t topts;
    memset(&topts, 0, sizeof topts);
    topts.num_returns = 1;
    topts.result_codec.is_some = true;
    topts.result_codec.val = WRAY_CODEC_JSON;
    actor_id_t id = {actor.hi, actor.lo};
    library_string_t m = borrow(method);
    wray_runtime_tasks_list_object_id_t ids;
    wray_runtime_tasks_call_actor(&id, &m, &wargs, &topts, &ids);
    bool ok = ids.len >= 1;
    if (ok) *result = from_wit(&ids.ptr[0]);
    wray_runtime_tasks_list_object_id_free(&ids);
    if (!ok)
        return wray_fail(c, WRAY_ERROR_SYSTEM, "%s: the host returned no result id for %s",
                         c->f->name, method);
    return true;
}

const char *wray_get_json(wray_call *c, wray_object_id id, size_t *len) {
    wray_runtime_objects_object_id_t wid = to_wit(id);
    wray_runtime_objects_list_object_id_t ids = {&wid, 1};
    wray_runtime_objects_list_payload_t got;
    task_error_t err;
    if (!wray_runtime_objects_get(&ids, NULL, &got, &err)) {
        take_host_error(c, &err);
        return NULL;
    }
    char *text = NULL;
    if (got.len != 1) {
        wray_fail(c, WRAY_ERROR_SYSTEM, "%s: the host returned %zu values for one object",
                  c->f->name, got.len);
    } else if (got.ptr[0].codec != WRAY_CODEC_JSON) {
        wray_fail(c, WRAY_ERROR_INVALID_ARGUMENT,
                  "%s: object %016llx%016llx%08x is %s, but wray_get_json reads json", c->f->name,
                  (unsigned long long)id.task_hi, (unsigned long long)id.task_lo,
                  (unsigned)id.index, codec_name(got.ptr[0].codec));
    } else if (got.ptr[0].data.len > SIZE_MAX - 1 ||
               !(text = temp(c, got.ptr[0].data.len + 1))) {
        wray_fail(c, WRAY_ERROR_OUT_OF_MEMORY, "%s: cannot hold a value of %zu bytes", c->f->name,
                  got.ptr[0].data.len);
    } else {
        size_t n = got.ptr[0].data.len;
        if (n) memcpy(text, got.ptr[0].data.ptr, n);
        text[n] = 0;
        if (len) *len = n;
    }
    wray_runtime_objects_list_payload_free(&got);
    return text;
}

bool wray_kill(wray_actor actor) {
    actor_id_t id = {actor.hi, actor.lo};
    return wray_runtime_tasks_kill_actor(&id);
}

void wray_release(wray_object_id id) {
    wray_runtime_objects_object_id_t wid = to_wit(id);
    wray_runtime_objects_list_object_id_t ids = {&wid, 1};
    wray_runtime_objects_release(&ids);
}

wray_object_id wray_actor_handle_object(wray_actor actor) {
    return (wray_object_id){actor.hi, actor.lo, 1};
}

void wray_actor_hex(wray_actor actor, char out[33]) {
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)actor.hi,
             (unsigned long long)actor.lo);
}

bool wray_return_actor(wray_call *c, wray_actor actor) {
    char text[64];
    char hex[33];
    wray_actor_hex(actor, hex);
    int n = snprintf(text, sizeof text, "{\"$actor\":\"%s\"}", hex);
    wray_runtime_types_object_id_t *refs = malloc(sizeof *refs);
    if (!refs) return wray_fail(c, WRAY_ERROR_OUT_OF_MEMORY, "%s: out of memory", c->f->name);
    *refs = to_wit(wray_actor_handle_object(actor));
    if (!push_copy(c, WRAY_CODEC_JSON, text, (size_t)n)) {
        free(refs);
        return false;
    }
    /* The value lists the handle's object: the caller holds it. */
    c->out[c->num_out - 1].refs = (wray_runtime_types_list_object_id_t){refs, 1};
    return true;
}

/* ---- invoke ------------------------------------------------------------- */

/* A not-found error for an unknown name: no function to name, so the
 * error's function is the name asked for. */
static void not_found(const library_string_t *name, task_error_t *err) {
    size_t n = function_count();
    size_t have = 0;
    for (size_t k = 0; k < n; k++) have += strlen(function_at(k)->name) + 2;
    const char *prefix = "no remote function `";
    const char *middle = "` in this C component (it has: ";
    /* Hostile lengths: at most 200 bytes of the name, cut at a character
     * boundary (the name is UTF-8: the canonical ABI checked it). */
    size_t shown = name->len > 200 ? 200 : name->len;
    while (shown < name->len && shown > 0 && (name->ptr[shown] & 0xc0) == 0x80) shown--;
    const char *asked = shown ? (const char *)name->ptr : "";
    size_t cap = strlen(prefix) + shown + strlen(middle) + have + 8;
    char *message = malloc(cap);
    size_t o = 0;
    if (message) {
        o += (size_t)snprintf(message, cap, "%s%.*s%s", prefix, (int)shown, asked, middle);
        for (size_t k = 0; k < n; k++)
            o += (size_t)snprintf(message + o, cap - o, "%s%s", k ? ", " : "",
                                  function_at(k)->name);
        o += (size_t)snprintf(message + o, cap - o, ")");
        sanitize_utf8((uint8_t *)message, o);
    }
    err->kind = WRAY_RUNTIME_TYPES_ERROR_KIND_NOT_FOUND;
    library_string_dup_n(&err->function, asked, shown);
    task_id(&err->task);
    err->message.ptr = (uint8_t *)message;
    err->message.len = message ? o : 0;
    err->causes.ptr = NULL;
    err->causes.len = 0;
}

bool exports_wray_runtime_functions_invoke(
    library_string_t *name, exports_wray_runtime_functions_list_arg_t *args,
    exports_wray_runtime_functions_codec_t *maybe_result_codec,
    exports_wray_runtime_functions_list_payload_t *ret,
    exports_wray_runtime_functions_task_error_t *err) {
    ensure_setup();
    const wray_function *f = find_function(name->ptr, name->len);
    bool ok;
    if (!f) {
        not_found(name, err);
        ok = false;
    } else {
        wray_call c = {
            .f = f,
            .args = args->ptr,
            .num_args = args->len,
            .has_result_codec = maybe_result_codec != NULL,
            .result_codec = maybe_result_codec ? *maybe_result_codec : 0,
        };
        if (args->len != f->num_params) {
            wray_fail(&c, WRAY_ERROR_INVALID_ARGUMENT, "%s takes %zu arguments, got %zu",
                      f->name, f->num_params, args->len);
        } else if (!f->fn(&c) && !c.failed) {
            wray_fail(&c, WRAY_ERROR_APPLICATION, "%s failed (without saying why)", f->name);
        } else if (!c.failed && c.num_out != returns_of(f)) {
            wray_fail(&c, WRAY_ERROR_APPLICATION, "%s wrote %zu results, but declares %u",
                      f->name, c.num_out, (unsigned)returns_of(f));
        }
        unmap_all();
        for (size_t k = 0; k < c.num_temps; k++) free(c.temps[k]);
        free(c.temps);
        ok = !c.failed;
        if (ok) {
            ret->ptr = c.out;
            ret->len = c.num_out;
        } else {
            for (size_t k = 0; k < c.num_out; k++) wray_runtime_types_payload_free(&c.out[k]);
            free(c.out);
            *err = c.error;
        }
    }
    /* The arguments are ours to free (the canonical ABI hands them over). */
    exports_wray_runtime_functions_list_arg_free(args);
    library_string_free(name);
    /* printf output sits in stdio's buffer until flushed: lost otherwise. */
    fflush(NULL);
    return ok;
}

/* ---- logs and panics ---------------------------------------------------- */

static char *vformat(const char *fmt, va_list ap, size_t *len) {
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (text) vsnprintf(text, (size_t)n + 1, fmt, again);
    va_end(again);
    *len = text ? (size_t)n : 0;
    return text;
}

void wray_log(wray_log_level level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t len;
    char *text = vformat(fmt, ap, &len);
    va_end(ap);
    if (text) sanitize_utf8((uint8_t *)text, len);
    library_string_t message = {(uint8_t *)(text ? text : ""), len};
    wray_runtime_runtime_log((uint8_t)level, &message);
    free(text);
}

_Noreturn void wray_panic(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t len;
    char *text = vformat(fmt, ap, &len);
    va_end(ap);
    if (text) sanitize_utf8((uint8_t *)text, len);
    library_string_t message = {(uint8_t *)(text ? text : "panic"), text ? len : 5};
    fflush(NULL);
    wray_runtime_runtime_panicked(&message);
    abort();
}
