// Actor options and named actors (Ray's `Cls.options(name=..,
// lifetime="detached", max_restarts=.., max_task_retries=..)` and
// `get_actor`) against a fake host (tests/fakehost.mjs: module hooks
// resolve every `wray:runtime/*` import to it). No wasm:
//   node --test sdk/js/tests/actors.test.mjs
import { test, beforeEach } from "node:test";
import assert from "node:assert/strict";
import { register } from "node:module";

const FAKE = new URL("./fakehost.mjs", import.meta.url).href;
const HOOKS = `
export async function resolve(specifier, context, next) {
  if (specifier.startsWith("wray:runtime/")) return { url: ${JSON.stringify(FAKE)}, shortCircuit: true };
  return next(specifier, context);
}`;
register("data:text/javascript," + encodeURIComponent(HOOKS));

const { HOST } = await import(FAKE);
const wray = await import("../wray.js");
HOST.sdk = wray;
const { actor, actorClass, getActor, get, kill, remote, currentActor, currentActorId, ActorHandle } = wray;

const Counter = actor(
  class Counter {
    constructor(start = 0) {
      this.n = start;
    }
    add(k) {
      this.n += k;
      return this.n;
    }
  },
  { methods: { add: { numReturns: 1 } } },
);
const Plain = actor(class Plain {
  ping() {
    return "pong";
  }
});
const Resilient = actor(
  class Resilient {
    ping() {
      return "pong";
    }
  },
  { maxRestarts: 2, lifetime: "detached" },
);

const Mirror = actor(
  class Mirror {
    constructor() {
      this.bornAs = currentActorId();
      this.total = 0;
    }
    me() {
      return [currentActorId(), this.bornAs];
    }
    add(k) {
      this.total += k;
      return this.total;
    }
    callMeBack(k) {
      return addBack.remote(currentActor(), k);
    }
  },
);
const addBack = remote(function addBack(mirror, k) {
  return get(mirror.add.remote(k));
});
const actorOfTask = remote(function actorOfTask() {
  return String(currentActorId());
});

beforeEach(() => HOST.reset());

test("an actor reads its own id and calls itself back through a task", () => {
  const m = Mirror.remote();
  assert.deepEqual(get(m.me.remote()), [m.hex(), m.hex()]);
  assert.equal(get(actorOfTask.remote()), "null");
  assert.equal(currentActorId(), null);
  assert.equal(currentActor(), null);
  const back = get(m.callMeBack.remote(5));
  assert.equal(get(back), 5);
  assert.equal(get(m.add.remote(1)), 6);
});

test("name, lifetime and restart policy reach the host with create-actor-with", () => {
  const c = Counter.options({ name: "keeper", lifetime: "detached", maxRestarts: 1, maxTaskRetries: 3, numCpus: 0.5 }).remote(5);
  const made = HOST.created.at(-1);
  assert.equal(made.options.detached, true);
  assert.equal(made.options.resources.numCpus, 0.5);
  assert.deepEqual(made.actor, { name: "keeper", maxRestarts: 1, maxTaskRetries: 3 });
  // The name was read back once given out: this actor holds it.
  assert.deepEqual(HOST.lookups, [["keeper", "Counter"]]);
  assert.equal(get(c.add.remote(1)), 6);
  // -1 is Ray's "no limit": the WIT's largest u32.
  Plain.options({ maxRestarts: -1 }).remote();
  assert.deepEqual(HOST.created.at(-1).actor, { name: undefined, maxRestarts: 4294967295, maxTaskRetries: 0 });
  // Declared on the class: every creation says it.
  Resilient.remote();
  assert.equal(HOST.created.at(-1).actor.maxRestarts, 2);
  assert.equal(HOST.created.at(-1).options.detached, true);
  // Neither a name nor restarts: plain create-actor.
  Plain.remote();
  assert.equal(HOST.created.at(-1).actor, null);
});

test("getActor finds a named actor, typed by this component's class", () => {
  const c = Counter.options({ name: "keeper" }).remote(10);
  const found = getActor("keeper");
  assert.ok(found instanceof ActorHandle);
  assert.equal(found.hex(), c.hex());
  assert.equal(get(found.add.remote(5)), 15);
  assert.throws(() => found.nope, /no remote method nope/);
  // Another component's actor: this component's classes first, then any.
  const other = actorClass("counter/Tally", { name: "tally" }).remote(0);
  HOST.lookups.length = 0;
  const t = getActor("tally");
  assert.equal(t.hex(), other.hex());
  assert.deepEqual(HOST.lookups.at(-1), ["tally", ""]);
  assert.ok(HOST.lookups.some(([n, cls]) => n === "tally" && cls === "Counter"));
  assert.equal(HOST.created.find((m) => m.cls === "Tally").component, "counter");
});

test("getActor of an unknown name throws naming it", () => {
  assert.throws(
    () => getActor("nobody"),
    (e) => e.kind === "not-found" && e.message.includes("no live actor is named `nobody`"),
  );
  const c = Counter.options({ name: "gone" }).remote(0);
  assert.equal(kill(c), true);
  assert.throws(() => getActor("gone"), /no live actor is named `gone`/);
  for (const bad of ["", "a/b", "x@1", "tab\there", ".", "..", "n".repeat(129), "\ud800"]) {
    assert.throws(() => getActor(bad), RangeError, JSON.stringify(bad));
    assert.throws(() => Counter.options({ name: bad }), RangeError, JSON.stringify(bad));
  }
  assert.throws(() => getActor(7), TypeError);
});

test("a taken name is refused at creation, naming the holder", () => {
  const first = Counter.options({ name: "keeper" }).remote(1);
  assert.throws(
    () => Counter.options({ name: "keeper" }).remote(2),
    (e) => e.message.includes("keeper") && e.message.includes("taken") && e.message.includes(first.hex()),
  );
  assert.equal(get(first.add.remote(1)), 2);
  // Held by an actor of another class: refused, saying which.
  assert.throws(() => Plain.options({ name: "keeper" }).remote(), /Counter/);
  assert.equal(get(getActor("keeper").add.remote(1)), 3);
});

test("getIfExists returns the holder, or creates one", () => {
  const a = Counter.options({ name: "once", getIfExists: true }).remote(100);
  const b = Counter.options({ name: "once", getIfExists: true }).remote(0);
  assert.equal(a.hex(), b.hex());
  assert.equal(get(b.add.remote(1)), 101);
  assert.equal(HOST.created.length, 1);
  assert.throws(() => Plain.options({ name: "once", getIfExists: true }).remote(), /Counter/);
});

test("actor options are checked", () => {
  for (const bad of [
    { lifetime: "forever" },
    { maxRestarts: -2 },
    { maxRestarts: 2 ** 32 },
    { maxTaskRetries: 1.5 },
    { lifetime: "detached", detached: false },
    { numReturns: 2 },
  ]) {
    assert.throws(() => Counter.options(bad), undefined, JSON.stringify(bad));
  }
  assert.throws(() => actor(class X {}, { getIfExists: true }), TypeError);
});
