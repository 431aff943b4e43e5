// An actor written in JavaScript, called from Rust (or any SDK):
// deployed as `counter_js`, a Rust driver declares
//   wray::deployed! { pub mod js = "counter_js" as json {
//       pub actor Counter { pub fn new(start: i64); pub fn add(&mut self, k: i64) -> i64; }
//   } }
import { actor, remote } from "wray";

const integer = { type: "integer" };

export const Counter = actor(
  class Counter {
    constructor(start) {
      this.n = start;
    }
    add(k) {
      this.n += k;
      return this.n;
    }
    get() {
      return this.n;
    }
  },
  {
    params: [{ name: "start", schema: integer }],
    methods: {
      add: { params: [{ name: "k", schema: integer }], returns: integer },
      get: { returns: integer },
    },
  },
);

// A trivial remote function, for benchmarks.
export const echo = remote(function echo(x) {
  return x;
});

// Fails on purpose: a thrown Error is an `application` task error.
export const fail = remote(function fail(message) {
  console.log("fail: about to throw", message);
  throw new Error(message);
});
