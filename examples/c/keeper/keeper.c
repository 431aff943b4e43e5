/*
 * keeper: C functions that keep a named, detached counter (Ray's named
 * actors: `name`, `lifetime="detached"`, `max_restarts`,
 * `max_task_retries`, `get_actor`) of the Rust `counter` example
 * (examples/counter, deployed as `counter`): made by one call, found by
 * name from any later call, job or node, restarted on another node if its
 * own dies.
 *
 *     wray deploy target/wasm/counter.wasm
 *     wray deploy target/wasm/keeper.wasm
 *     wray call keeper/keep --json '["tally", 5, ""]'     -> 6
 *     wray call keeper/bump --json '["tally"]'            -> 7
 *     wray call keeper/keep --json '["tally", 0, ""]'     fails: the name is taken
 *     wray call keeper/drop --json '["tally"]'            -> true
 */
#include <stdio.h>
#include <stdlib.h>

#include "wray.h"

/* The class kept: `Counter` of the component deployed as `counter`. */
#define COUNTER_CLASS "counter/Counter"

/* Adds one to `counter`: its new count. */
static bool increment(wray_call *c, wray_actor counter, int64_t *count) {
    wray_object_id r;
    if (!wray_actor_call(c, counter, "increment", NULL, 0, &r)) return false;
    const char *text = wray_get_json(c, r, NULL);
    if (!text) return false;
    char *end;
    long long n = strtoll(text, &end, 10);
    if (end == text || *end != 0)
        return wray_fail(c, WRAY_ERROR_INVALID_ARGUMENT, "increment returned %s, not an integer", text);
    *count = n;
    return true;
}

/* keep(name, start, resource): creates the counter `name` at `start`
 * (detached, one restart, one retry of a lost call; holding one unit of
 * custom resource `resource` unless it is ""), adds one and returns the
 * count. Fails naming the holder when a live actor holds `name`. */
static bool keep(wray_call *c) {
    size_t len;
    int64_t start;
    const char *name = wray_arg_string(c, 0, &len);
    if (!name || !wray_arg_int(c, 1, &start)) return false;
    const char *resource = wray_arg_string(c, 2, &len);
    if (!resource) return false;
    wray_resource needs[] = {{resource, 1}};
    wray_actor_options options = {
        .name = name,
        .detached = true,
        .max_restarts = 1,
        .max_task_retries = 1,
        .resources = needs,
        .num_resources = len ? 1 : 0,
    };
    char start_json[24];
    snprintf(start_json, sizeof start_json, "%lld", (long long)start);
    const char *args[] = {start_json};
    wray_actor counter;
    int64_t count;
    if (!wray_actor_create(c, COUNTER_CLASS, args, 1, &options, &counter) ||
        !increment(c, counter, &count))
        return false;
    return wray_return_int(c, count);
}

/* bump(name): adds one to the counter `name`; its count. Fails with
 * `not-found` naming `name` when no live actor has it. */
static bool bump(wray_call *c) {
    size_t len;
    const char *name = wray_arg_string(c, 0, &len);
    wray_actor counter;
    int64_t count;
    if (!name || !wray_get_actor(c, name, "Counter", &counter) || !increment(c, counter, &count))
        return false;
    return wray_return_int(c, count);
}

/* drop(name): kills the actor `name`, of any class; whether it was
 * alive. */
static bool drop(wray_call *c) {
    size_t len;
    const char *name = wray_arg_string(c, 0, &len);
    wray_actor counter;
    if (!name || !wray_get_actor(c, name, NULL, &counter)) return false;
    return wray_return_bool(c, wray_kill(counter));
}

static const wray_param keep_params[] = {
    {"name", WRAY_SCHEMA_STRING},
    {"start", WRAY_SCHEMA_INTEGER},
    {"resource", WRAY_SCHEMA_STRING},
};
static const wray_param name_params[] = {
    {"name", WRAY_SCHEMA_STRING},
};

WRAY_FUNCTIONS(
    WRAY_FUNCTION(keep, keep_params, WRAY_SCHEMA_INTEGER),
    WRAY_FUNCTION(bump, name_params, WRAY_SCHEMA_INTEGER),
    WRAY_FUNCTION(drop, name_params, WRAY_SCHEMA_BOOLEAN),
)
