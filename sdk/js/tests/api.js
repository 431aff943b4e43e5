// End-to-end checks of the SDK inside one component (driver + functions +
// actors): node ../build.mjs api.js -o /tmp/api_js.wasm && wray run /tmp/api_js.wasm
import { remote, actor, get, put, wait, cancel, kill, main, getActor, TaskError, ObjectRef, taskId, log, encodeJson, decodeJson, bindingsWarmed } from "wray";

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
  console.log(`ok ${what}`);
}

export const add = remote((a, b) => a + b, { name: "add", params: [{ name: "a", schema: { type: "number" } }, { name: "b", schema: { type: "number" } }] });
export const divmod = remote(function divmod(a, b) {
  return [Math.floor(a / b), a % b];
}, { numReturns: 2 });
export const sumRefs = remote(function sumRefs(refs) {
  return get(refs).reduce((x, y) => x + y, 0);
});
export const length = remote(function length(bytes) {
  return bytes instanceof Uint8Array ? ["bytes", bytes.length] : ["other", bytes.length];
});
export const poke = remote(function poke(h) {
  return get(h.incr.remote(100));
});
export const big = remote(function big(x) {
  return 2n ** 60n;
});
// What a fresh instance sees of the build's warm-up of the bindings' realm.
export const warmedHere = remote(function warmedHere() {
  return bindingsWarmed;
});
// A global one task sets: the next task's fresh instance must not see it.
export const bumpGlobal = remote(function bumpGlobal() {
  globalThis.wrayBumped = (globalThis.wrayBumped ?? 0) + 1;
  return globalThis.wrayBumped;
});
export const sleepy = remote(function sleepy() {
  const end = Date.now() + 5000;
  while (Date.now() < end) {}
  return 1;
});
export const throwsTaskError = remote(function throwsTaskError(r) {
  return get(r);
});
export const getsFirst = remote(function getsFirst(refs) {
  return get(refs[0]);
});
export const wrapsFirst = remote(function wrapsFirst(refs) {
  try {
    return get(refs[0]);
  } catch (e) {
    throw new Error("wrapped", { cause: e });
  }
});
export const incrNamed = remote(function incrNamed(name) {
  return get(getActor(name).incr.remote(1));
});
export const throwsString = remote(function throwsString() {
  throw "a string";
});

export const Acc = actor(
  class Acc {
    constructor(start = 0) {
      this.n = start;
    }
    incr(k) {
      this.n += k;
      return this.n;
    }
    _private() {}
  },
  { methods: { incr: { params: [{ name: "k", schema: { type: "integer" } }] } } },
);

main((args) => {
  check(get(add.remote(1, 2)) === 3, "add");
  check(bindingsWarmed === true && get(warmedHere.remote()) === true, "the bindings' realm warmed before the snapshot (driver and a fresh task)");
  check(get(bumpGlobal.remote()) === 1 && get(bumpGlobal.remote()) === 1, "a fresh instance sees no global the last task set");
  check(get(add.remote(add.remote(1, 2), 10)) === 13, "dependency");
  const [q, r] = divmod.remote(17, 5);
  check(q instanceof ObjectRef && get(q) === 3 && get(r) === 2, "numReturns 2");
  const p = put({ a: [1, 2, 3] });
  check(JSON.stringify(get(p)) === '{"a":[1,2,3]}', "put/get");
  // Scalars skip the replacer, text without `"$` the reviver: same bytes,
  // same values.
  const utf8 = new TextDecoder();
  for (const v of [0, -1.5, 1e300, true, false, null, "", 'a "q" \n é 😀']) {
    const enc = encodeJson(v);
    check(utf8.decode(enc.data) === JSON.stringify(v) && enc.refs.length === 0 && decodeJson(enc.data) === v, `codec scalar ${JSON.stringify(v)}`);
  }
  let nanThrew = false;
  try {
    encodeJson(NaN);
  } catch (e) {
    nanThrew = e instanceof TypeError;
  }
  check(nanThrew && utf8.decode(encodeJson(undefined).data) === "null", "codec NaN and undefined");
  const hex = p.hex();
  check(decodeJson(`{"\\u0024object":"${hex}"}`) instanceof ObjectRef, "codec escaped $object key");
  check(decodeJson(`[{"$object":"${hex}"},{"x":"\\u0024"}]`)[0] instanceof ObjectRef, "codec $object inside");
  check(get(sumRefs.remote([put(1), put(2), add.remote(3, 4)])) === 10, "refs inside a value");
  check(get(put(new Uint8Array([1, 2, 3]))) instanceof Uint8Array, "raw put");
  check(get(length.remote(new Uint8Array(5)))[0] === "bytes", "raw argument");
  const bigv = new Uint8Array(200 * 1024).fill(7);
  const bigr = put(bigv);
  check(get(bigr).length === 200 * 1024 && get(bigr)[1000] === 7, "put-bytes (200 KiB)");
  const a = Acc.remote(5);
  check(get(a.incr.remote(1)) === 6, "actor");
  check(get(poke.remote(a)) === 106, "actor handle passed to a task");
  check(get(big.remote(0)) === 2 ** 60, "BigInt result");
  const [ready, notReady] = wait([add.remote(1, 1), sleepy.remote()], { numReturns: 1, timeout: 3 });
  check(ready.length === 1 && notReady.length === 1, "wait");
  check(cancel(notReady[0], { force: true }) === true, "cancel");
  try {
    get(notReady[0]);
    check(false, "cancelled get throws");
  } catch (e) {
    check(e instanceof TaskError && e.kind === "cancelled", `cancelled: ${e.kind}`);
  }
  try {
    get(sleepy.remote(), { timeout: 0.1 });
    check(false, "timeout throws");
  } catch (e) {
    check(e instanceof TaskError && e.kind === "timeout", `timeout: ${e.kind}`);
  }
  const failed = add.remote(1);
  try {
    get(throwsTaskError.remote(failed));
  } catch (e) {
    check(e.kind === "invalid-argument" && e.function === "add", `error passes through: ${e.message}`);
  }
  try {
    get(getsFirst.remote([failed]));
  } catch (e) {
    check(
      e.kind === "application" && e.function === "getsFirst" && e.causes.length === 1 &&
        e.root.function === "add" && e.root.kind === "invalid-argument",
      `an uncaught get error is the first cause: ${e.causes.map((c) => c.function)}`,
    );
  }
  try {
    get(wrapsFirst.remote([failed]));
  } catch (e) {
    check(
      e.taskMessage.startsWith("Error: wrapped") && e.root.function === "add",
      `an Error's cause chain is followed: ${e.causes.map((c) => c.function)}`,
    );
  }
  try {
    get(throwsString.remote());
  } catch (e) {
    check(e.kind === "application" && e.taskMessage.includes("a string"), `non-Error thrown: ${e.taskMessage}`);
  }
  check(kill(a) === true, "kill");
  try {
    get(a.incr.remote(1));
  } catch (e) {
    check(e.kind === "actor-died", `killed actor: ${e.kind}`);
  }
  // Named actors (Ray's name= / get_actor) on one node.
  const keeper = Acc.options({ name: "api-js-keeper", lifetime: "detached", maxRestarts: 1, maxTaskRetries: 1 }).remote(40);
  check(get(incrNamed.remote("api-js-keeper")) === 41, "a named actor found from a task");
  check(getActor("api-js-keeper").hex() === keeper.hex() && get(getActor("api-js-keeper").incr.remote(1)) === 42, "getActor in the driver");
  let refused = null;
  try {
    Acc.options({ name: "api-js-keeper" }).remote(0);
  } catch (e) {
    refused = e;
  }
  check(refused !== null && refused.message.includes("taken") && refused.message.includes(keeper.hex()), "a taken name is refused naming the holder");
  check(Acc.options({ name: "api-js-keeper", getIfExists: true }).remote(0).hex() === keeper.hex(), "getIfExists returns the holder");
  let missing = null;
  try {
    getActor("api-js-nobody");
  } catch (e) {
    missing = e;
  }
  check(missing !== null && missing.kind === "not-found" && missing.message.includes("api-js-nobody"), "getActor of an unknown name says so");
  check(kill(keeper) === true, "kill a detached named actor");
  check(/^[0-9a-f]{32}$/.test(taskId()), "taskId");
  log("a log line from the JS driver");
  check(args.length === 0 || args[0] === "x", "args");
  if (args[0] === "fail") throw new Error("driver failed on purpose");
});
