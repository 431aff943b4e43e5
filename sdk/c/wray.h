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

/* ---- actors ------------------------------------------------------------- */

/*
 * A C component has no actor classes of its own, but its functions create,
 * find and call actors of other deployed components (any language), with
 * Ray's actor options:
 *
 *     wray_actor_options o = {
 *         .name = "keeper", .detached = true,
 *         .max_restarts = 1, .max_task_retries = 1,
 *         .num_cpus = WRAY_F64(0.5),
 *     };
 *     const char *args[] = {"5"};                   (JSON text, one per argument)
 *     wray_actor counter;
 *     if (!wray_actor_create(c, "counter/Counter", args, 1, &o, &counter))
 *         return false;                             (the error is recorded)
 *     ...
 *     wray_actor found;
 *     if (!wray_get_actor(c, "keeper", NULL, &found)) return false;
 *     wray_object_id r;
 *     if (!wray_actor_call(c, found, "increment", NULL, 0, &r)) return false;
 *     const char *n = wray_get_json(c, r, NULL);   ("6")
 *
 * Every helper that fails records a task error on `c` (naming what failed)
 * and returns false or NULL, as the argument readers do. What the instance
 * holds (actor handles, call results) is released when the function
 * returns, or earlier with wray_release; a detached actor lives on.
 */

/* An actor's identity (the id of the task that created it): in C, the
 * handle itself. */
typedef struct wray_actor {
    uint64_t hi;
    uint64_t lo;
} wray_actor;

/* An optional number: {0} (or leaving it out of an initializer) is unset
 * (the class's declared value, then the node's default); WRAY_F64(x) /
 * WRAY_U64(x) sets it. */
typedef struct wray_opt_f64 {
    bool set;
    double value;
} wray_opt_f64;
typedef struct wray_opt_u64 {
    bool set;
    uint64_t value;
} wray_opt_u64;
#define WRAY_F64(x) ((wray_opt_f64){true, (double)(x)})
#define WRAY_U64(x) ((wray_opt_u64){true, (uint64_t)(x)})

/* One custom resource: `quantity` units of `name`. */
typedef struct wray_resource {
    const char *name;
    double quantity;
} wray_resource;

/* Ray's -1 for max_restarts and max_task_retries: no limit. */
#define WRAY_UNLIMITED UINT32_MAX

/* How an actor is created (Ray's `Cls.options(...)`); zero-initialized
 * fields take the defaults. */
typedef struct wray_actor_options {
    /* A name unique in the cluster while the actor lives, which
     * wray_get_actor finds it by from any task, job and node (Ray's
     * `name=`): 1 to 128 bytes of UTF-8, no '/', '@' or control character,
     * not "." or "..". NULL: none. A name a live actor holds makes
     * wray_actor_create fail naming the holder (the new actor is not kept),
     * unless get_if_exists. */
    const char *name;
    /* With a name: a live actor of the class holding it already is taken
     * instead of creating one (Ray's `get_if_exists=True`). */
    bool get_if_exists;
    /* Lives until it is killed, past its job and its handles (Ray's
     * `lifetime="detached"`). */
    bool detached;
    /* Times the actor is created again (its constructor re-run with the
     * same arguments) on another node after its node died; 0 by default,
     * WRAY_UNLIMITED for no limit. */
    uint32_t max_restarts;
    /* Times a call running when its node died runs again on the new
     * instance; 0 by default. */
    uint32_t max_task_retries;
    /* Resources held for the actor's lifetime (Ray's num_cpus, num_gpus,
     * memory in bytes, resources={..}). */
    wray_opt_f64 num_cpus;
    wray_opt_f64 num_gpus;
    wray_opt_u64 memory;
    const wray_resource *resources;
    size_t num_resources;
    /* Limits of each call: bytes of linear memory, wall-clock
     * milliseconds, wasm fuel. */
    wray_opt_u64 max_memory;
    wray_opt_u64 timeout_ms;
    wray_opt_u64 fuel;
} wray_actor_options;

/* Creates an actor of `qualified_class` ("component/Class": the class of
 * the component deployed under that name, any language) with `num_args`
 * constructor arguments, each JSON text (NUL-terminated; an object ref
 * inside is passed as text, not held), and `options` (NULL: the defaults).
 * Returns at once with *actor set; the constructor runs as the actor's
 * first task (a failing one makes its calls fail with `actor-died`).
 * False with an error recorded: a malformed class or option, text that is
 * not UTF-8, or a name another live actor holds (invalid-argument, naming
 * the name and the holder). */
bool wray_actor_create(wray_call *c, const char *qualified_class,
                       const char *const *args, size_t num_args,
                       const wray_actor_options *options, wray_actor *actor);

/* The live actor named `name` (Ray's `get_actor`), from any task of any
 * job on any node; `class_name` checks its class (NULL: any class). This
 * task holds it from now on, without owning it. False with an error
 * recorded: `not-found` naming `name` when no live actor has it,
 * `invalid-argument` for another class or a name no actor can have,
 * `system` when the cluster's directory cannot be read. */
bool wray_get_actor(wray_call *c, const char *name, const char *class_name,
                    wray_actor *actor);

/* Calls `method` on `actor` with `num_args` JSON-text arguments; *result
 * is the id of its one return object (results come back as JSON). Never
 * blocks: wray_get_json waits for it. Calls from one task run on the actor
 * one at a time, in order. False with an error recorded for text that is
 * not UTF-8. */
bool wray_actor_call(wray_call *c, wray_actor actor, const char *method,
                     const char *const *args, size_t num_args,
                     wray_object_id *result);

/* The JSON text of object `id` (NUL-terminated, valid until the function
 * returns; *len, when len is not NULL, excludes the NUL), blocking until it
 * exists. NULL with an error recorded: the object's own error (passed on
 * as the cause of this call's), or a value that is not JSON. */
const char *wray_get_json(wray_call *c, wray_object_id id, size_t *len);

/* Kills an actor (Ray's `kill`): its calls fail with `actor-died`, its
 * name is free again. Whether it was alive. */
bool wray_kill(wray_actor actor);

/* Drops this task's hold on object `id` (a call's result, ...) before the
 * function returns. */
void wray_release(wray_object_id id);

/* The object every handle of `actor` holds: releasing it drops this task's
 * handle (an actor nobody holds exits, unless detached). */
wray_object_id wray_actor_handle_object(wray_actor actor);

/* `actor` as 32 lowercase hex digits and a NUL, as the host writes ids. */
void wray_actor_hex(wray_actor actor, char out[33]);

/* Appends a result: the handle of `actor`, `{"$actor": "<32 hex>"}`, which
 * the caller receives as a live handle (it holds the actor). */
bool wray_return_actor(wray_call *c, wray_actor actor);

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
