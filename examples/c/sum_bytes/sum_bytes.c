/*
 * sum_bytes: a C component of remote functions.
 *
 * `sum_bytes(data)` takes a `raw` object (put by a driver, passed as an
 * object ref) and returns the sum of its bytes as a JSON number, reading
 * the object in place: a large object in the node's shared-memory store
 * arrives as an object id, and `wray_map` maps its pages over a window of
 * this instance's memory, copy-on-write, with no copy. A small object (or a
 * `raw` value passed inline) arrives as bytes already.
 *
 * `add(a, b)` adds two JSON numbers: the smallest call, for benchmarks.
 *
 * Build: `cargo xtask c-guests` (or see sdk/c/README.md for the clang line).
 */
#include "wray.h"

#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

/* The sum of len bytes at data. With SIMD (the default build), 32 bytes a
 * step into 16-bit lanes, widened every 128 steps (128 * 2 * 255 < 65536):
 * about 5 GB/s under wasmtime, where the plain loop below runs at 1. */
static uint64_t sum(const uint8_t *data, size_t len) {
    uint64_t total = 0;
    size_t i = 0;
#ifdef __wasm_simd128__
    while (len - i >= 32) {
        size_t steps = (len - i) / 32;
        if (steps > 128) steps = 128;
        v128_t a = wasm_i16x8_splat(0), b = wasm_i16x8_splat(0);
        for (size_t k = 0; k < steps; k++, i += 32) {
            a = wasm_i16x8_add(a, wasm_u16x8_extadd_pairwise_u8x16(wasm_v128_load(data + i)));
            b = wasm_i16x8_add(b, wasm_u16x8_extadd_pairwise_u8x16(wasm_v128_load(data + i + 16)));
        }
        v128_t wide = wasm_i32x4_add(wasm_u32x4_extadd_pairwise_u16x8(a),
                                     wasm_u32x4_extadd_pairwise_u16x8(b));
        total += (uint64_t)wasm_u32x4_extract_lane(wide, 0) + wasm_u32x4_extract_lane(wide, 1) +
                 wasm_u32x4_extract_lane(wide, 2) + wasm_u32x4_extract_lane(wide, 3);
    }
#endif
    for (; i < len; i++) total += data[i];
    return total;
}

static bool sum_bytes(wray_call *c) {
    wray_object_id id;
    size_t len;
    if (wray_arg_object(c, 0, &id)) {
        /* Passed by id: map it (zero-copy), read it in place, unmap it. */
        wray_codec codec;
        const uint8_t *data = wray_map(c, id, &len, &codec);
        if (!data) return false;
        if (codec != WRAY_CODEC_RAW) {
            wray_unmap(data);
            return wray_fail(c, WRAY_ERROR_INVALID_ARGUMENT,
                             "sum_bytes: argument 0 (`data`) is %s, but sum_bytes reads raw",
                             wray_codec_name((int)codec));
        }
        uint64_t total = sum(data, len);
        wray_unmap(data);
        return wray_return_uint(c, total);
    }
    /* Passed inline: wray_arg_bytes checks the codec is raw. */
    const uint8_t *data = wray_arg_bytes(c, 0, &len);
    if (!data) return false;
    return wray_return_uint(c, sum(data, len));
}

static bool add(wray_call *c) {
    double a, b;
    if (!wray_arg_number(c, 0, &a) || !wray_arg_number(c, 1, &b)) return false;
    return wray_return_number(c, a + b);
}

static const wray_param sum_bytes_params[] = {
    {"data", WRAY_SCHEMA_BYTES},
};

static const wray_param add_params[] = {
    {"a", WRAY_SCHEMA_NUMBER},
    {"b", WRAY_SCHEMA_NUMBER},
};

WRAY_FUNCTIONS(
    WRAY_FUNCTION(sum_bytes, sum_bytes_params, "{\"type\":\"integer\",\"minimum\":0}"),
    WRAY_FUNCTION(add, add_params, WRAY_SCHEMA_NUMBER),
)
