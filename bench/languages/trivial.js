// The trivial JavaScript functions of bench/languages/run.sh: the same
// no-op as microbench's Rust `noop`, in a fresh instance per task and in a
// reused one.
import { remote } from "wray";

const integer = { type: "integer" };
const shape = { params: [{ name: "x", schema: integer }], returns: integer };

export const noop = remote(function noop(x) {
  return x;
}, shape);

export const noopReused = remote(function noopReused(x) {
  return x;
}, { ...shape, reuse: true });
