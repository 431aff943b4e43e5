/*
 * wray.h: the C guest SDK of wray.
 *
 * A C component of remote functions implements the `wray:runtime/library`
 * world (wit/runtime.wit): it exports `metadata.describe` and
 * `functions.invoke`, and wray.c implements both from a table of the
 * component's functions. A user writes the functions and the table:
 *
 *     #include "wray.h"
 *
 *     static bool add(wray_call *c) {
 *         double a, b;
 *         if (!wray_arg_number(c, 0, &a) || !wray_arg_number(c, 1, &b))
 *             return false;
 *         return wray_return_number(c, a + b);
 *     }
 *
 *     static const wray_param add_params[] = {
 *         {"a", WRAY_SCHEMA_NUMBER},
 *         {"b", WRAY_SCHEMA_NUMBER},
 *     };
 *
 *     WRAY_FUNCTIONS(
 *         WRAY_FUNCTION(add, add_params, WRAY_SCHEMA_NUMBER),
 *     )
 *
 * A function reads its arguments with the `wray_arg_*` helpers, writes its
 * results with the `wray_return_*` helpers (one call per declared return)
 * and returns true; or it returns false, after `wray_fail` or after a
 * helper that failed (each helper records a task error naming the function
 * and the argument before it returns false / NULL). Memory the helpers hand
 * out (decoded strings, mapped objects) lives until the function returns.
 *
 * Everything runs on the one thread of the instance; no helper may be
 * called outside a remote function except `wray_register`, `wray_log` and
 * `wray_panic`.
 *
 * Values: the SDK reads and writes `json` (numbers, strings, booleans, and
 * JSON text you write yourself) and `raw` bytes. Its JSON reader is a tiny
 * one for scalars (a number, a string, true/false, or an object ref
 * `{"$object": "<40 hex digits>"}`): an argument that is a JSON array or
 * object is read as text with `wray_arg_json`, for you to parse.
 */
#ifndef WRAY_H
#define WRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The SDK's name and version, as `describe` reports them. */
#define WRAY_SDK "wray-c 0.1.0"

/* How a payload is encoded (the WIT `codec`). */
typedef enum wray_codec {
    WRAY_CODEC_RKYV = 0, /* the Rust SDK's own: never read by this SDK */
    WRAY_CODEC_JSON = 1,
    WRAY_CODEC_RAW = 2,
} wray_codec;

/* Why a task failed (the WIT `error-kind`). */
typedef enum wray_error_kind {
    WRAY_ERROR_APPLICATION = 0,
    WRAY_ERROR_PANIC = 1,
    WRAY_ERROR_TRAP = 2,
    WRAY_ERROR_OUT_OF_MEMORY = 3,
    WRAY_ERROR_TIMEOUT = 4,
    WRAY_ERROR_INVALID_ARGUMENT = 5,
    WRAY_ERROR_NOT_FOUND = 6,
    WRAY_ERROR_ACTOR_DIED = 7,
    WRAY_ERROR_SYSTEM = 8,
    WRAY_ERROR_INFEASIBLE = 9,
    WRAY_ERROR_CANCELLED = 10,
} wray_error_kind;

/* Severity of a log line (the WIT `log-level`). */
typedef enum wray_log_level {
    WRAY_LOG_TRACE = 0,
    WRAY_LOG_DEBUG = 1,
    WRAY_LOG_INFO = 2,
    WRAY_LOG_WARN = 3,
    WRAY_LOG_ERROR = 4,
} wray_log_level;

/* "rkyv", "json", "raw" (or "an unknown codec"), for messages. */
const char *wray_codec_name(int codec);

/* An object's identity: the producing task (hi, lo) and an index. */
typedef struct wray_object_id {
    uint64_t task_hi;
    uint64_t task_lo;
    uint32_t index;
} wray_object_id;

/* One call of a remote function: its arguments and its results so far. */
typedef struct wray_call wray_call;

/* A remote function: true with its results written, or false with an error
 * recorded (see the top of this file). */
typedef bool (*wray_fn)(wray_call *call);

/* One parameter: its name and the JSON Schema of its JSON form (JSON text;
 * "{}" accepts anything). */
typedef struct wray_param {
    const char *name;
    const char *schema;
} wray_param;

/* One remote function, as the component declares it. */
typedef struct wray_function {
    /* The name callers use. */
    const char *name;
    /* The implementation. */
    wray_fn fn;
    /* The parameters, in order (a call must pass exactly this many). */
    size_t num_params;
    const wray_param *params;
    /* How many results it writes (0 counts as 1). */
    uint32_t num_returns;
    /* The JSON Schema of each result, num_returns of them; NULL: "{}". */
    const char *const *returns;
} wray_function;

/* Common schemas. */
#define WRAY_SCHEMA_ANY "{}"
#define WRAY_SCHEMA_NUMBER "{\"type\":\"number\"}"
#define WRAY_SCHEMA_INTEGER "{\"type\":\"integer\"}"
#define WRAY_SCHEMA_STRING "{\"type\":\"string\"}"
#define WRAY_SCHEMA_BOOLEAN "{\"type\":\"boolean\"}"
/* A `raw` argument (the host checks only `json` values against schemas). */
#define WRAY_SCHEMA_BYTES "{\"description\":\"raw bytes\"}"

#define WRAY_COUNT_OF(array) (sizeof(array) / sizeof((array)[0]))

/* A table entry for function `fn` (named as the C identifier) with the
 * wray_param array `params` and one result of schema `returns`. */
#define WRAY_FUNCTION(fn, params, returns)                                   \
    {#fn, fn, WRAY_COUNT_OF(params), params, 1,                              \
     (const char *const[]){returns}}

/* As WRAY_FUNCTION, for a function without parameters. */
#define WRAY_FUNCTION0(fn, returns)                                          \
    {#fn, fn, 0, NULL, 1, (const char *const[]){returns}}

/* Defines the component's table of functions (once, in one file):
 * WRAY_FUNCTIONS(WRAY_FUNCTION(...), WRAY_FUNCTION(...)) */
#define WRAY_FUNCTIONS(...)                                                  \
    const wray_function wray_functions[] = {__VA_ARGS__};                    \
    const size_t wray_num_functions = WRAY_COUNT_OF(wray_functions);

/* The table WRAY_FUNCTIONS defines (optional: see wray_register). */
extern const wray_function wray_functions[];
extern const size_t wray_num_functions;

/* Adds a function to the table at run time (after the static table).
 * `f` must stay valid for the instance's life. Call it from `wray_setup`.
 * Returns false when the name is taken or memory is short. */
bool wray_register(const wray_function *f);

/* Optional hook: define `void wray_setup(void)` and it runs once, before
 * the first describe or invoke, to call wray_register. */
void wray_setup(void);

/* ---- arguments ---------------------------------------------------------- */

/* The function being called, and how many arguments it got (the SDK
 * checked the count against num_params before calling it). */
const char *wray_function_name(const wray_call *c);
size_t wray_num_args(const wray_call *c);

/* The codec of argument `i`; for an object argument, the object's (which
 * asks the host, blocking until the object exists). -1 with an error
 * recorded when that fails. */
int wray_arg_codec(wray_call *c, size_t i);

/* Whether argument `i` is an object ref: an object the host passes by id
 * (large objects in shared memory), or a JSON value that is exactly an
 * object ref `{"$object": "..."}` listed in the value's refs. Sets *id.
 * Records no error when it is not. */
bool wray_arg_object(wray_call *c, size_t i, wray_object_id *id);

/* Argument `i` as `raw` bytes: the payload's bytes, or for an object ref
 * (see wray_arg_object) the object mapped zero-copy (wray_map). NULL when
 * it is in another codec (invalid-argument naming both codecs) or cannot
 * be mapped. The bytes are valid until the function returns. */
const uint8_t *wray_arg_bytes(wray_call *c, size_t i, size_t *len);

/* Argument `i` as `json` text (not NUL-terminated), mapped as in
 * wray_arg_bytes when it is an object passed by id. */
const char *wray_arg_json(wray_call *c, size_t i, size_t *len);

/* Argument `i` as a JSON number. wray_arg_int accepts only integers
 * (`3`, `3.0`, `3e2`) that fit, and exactly (beyond 2^53 only when
 * written without fraction or exponent). */
bool wray_arg_number(wray_call *c, size_t i, double *out);
bool wray_arg_int(wray_call *c, size_t i, int64_t *out);
bool wray_arg_bool(wray_call *c, size_t i, bool *out);

/* Argument `i` as a JSON string, unescaped to UTF-8 and NUL-terminated
 * (*len excludes the NUL; the string may hold NULs of its own from
 * "\u0000"). Valid until the function returns. */
const char *wray_arg_string(wray_call *c, size_t i, size_t *len);

/* ---- zero-copy objects -------------------------------------------------- */

/* Maps object `id` into this instance's memory, copy-on-write, over a
 * window reserved outside malloc (memory.grow): no copy, whatever its size
 * (objects the host keeps on its heap are copied in instead). Blocks until
 * the object exists. Sets *len, and *codec when codec is not NULL. NULL
 * with an error recorded when it fails. Unmapped by wray_unmap, or when
 * the function returns. Writes change only this instance's copy. */
const uint8_t *wray_map(wray_call *c, wray_object_id id, size_t *len,
                        wray_codec *codec);

/* Unmaps what wray_map returned (the pages read as zeros again; the
 * window is kept for the next map). Unknown pointers are ignored. */
void wray_unmap(const uint8_t *data);

/* ---- results ------------------------------------------------------------ */

/* Each appends one result, as `json` unless noted. False with an error
 * recorded when the value cannot be written: a NaN or infinity (JSON has
 * none), a string that is not UTF-8, memory, or a codec the caller did not
 * ask for (the caller's `result-codec`: json results need none or json,
 * raw results none or raw). */
bool wray_return_number(wray_call *c, double value);
bool wray_return_int(wray_call *c, int64_t value);
bool wray_return_uint(wray_call *c, uint64_t value);
bool wray_return_bool(wray_call *c, bool value);
bool wray_return_string(wray_call *c, const char *s, size_t len);
/* JSON text you vouch for (the host checks it against the return schema
 * only where it reads it). */
bool wray_return_json(wray_call *c, const char *json, size_t len);
/* `raw` bytes, copied. */
bool wray_return_bytes(wray_call *c, const uint8_t *data, size_t len);

/* ---- errors and logs ---------------------------------------------------- */

/* Records a task error of `kind` with a printf-style message, naming the
 * function; returns false, so `return wray_fail(c, ...)` fails the call.
 * The first error recorded in a call wins. */
bool wray_fail(wray_call *c, wray_error_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Writes a log line attributed to the running task (printf-style). */
void wray_log(wray_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Fails the task with kind `panic` and this message, at once (aborts the
 * instance). */
_Noreturn void wray_panic(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

#ifdef __cplusplus
}
#endif

#endif /* WRAY_H */
