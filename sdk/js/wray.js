// wray JavaScript guest SDK: remote functions, actors and drivers as
// WebAssembly components of `wray:runtime` (wit/runtime.wit), built with
// componentize-js (`node sdk/js/build.mjs app.js -o app.wasm`, which exports
// only the parts the app has: functions, actors, driver).
//
// The API mirrors the Python SDK (sdk/python/wray):
//
//   import { remote, actor, get, main } from "wray";
//   export const add = remote((a, b) => a + b, { name: "add" });
//   export const Counter = actor(class Counter { ... });
//   main((args) => console.log(get(add.remote(1, 2))));
//
// Layout of this one file (componentize-js takes one module graph; the SDK
// is one module so that the build only has to copy it beside the app):
//   ids        task/object ids as the WIT records (u64 = BigInt) and as hex
//   errors     TaskError, and a JS exception as a WIT task-error
//   refs       ObjectRef and the instance's reference counts
//   codec      JSON with `$object` / `$actor` refs, raw bytes
//   host       thin wrappers over the WIT imports
//   api        remote / actor / fn / actorClass / get / put / wait / ...
//   exports    metadata, functions, actors, lifecycle, driver
//   snapshot   the bindings' realm made ready before the build's snapshot

import {
  put as hostPut,
  get as hostGet,
  wait as hostWait,
  release as hostRelease,
} from "wray:runtime/objects@0.1.0";
import { putBytes as hostPutBytes } from "wray:runtime/mapping@0.1.0";
import {
  cancel as hostCancel,
  killActor as hostKillActor,
  submit as hostSubmit,
  createActor as hostCreateActor,
  submitTo as hostSubmitTo,
  createActorOf as hostCreateActorOf,
  createActorWith as hostCreateActorWith,
  getActor as hostGetActor,
  callActor as hostCallActor,
} from "wray:runtime/tasks@0.1.0";
import {
  taskId as hostTaskId,
  currentActor as hostCurrentActor,
  nodeId as hostNodeId,
  log as hostLog,
  getGpuIds as hostGetGpuIds,
  getResourceIds as hostGetResourceIds,
  profileBegin as hostProfileBegin,
  profileEnd as hostProfileEnd,
} from "wray:runtime/runtime@0.1.0";

export const VERSION = "0.1.0";
export const SDK = `wray-js ${VERSION}`;

// -- ids ----------------------------------------------------------------------

const U64 = (1n << 64n) - 1n;

function hex64(v) {
  return (BigInt(v) & U64).toString(16).padStart(16, "0");
}

/** A task id `{hi, lo}` (BigInts) as 32 hex digits. */
export function taskHex(t) {
  return hex64(t.hi) + hex64(t.lo);
}

/** An object id `{task, index}` as 40 hex digits. */
export function objectHex(o) {
  return taskHex(o.task) + (o.index >>> 0).toString(16).padStart(8, "0");
}

const HEX32 = /^[0-9a-fA-F]{32}$/;
const HEX40 = /^[0-9a-fA-F]{40}$/;

export function parseTaskHex(text) {
  if (typeof text !== "string" || !HEX32.test(text)) {
    throw new TypeError(`an actor or task id must be 32 hex digits, got ${JSON.stringify(text)}`);
  }
  return { hi: BigInt("0x" + text.slice(0, 16)), lo: BigInt("0x" + text.slice(16, 32)) };
}

export function parseObjectHex(text) {
  if (typeof text !== "string" || !HEX40.test(text)) {
    throw new TypeError(`an object id must be 40 hex digits, got ${JSON.stringify(text)}`);
  }
  return {
    task: { hi: BigInt("0x" + text.slice(0, 16)), lo: BigInt("0x" + text.slice(16, 32)) },
    index: parseInt(text.slice(32), 16) >>> 0,
  };
}

/** The object standing for an actor's handles: return 1 of its creation task. */
function actorHandleObject(actor) {
  return { task: { hi: actor.hi, lo: actor.lo }, index: 1 };
}

// -- errors -------------------------------------------------------------------

/** The WIT `error-kind` names. */
export const ERROR_KINDS = [
  "application",
  "panic",
  "trap",
  "out-of-memory",
  "timeout",
  "invalid-argument",
  "not-found",
  "actor-died",
  "system",
  "infeasible",
  "cancelled",
];

/**
 * A failed task (Ray's RayTaskError), thrown by `get` on its result or on
 * anything that depends on it. `kind` is a WIT error-kind name, `function`
 * the function (`name`, `Class.method`) that failed, `task` its id (32 hex
 * digits), `message` the guest's or host's message.
 *
 * A task that fails with a TaskError it got from `get` uncaught (or an
 * Error whose `cause` chain holds one) fails with an `application` error of
 * its own whose `causes` start with that error, as Ray's RayTaskError keeps
 * its cause: `causes` lists them nearest first, `root` is the last.
 */
export class TaskError extends Error {
  constructor(kind, fn, task, message, causes = []) {
    super(`task ${task} (${fn}) failed: ${kind}: ${message}`);
    this.name = "TaskError";
    this.kind = kind;
    this.function = fn;
    this.task = task;
    this.taskMessage = message;
    this.causes = causes;
  }
  /** The error that started the chain: the last cause, or this one. */
  get root() {
    return this.causes.length ? this.causes[this.causes.length - 1] : this;
  }
  toString() {
    return this.message;
  }
}

function currentTask() {
  try {
    return hostTaskId();
  } catch (_) {
    return { hi: 0n, lo: 0n };
  }
}

/** A WIT task-error raised by this guest in the running task, passing
 * `cause` (a TaskError) on: it is named first among the causes, then its
 * own. */
function witError(kind, fn, message, cause = null) {
  const causes = cause ? [cause, ...cause.causes].map(witCause) : [];
  return { kind, function: fn, task: currentTask(), message: String(message), causes };
}

/** A TaskError raised by this guest in the running task (the SDK's own,
 * e.g. `invalid-argument`): it leaves the export as it is. */
function raising(kind, fn, message) {
  const e = new TaskError(kind, fn, taskHex(currentTask()), message);
  e.raisedHere = true;
  return e;
}

function fromWitError(e) {
  const causes = (e.causes || []).map(fromWitError);
  return new TaskError(e.kind, e.function, taskHex(e.task), e.message, causes);
}

/** A TaskError as a WIT error-cause. */
function witCause(e) {
  let task;
  try {
    task = parseTaskHex(e.task);
  } catch (_) {
    task = currentTask();
  }
  const kind = ERROR_KINDS.includes(e.kind) ? e.kind : "application";
  return { kind, function: String(e.function), task, message: String(e.taskMessage) };
}

/** The TaskError `e` passes on: itself, or the first in its `cause` chain. */
function passedOn(e) {
  const seen = new Set();
  while (e && typeof e === "object" && !seen.has(e)) {
    if (e instanceof TaskError) return e;
    seen.add(e);
    e = e.cause;
  }
  return null;
}

/** The error payload a WIT import threw (componentize-js throws an Error
 * whose `payload` is the `err` value). */
function importErr(e) {
  if (e && typeof e === "object" && "payload" in e) return e.payload;
  return e;
}

/** SpiderMonkey's stack less the SDK's own frames (wray.js, and the
 * bindings' initializer.js below them); all of it if nothing is left. */
const SDK_FRAME = /@(?:[^\n]*\/)?(?:wray\.js|initializer\.js):\d+/;

function userStack(stack) {
  const lines = stack.trimEnd().split("\n");
  const kept = lines.filter((l) => !SDK_FRAME.test(l));
  return (kept.length ? kept : lines).join("\n");
}

/** `Type: message`, then the stack (SpiderMonkey's `fn@file:line:col`). */
export function formatException(e) {
  if (e instanceof Error) {
    const head = e.message ? `${e.name}: ${e.message}` : e.name;
    const stack = typeof e.stack === "string" ? userStack(e.stack) : "";
    return stack ? `${head}\n\n${stack}` : head;
  }
  try {
    return `uncaught ${typeof e}: ${typeof e === "string" ? e : JSON.stringify(e)}`;
  } catch (_) {
    return `uncaught ${typeof e}: ${String(e)}`;
  }
}

/** What an export throws to return `err(value)`: componentize-js lowers
 * `payload` of a thrown object as the err value. */
class ExportErr {
  constructor(payload) {
    this.payload = payload;
  }
}

// -- refs ---------------------------------------------------------------------

/** Live ObjectRefs (and actor handles) per object id (hex) in this instance. */
const counts = new Map();
/** Ids whose last ref died, not released at the host yet. */
const pending = [];
/** Objects kept alive until the host has taken over the value holding them. */
let deferred = [];

const registry =
  typeof FinalizationRegistry === "function"
    ? new FinalizationRegistry((key) => releaseKey(key))
    : null;

function acquire(key, id) {
  const c = counts.get(key);
  if (c) c.n += 1;
  else counts.set(key, { id, n: 1 });
}

function releaseKey(key) {
  const c = counts.get(key);
  if (!c) return;
  if (c.n > 1) {
    c.n -= 1;
    return;
  }
  counts.delete(key);
  pending.push(c.id);
}

/** Tells the host, in one `objects.release`, of the ids whose last ref died.
 * Finalizers only queue (they may run anywhere); the SDK flushes at its
 * next host call and at the start and end of each export. */
function flushReleases() {
  if (pending.length === 0) return;
  const ids = pending.filter((id) => !counts.has(objectHex(id)));
  pending.length = 0;
  if (ids.length) {
    try {
      hostRelease(ids);
    } catch (_) {
      // A failed release must not fail the task.
    }
  }
}

/**
 * A reference to an immutable object: a task's return value or a value
 * stored with `put` (Ray's ObjectRef). Passing one to `.remote(..)` makes
 * the task depend on it (it receives the value); inside a value it travels
 * as a reference, `{"$object": "<40 hex digits>"}`.
 */
export class ObjectRef {
  constructor(id) {
    this._id = { task: { hi: BigInt(id.task.hi), lo: BigInt(id.task.lo) }, index: id.index >>> 0 };
    this._key = objectHex(this._id);
    acquire(this._key, this._id);
    if (registry) registry.register(this, this._key, this);
  }
  static fromHex(text) {
    return new ObjectRef(parseObjectHex(text));
  }
  /** The object's id, 40 hex digits. */
  hex() {
    return this._key;
  }
  /** The id of the task that made the object, 32 hex digits. */
  taskId() {
    return this._key.slice(0, 32);
  }
  /** Same as `get(this, opts)`. */
  get(opts) {
    return get(this, opts);
  }
  /** Drops this ref's hold now (instead of when it is garbage-collected). */
  release() {
    if (this._released) return;
    this._released = true;
    if (registry) registry.unregister(this);
    releaseKey(this._key);
  }
  toString() {
    return `ObjectRef(${this._key})`;
  }
}

// -- codec --------------------------------------------------------------------

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });
const BIGINT_MARK = "\u0000wray-bigint:";
const BIGINT_RE = /"\\u0000wray-bigint:(-?\d+)"/g;

/**
 * `value` as JSON text (UTF-8 bytes), with the refs inside collected:
 * `{data, refs, holders}`. ObjectRefs and ActorHandles are written in their
 * `$object` / `$actor` forms, Uint8Arrays and other typed arrays as arrays,
 * Maps as objects, Sets as arrays, BigInts as JSON integers. `undefined`
 * at the top is `null`.
 */
export function encodeJson(value) {
  // A plain scalar (most arguments and results) holds no ref: written
  // without the replacer, exactly as JSON.stringify writes it with one.
  const kind = typeof value;
  if (value === null || kind === "boolean" || kind === "string" || (kind === "number" && Number.isFinite(value))) {
    return { data: encoder.encode(JSON.stringify(value)), refs: [], holders: [] };
  }
  const refs = [];
  const seen = new Set();
  const holders = [];
  let hasBig = false;
  function replacer(_k, v) {
    if (v === null || typeof v !== "object") {
      if (typeof v === "bigint") {
        hasBig = true;
        return BIGINT_MARK + v.toString();
      }
      if (typeof v === "number" && !Number.isFinite(v)) {
        throw new TypeError(`${v} is not a JSON number`);
      }
      return v;
    }
    if (v instanceof ObjectRef) {
      if (!seen.has(v._key)) {
        seen.add(v._key);
        refs.push(v._id);
      }
      holders.push(v);
      return { $object: v._key };
    }
    const actorForm = v[ACTOR_JSON];
    if (typeof actorForm === "function") {
      const [form, id, holder] = actorForm.call(v);
      const key = objectHex(id);
      if (!seen.has(key)) {
        seen.add(key);
        refs.push(id);
      }
      holders.push(holder);
      return form;
    }
    if (ArrayBuffer.isView(v) && !(v instanceof DataView)) return Array.from(v, (x) => (typeof x === "bigint" ? (hasBig = true, BIGINT_MARK + x) : x));
    if (v instanceof ArrayBuffer) return Array.from(new Uint8Array(v));
    if (v instanceof Map) return Object.fromEntries(v);
    if (v instanceof Set) return Array.from(v);
    return v;
  }
  let text = JSON.stringify(value === undefined ? null : value, replacer);
  if (text === undefined) text = "null";
  if (hasBig) text = text.replace(BIGINT_RE, "$1");
  return { data: encoder.encode(text), refs, holders };
}

/** The value of JSON bytes, refs and actor handles made live. */
export function decodeJson(data) {
  const text = typeof data === "string" ? data : decoder.decode(data);
  // Only an object whose one key is "$object" or "$actor" changes: text
  // with no `"$` and no `\u` escape (which could spell the `$`) has none,
  // so it is parsed without the reviver, which is called once per value.
  if (!text.includes('"$') && !text.includes("\\u")) return JSON.parse(text);
  return JSON.parse(text, (_k, v) => {
    if (v !== null && typeof v === "object" && !Array.isArray(v)) {
      const keys = Object.keys(v);
      if (keys.length === 1) {
        if (keys[0] === "$object" && typeof v.$object === "string") {
          return new ObjectRef(parseObjectHex(v.$object));
        }
        if (keys[0] === "$actor" && typeof v.$actor === "string") {
          return new ActorHandle(parseTaskHex(v.$actor), null);
        }
      }
    }
    return v;
  });
}

function isBytes(v) {
  return v instanceof Uint8Array;
}

/** The value of a WIT payload (`what` names it in errors). */
function decodePayload(p, what, fn) {
  if (p.codec === "json") {
    try {
      return decodeJson(p.data);
    } catch (e) {
      throw raising("invalid-argument", fn, `${what} is not valid JSON: ${e && e.message}`);
    }
  }
  if (p.codec === "raw") return new Uint8Array(p.data);
  throw raising(
    "invalid-argument",
    fn,
    `${what} is ${p.codec}: the JavaScript SDK reads json and raw values ` +
      "(an rkyv value is a Rust task's own; ask it for json results)",
  );
}

// -- host ---------------------------------------------------------------------

/** From this size `put` hands a value to `mapping.put-bytes` (the host's
 * INLINE_MAX, 100 KiB). */
const INLINE_MAX = 100 << 10;

function optF64(v) {
  return v === undefined || v === null ? undefined : Number(v);
}

function optU64(v) {
  return v === undefined || v === null ? undefined : BigInt(v);
}

function resourceRequest(o) {
  const custom = Object.entries(o.resources || {}).map(([k, v]) => [String(k), Number(v)]);
  return { numCpus: optF64(o.numCpus), numGpus: optF64(o.numGpus), memory: optU64(o.memory), custom };
}

function limits(o) {
  return { maxMemory: optU64(o.maxMemory), timeoutMs: optU64(o.timeoutMs), fuel: optU64(o.fuel) };
}

function taskOptions(numReturns, o = {}) {
  return {
    numReturns,
    resources: resourceRequest(o),
    limits: limits(o),
    resultCodec: "json",
    detached: !!o.detached,
  };
}

function encodeArgs(label, values, rawBytes) {
  return values.map((v, i) => {
    if (v instanceof ObjectRef) return { tag: "object", val: v._id };
    if (rawBytes && isBytes(v)) return { tag: "value", val: { codec: "raw", data: v, refs: [] } };
    let enc;
    try {
      enc = encodeJson(v);
    } catch (e) {
      throw new TypeError(`argument ${i} of ${label} cannot be sent as JSON: ${e && e.message}`);
    }
    return { tag: "value", val: { codec: "json", data: enc.data, refs: enc.refs } };
  });
}

function returns(ids, numReturns) {
  const refs = ids.map((id) => new ObjectRef(id));
  if (refs.length < numReturns) {
    const first = ids[0] || { task: { hi: 0n, lo: 0n }, index: 0 };
    for (let i = refs.length; i < numReturns; i++) {
      refs.push(new ObjectRef({ task: first.task, index: i + 1 }));
    }
  }
  return numReturns === 1 ? refs[0] : refs.slice(0, numReturns);
}

function millis(opts) {
  const t = opts && opts.timeout;
  if (t === undefined || t === null || t === Infinity) return undefined;
  if (typeof t !== "number" || Number.isNaN(t) || t < 0) {
    throw new RangeError(`timeout must be a number of seconds >= 0, got ${t}`);
  }
  return BigInt(Math.ceil(t * 1000));
}

// -- options ------------------------------------------------------------------

const RESOURCE_OPTIONS = ["numCpus", "numGpus", "memory", "resources", "maxMemory", "timeoutMs", "fuel"];
/** What an actor's creation says beside its resources and limits (never
 * declared to the host): its lifetime and restart policy. */
const LIFE_OPTIONS = ["detached", "lifetime", "maxRestarts", "maxTaskRetries"];
/** `.options({...})` of an actor class: the above, the actor's name, and
 * whether to take the actor already holding it (Ray's `get_if_exists`). */
const ACTOR_OPTIONS = RESOURCE_OPTIONS.concat(LIFE_OPTIONS, ["name", "getIfExists"]);

/** `maxRestarts` / `maxTaskRetries` travel as WIT u32s; -1 (Ray's "no
 * limit") is the largest. */
const U32_MAX = 4294967295;
/** The longest actor name, in UTF-8 bytes (the actor directory's). */
export const MAX_ACTOR_NAME_BYTES = 128;

/**
 * `name` if the actor directory takes it (the WIT's rule for
 * `actor-options.name`): 1 to 128 bytes of UTF-8, no `/`, `@` or control
 * character, not `.` or `..`; else a RangeError (a TypeError for a
 * non-string) saying why.
 */
export function checkActorName(where, name) {
  if (typeof name !== "string") throw new TypeError(`${where}: an actor name is a string, got ${typeof name}`);
  const size = encoder.encode(name).length;
  let why = null;
  if (size === 0) why = "it is empty";
  else if (size > MAX_ACTOR_NAME_BYTES) why = `it is ${size} bytes long, over ${MAX_ACTOR_NAME_BYTES}`;
  else if (name.includes("/")) why = "it contains `/`";
  else if (name.includes("@")) why = "it contains `@`";
  else if (/[\u0000-\u001f\u007f-\u009f]/.test(name)) why = "it contains a control character";
  else if (name === "." || name === "..") why = "it is `.` or `..`";
  else if (/[\ud800-\udfff]/u.test(name)) why = "it is not valid UTF-8 (a lone surrogate)";
  if (why === null) return name;
  throw new RangeError(`${where}: actor name ${JSON.stringify(name.slice(0, MAX_ACTOR_NAME_BYTES))} is refused: ${why}`);
}

function checkOptions(where, opts, allowed) {
  const out = {};
  for (const [k, v] of Object.entries(opts || {})) {
    if (!allowed.includes(k)) {
      throw new TypeError(`${where}: unknown option ${k} (allowed: ${allowed.join(", ")})`);
    }
    if (v !== undefined && v !== null) out[k] = v;
  }
  if (out.numReturns !== undefined && !(Number.isInteger(out.numReturns) && out.numReturns >= 1)) {
    throw new RangeError(`${where}: numReturns must be an integer >= 1, got ${out.numReturns}`);
  }
  for (const k of ["maxRestarts", "maxTaskRetries"]) {
    if (out[k] === undefined) continue;
    if (!Number.isInteger(out[k]) || out[k] < -1 || out[k] > U32_MAX) {
      throw new RangeError(`${where}: ${k} must be an integer from -1 (no limit) to ${U32_MAX}, got ${out[k]}`);
    }
    if (out[k] === -1) out[k] = U32_MAX;
  }
  if (out.lifetime !== undefined) {
    if (out.lifetime !== "detached" && out.lifetime !== "non_detached") {
      throw new RangeError(`${where}: lifetime must be "detached" or "non_detached", got ${JSON.stringify(out.lifetime)}`);
    }
    const detached = out.lifetime === "detached";
    delete out.lifetime;
    if (out.detached !== undefined && !!out.detached !== detached) {
      throw new RangeError(`${where}: lifetime and detached disagree`);
    }
    out.detached = detached;
  }
  if (out.detached !== undefined) out.detached = !!out.detached;
  if (out.getIfExists !== undefined) out.getIfExists = !!out.getIfExists;
  return out;
}

// -- signatures ---------------------------------------------------------------

/** The parameter list of a function's source text (names only; a
 * destructured or rest parameter is `argN`). */
function paramNamesFromSource(src, wanted) {
  let i = src.indexOf("(");
  const arrow = src.indexOf("=>");
  if (arrow >= 0 && (i < 0 || arrow < i)) {
    // `x => ...`
    const name = src.slice(0, arrow).replace(/^\s*async\s+/, "").trim();
    return /^[A-Za-z_$][\w$]*$/.test(name) ? [name] : null;
  }
  if (i < 0) return null;
  let depth = 0;
  let start = i + 1;
  const parts = [];
  for (let j = i; j < src.length; j++) {
    const c = src[j];
    if (c === "(" || c === "[" || c === "{") depth++;
    else if (c === ")" || c === "]" || c === "}") {
      depth--;
      if (depth === 0) {
        parts.push(src.slice(start, j));
        break;
      }
    } else if (c === "," && depth === 1) {
      parts.push(src.slice(start, j));
      start = j + 1;
    }
  }
  const names = parts
    .map((p) => p.replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "").trim())
    .filter((p) => p.length > 0)
    .map((p, n) => {
      const m = /^([A-Za-z_$][\w$]*)\s*(=|$)/.exec(p);
      return m ? m[1] : `arg${n}`;
    });
  return names.length >= wanted ? names : null;
}

function schemaText(s) {
  if (s === undefined || s === null) return "{}";
  return typeof s === "string" ? s : JSON.stringify(s);
}

/** `[{name, schema}]` from a declared `params` or the function's source. */
function paramsOf(fn, declared, label, src) {
  if (declared !== undefined) {
    if (!Array.isArray(declared)) throw new TypeError(`${label}: params must be an array`);
    return declared.map((p, n) =>
      typeof p === "string"
        ? { name: p, schema: "{}" }
        : { name: String(p.name ?? `arg${n}`), schema: schemaText(p.schema) },
    );
  }
  const n = fn ? fn.length : 0;
  let names = null;
  try {
    names = paramNamesFromSource(src !== undefined ? src : Function.prototype.toString.call(fn), n);
  } catch (_) {
    names = null;
  }
  if (!names) names = Array.from({ length: n }, (_, k) => `arg${k}`);
  return names.map((name) => ({ name, schema: "{}" }));
}

function returnsOf(declared, numReturns, label) {
  if (declared === undefined) return Array.from({ length: numReturns }, () => "{}");
  if (numReturns === 1) return [schemaText(declared)];
  if (!Array.isArray(declared) || declared.length !== numReturns) {
    throw new TypeError(`${label}: returns must be an array of ${numReturns} schemas`);
  }
  return declared.map(schemaText);
}

/** The source of a class's constructor (its parameter list). */
function constructorSource(Class) {
  const src = Function.prototype.toString.call(Class);
  const m = /\bconstructor\s*\(/.exec(src);
  if (!m) return "()";
  return src.slice(m.index + "constructor".length);
}

// -- the component's tables ---------------------------------------------------

/** Remote functions of this component, by name. */
const functions = new Map();
/** Actor classes of this component, by name. */
const actorClasses = new Map();
let mainFunction = null;

function checkNameFree(name, what) {
  if (functions.has(name) || actorClasses.has(name)) {
    throw new Error(
      `wray: ${what} ${name} is already defined in this component ` +
        "(remote functions and actor classes are found by name)",
    );
  }
}

// -- remote functions ---------------------------------------------------------

function makeRemoteFunction(entry, callOptions) {
  const f = function (...args) {
    return entry.fn.apply(this, args);
  };
  Object.defineProperty(f, "name", { value: entry.name });
  f.wrayName = entry.name;
  f.numReturns = entry.numReturns;
  /** Submits a task running this function; its ObjectRef (an array of
   * refs for numReturns > 1). */
  f.remote = (...args) => {
    flushReleases();
    const wargs = encodeArgs(entry.name, args, true);
    const ids = hostSubmit(entry.name, wargs, taskOptions(entry.numReturns, callOptions));
    return returns(ids, entry.numReturns);
  };
  /** A copy submitting with per-call resources and limits. */
  f.options = (opts) => {
    const o = checkOptions(`${entry.name}.options`, opts, RESOURCE_OPTIONS.concat(["numReturns"]));
    if (o.numReturns !== undefined && o.numReturns !== entry.numReturns) {
      throw new RangeError(
        `${entry.name}.options: numReturns=${o.numReturns}, but ${entry.name} declares numReturns=${entry.numReturns}`,
      );
    }
    delete o.numReturns;
    return makeRemoteFunction(entry, Object.assign({}, callOptions, o));
  };
  return f;
}

/**
 * Makes `fn` a remote function of this component: returns a function that
 * still runs it locally, with `.remote(...args)` (submits a task, returns an
 * ObjectRef) and `.options({...})`. Options: `name` (default `fn.name`),
 * `numReturns`, `params: [{name, schema}]` (JSON Schemas; default `{}` and
 * names from the source), `returns` (a schema, an array of them for
 * numReturns > 1), `numCpus`, `numGpus`, `memory`, `resources`, `maxMemory`,
 * `timeoutMs`, `fuel`, `reuse`.
 */
export function remote(fn, opts = {}) {
  if (typeof fn !== "function") throw new TypeError("wray.remote: expected a function");
  if (isClass(fn)) return actor(fn, opts);
  const o = checkOptions(
    "wray.remote",
    opts,
    RESOURCE_OPTIONS.concat(["name", "numReturns", "params", "returns", "reuse"]),
  );
  const name = o.name || fn.name;
  if (!name) throw new TypeError("wray.remote: an anonymous function needs {name: ...}");
  checkNameFree(name, "remote function");
  const numReturns = o.numReturns || 1;
  const entry = {
    name,
    fn,
    numReturns,
    params: paramsOf(fn, o.params, name),
    returns: returnsOf(o.returns, numReturns, name),
    declared: o,
    reuse: !!o.reuse,
  };
  functions.set(name, entry);
  return makeRemoteFunction(entry, {});
}

function isClass(fn) {
  try {
    return /^class[\s{]/.test(Function.prototype.toString.call(fn));
  } catch (_) {
    return false;
  }
}

function splitQualified(q, what) {
  if (typeof q !== "string" || !q) throw new TypeError(`wray.${what}: expected 'component/name', got ${q}`);
  const i = q.lastIndexOf("/");
  if (i < 0) return [null, q];
  const component = q.slice(0, i);
  const name = q.slice(i + 1);
  if (!component || !name) throw new TypeError(`wray.${what}: expected 'component/name', got ${q}`);
  return [component, name];
}

/**
 * A remote function of another deployed component (any language), by
 * `"component/function"` (a plain `"function"`: one of this component),
 * submitted with `tasks.submit-to`. Arguments go as JSON (ObjectRefs as
 * dependencies), results come back as JSON. Options: `numReturns` and the
 * resource options.
 */
export function fn(qualified, opts = {}) {
  const [component, name] = splitQualified(qualified, "fn");
  const o = checkOptions(`wray.fn(${qualified})`, opts, RESOURCE_OPTIONS.concat(["numReturns"]));
  const numReturns = o.numReturns || 1;
  delete o.numReturns;
  return {
    qualified,
    numReturns,
    remote(...args) {
      flushReleases();
      const wargs = encodeArgs(qualified, args, false);
      const topts = taskOptions(numReturns, o);
      const ids =
        component === null ? hostSubmit(name, wargs, topts) : hostSubmitTo(component, name, wargs, topts);
      return returns(ids, numReturns);
    },
    options(more) {
      return fn(qualified, Object.assign({ numReturns }, o, more));
    },
    toString() {
      return `<wray.fn ${qualified}>`;
    },
  };
}

// -- actors -------------------------------------------------------------------

const ACTOR_JSON = Symbol("wray.actorJson");
const NOT_METHODS = new Set(["then", "toJSON", "constructor", "inspect", "valueOf", "toString"]);

/**
 * A handle to a live actor: `handle.method.remote(...args)` submits a call
 * (calls on one actor run one at a time, in order) and returns an ObjectRef;
 * `handle.method.options({numReturns})` a copy. A handle is a value: pass
 * it to other tasks (`{"$actor": "<32 hex digits>"}`).
 */
export class ActorHandle {
  constructor(actor, cls) {
    this._actor = { hi: BigInt(actor.hi), lo: BigInt(actor.lo) };
    this._hold = new ObjectRef(actorHandleObject(this._actor));
    this._class = cls;
    return new Proxy(this, {
      get(target, prop, receiver) {
        if (typeof prop === "symbol" || prop in target || prop.startsWith("_") || NOT_METHODS.has(prop)) {
          return Reflect.get(target, prop, receiver);
        }
        return target._method(prop);
      },
    });
  }
  static fromHex(text) {
    return new ActorHandle(parseTaskHex(text), null);
  }
  /** The actor's id, 32 hex digits. */
  hex() {
    return taskHex(this._actor);
  }
  _method(name, numReturns) {
    const cls = this._class;
    let info = null;
    if (cls) {
      info = cls.methods.get(name);
      if (!info) throw new TypeError(`actor class ${cls.name} has no remote method ${name}`);
    }
    const label = `${cls ? cls.name : "actor"}.${name}`;
    const n = numReturns || (info ? info.numReturns : 1);
    const handle = this;
    return {
      remote(...args) {
        flushReleases();
        const wargs = encodeArgs(label, args, info !== null);
        const ids = hostCallActor(handle._actor, name, wargs, taskOptions(n));
        return returns(ids, n);
      },
      options(opts) {
        const o = checkOptions(`${label}.options`, opts, ["numReturns"]);
        return handle._method(name, o.numReturns || n);
      },
    };
  }
  [ACTOR_JSON]() {
    return [{ $actor: this.hex() }, actorHandleObject(this._actor), this._hold];
  }
  toString() {
    return `ActorHandle(${this._class ? this._class.name : "actor"}, ${this.hex()})`;
  }
}

/** The remote methods of a class: its public prototype methods. */
function methodsOf(Class, declared) {
  const names = new Set();
  for (let p = Class.prototype; p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    for (const name of Object.getOwnPropertyNames(p)) {
      if (name === "constructor" || name.startsWith("_")) continue;
      const d = Object.getOwnPropertyDescriptor(p, name);
      if (d && typeof d.value === "function") names.add(name);
    }
  }
  const methods = new Map();
  for (const name of [...names].sort()) {
    const m = (declared && declared[name]) || {};
    const label = `${Class.name}.${name}`;
    const o = checkOptions(`${label} (methods option)`, m, ["numReturns", "params", "returns"]);
    const numReturns = o.numReturns || 1;
    const f = Class.prototype[name];
    methods.set(name, {
      name,
      numReturns,
      params: paramsOf(f, o.params, label),
      returns: returnsOf(o.returns, numReturns, label),
    });
  }
  return methods;
}

/** `o` (checked options) for a class's `.options(..)`: its name checked. */
function actorOptionsOf(where, opts, base) {
  const o = checkOptions(where, opts, ACTOR_OPTIONS);
  if (o.name !== undefined) checkActorName(where, o.name);
  return Object.assign({}, base, o);
}

/** The WIT `actor-options` of `o` (`name`, `maxRestarts`,
 * `maxTaskRetries`), or null when it sets none of them. */
function witActorOptions(o) {
  const maxRestarts = o.maxRestarts || 0;
  const maxTaskRetries = o.maxTaskRetries || 0;
  if (o.name === undefined && maxRestarts === 0 && maxTaskRetries === 0) return null;
  return { name: o.name, maxRestarts, maxTaskRetries };
}

/** The live actor named `name` of class `cls` (any class when empty), now
 * held by this task: `[id, null]`; else `[null, TaskError]` (`not-found`:
 * no live actor has the name; `invalid-argument`: one of another class
 * has it). */
function named(name, cls) {
  flushReleases();
  try {
    return [hostGetActor(name, cls), null];
  } catch (e) {
    const err = importErr(e);
    if (err && typeof err === "object" && "kind" in err) return [null, fromWitError(err)];
    throw e;
  }
}

function sameActor(a, b) {
  return BigInt(a.hi) === BigInt(b.hi) && BigInt(a.lo) === BigInt(b.lo);
}

/** The error of a creation whose name another actor holds, or of a lookup
 * the directory could not answer (that TaskError itself). */
function nameTaken(label, name, holder, err) {
  if (err && err.kind !== "not-found" && err.kind !== "invalid-argument") return err;
  const why = holder ? `it is held by live actor ${holder}` : err ? err.taskMessage : "it is held";
  return new Error(
    `${label}.options({name: ${JSON.stringify(name)}}): the name is taken: ${why}; a name is held ` +
      `until its actor dies: reach that actor with getActor(${JSON.stringify(name)}), or pass getIfExists: true`,
  );
}

/**
 * Creates an actor of `cls` (of `component`; null: this one) with checked
 * options `o`; its handle (of class entry `entry`, null: untyped). A named
 * actor's name is read back once the host has given it out (before
 * `create-actor-with` returns): held by another actor, the new one is dead
 * already (the host kills an actor that cannot take its name), and this
 * throws an Error naming the holder, or returns the holder with
 * `getIfExists`.
 */
function createActor(component, cls, wargs, o, entry) {
  const label = component === null ? cls : `${component}/${cls}`;
  const name = o.name;
  const getIfExists = name !== undefined && !!o.getIfExists;
  if (getIfExists) {
    const [held, err] = named(name, cls);
    if (held) return new ActorHandle(held, entry);
    if (err.kind !== "not-found") throw nameTaken(label, name, null, err);
  }
  flushReleases();
  const topts = taskOptions(1, o);
  const life = witActorOptions(o);
  let a;
  if (life) a = hostCreateActorWith(component === null ? undefined : component, cls, wargs, topts, life);
  else if (component === null) a = hostCreateActor(cls, wargs, topts);
  else a = hostCreateActorOf(component, cls, wargs, topts);
  const handle = new ActorHandle(a, entry);
  if (name === undefined) return handle;
  const [held, err] = named(name, cls);
  if (!held) {
    if (err.kind === "invalid-argument") throw nameTaken(label, name, null, err);
    // Not found: the new actor died before its name could be read (its
    // calls say why); or the directory cannot be read now.
    return handle;
  }
  if (sameActor(held, a)) return handle;
  const holder = new ActorHandle(held, entry);
  if (getIfExists) return holder;
  // Neither is kept: the new actor is dead, the holder was only looked up.
  handle._hold.release();
  holder._hold.release();
  throw nameTaken(label, name, holder.hex(), null);
}

function makeActorClass(entry, callOptions) {
  return {
    name: entry.name,
    cls: entry.cls,
    /** Creates an actor: its constructor runs with `args` as the actor's
     * first task. Returns its handle at once (see `options` for a name). */
    remote(...args) {
      flushReleases();
      const wargs = encodeArgs(`${entry.name}.constructor`, args, true);
      return createActor(null, entry.name, wargs, callOptions, entry);
    },
    /**
     * A copy creating actors with `opts` (Ray's `Cls.options(...)`):
     * `numCpus`, `numGpus`, `memory`, `resources` (held for the actor's
     * lifetime), `maxMemory`, `timeoutMs`, `fuel` (limits of each call);
     * `name` (unique in the cluster while the actor lives, found by
     * `getActor`; a name a live actor holds makes `.remote()` throw naming
     * it, unless `getIfExists: true`, which returns the holder);
     * `lifetime: "detached"` (or `detached: true`: it lives until killed);
     * `maxRestarts`, `maxTaskRetries` (restarts on another node after its
     * node died, and reruns of the call lost then; -1: no limit).
     */
    options(opts) {
      return makeActorClass(entry, actorOptionsOf(`${entry.name}.options`, opts, callOptions));
    },
    toString() {
      return `<wray.actor ${entry.name}>`;
    },
  };
}

/**
 * Makes `Class` an actor class of this component: returns
 * `{remote(...args), options({...}), cls}`. Remote methods are its public
 * prototype methods (not starting with `_`). Options: `name` (the class's
 * name; default `Class.name`), `params` (the constructor's `[{name,
 * schema}]`), `methods: {name: {numReturns, params, returns}}`, the
 * resource options (held for the actor's lifetime), and `lifetime` (or
 * `detached`), `maxRestarts`, `maxTaskRetries` for every actor of the
 * class unless `.options({...})` says otherwise.
 */
export function actor(Class, opts = {}) {
  if (typeof Class !== "function") throw new TypeError("wray.actor: expected a class");
  const o = checkOptions(
    "wray.actor",
    opts,
    RESOURCE_OPTIONS.concat(["name", "params", "methods"], LIFE_OPTIONS),
  );
  const name = o.name || Class.name;
  if (!name) throw new TypeError("wray.actor: an anonymous class needs {name: ...}");
  checkNameFree(name, "actor class");
  const entry = {
    name,
    cls: Class,
    params: paramsOf(null, o.params, `${name}.constructor`, constructorSource(Class)),
    methods: methodsOf(Class, o.methods),
    declared: o,
  };
  if (o.params === undefined && Class.length > entry.params.length) {
    entry.params = Array.from({ length: Class.length }, (_, k) => ({ name: `arg${k}`, schema: "{}" }));
  }
  actorClasses.set(name, entry);
  // The lifetime and restart policy are not declared to the host: every
  // creation says them.
  const life = {};
  for (const k of ["detached", "maxRestarts", "maxTaskRetries"]) if (o[k] !== undefined) life[k] = o[k];
  return makeActorClass(entry, life);
}

/**
 * An actor class of another deployed component, `"component/Class"`
 * (`tasks.create-actor-of`, or `tasks.create-actor-with` with a name or a
 * restart policy): `.remote(...args)` creates one; any method name may be
 * called on its handles. Options as an actor class's `.options({...})`.
 */
export function actorClass(qualified, opts = {}) {
  const [component, name] = splitQualified(qualified, "actorClass");
  const o = actorOptionsOf(`wray.actorClass(${qualified})`, opts, {});
  return {
    qualified,
    remote(...args) {
      flushReleases();
      const wargs = encodeArgs(`${qualified}.constructor`, args, false);
      return createActor(component, name, wargs, o, null);
    },
    options(more) {
      return actorClass(qualified, Object.assign({}, o, more));
    },
  };
}

/**
 * The live actor named `name` (Ray's `ray.get_actor`), from any task of
 * any job on any node: a handle whose methods are called as on the
 * creator's (`getActor("keeper").add.remote(1)`). The handle does not own
 * the actor: dropping it does not end a detached one. When the actor's
 * class has the name of one of this component's actor classes, the handle
 * is that class's (methods checked, `numReturns` as declared); otherwise
 * any method may be called.
 *
 * Throws an Error naming `name` (its `kind` is `"not-found"`) when no live
 * actor has it, a RangeError when no actor could have it (see
 * `checkActorName`), and the host's TaskError when the cluster's actor
 * directory cannot be read.
 */
export function getActor(name) {
  checkActorName("wray.getActor", name);
  for (const [cls, entry] of actorClasses) {
    const [held, err] = named(name, cls);
    if (held) return new ActorHandle(held, entry);
    if (err.kind !== "invalid-argument") throw lookupFailed(name, err);
  }
  const [held, err] = named(name, "");
  if (held) return new ActorHandle(held, null);
  throw lookupFailed(name, err);
}

function lookupFailed(name, err) {
  if (err.kind !== "not-found") return err;
  const e = new Error(`wray.getActor(${JSON.stringify(name)}): ${err.taskMessage}`);
  e.kind = "not-found";
  return e;
}

// -- get / put / wait / cancel / kill -----------------------------------------

/**
 * The value of an ObjectRef, or the values of an array of them (in order),
 * blocking until they exist. `opts.timeout` in seconds. Throws TaskError.
 */
export function get(refs, opts) {
  const single = !Array.isArray(refs);
  const list = single ? [refs] : refs;
  for (const r of list) {
    if (!(r instanceof ObjectRef)) throw new TypeError(`wray.get: expected ObjectRefs, got ${r}`);
  }
  if (list.length === 0) return [];
  flushReleases();
  let payloads;
  try {
    payloads = hostGet(
      list.map((r) => r._id),
      millis(opts),
    );
  } catch (e) {
    const err = importErr(e);
    if (err && typeof err === "object" && "kind" in err) throw fromWitError(err);
    throw e;
  }
  const values = payloads.map((p, i) => decodePayload(p, `object ${list[i].hex()}`, "get"));
  return single ? values[0] : values;
}

/** Stores `value` as a new object; its ObjectRef. A Uint8Array is stored
 * raw, anything else as JSON. */
export function put(value) {
  let codec, data, refs;
  if (isBytes(value)) {
    codec = "raw";
    data = value;
    refs = [];
  } else {
    const enc = encodeJson(value);
    codec = "json";
    data = enc.data;
    refs = enc.refs;
  }
  flushReleases();
  const id =
    data.length >= INLINE_MAX ? hostPutBytes(data, codec, refs) : hostPut({ codec, data, refs });
  return new ObjectRef(id);
}

/** Waits until `numReturns` (default 1) of `refs` exist, or `timeout`
 * seconds pass: `[ready, notReady]`. */
export function wait(refs, opts = {}) {
  const numReturns = opts.numReturns === undefined ? 1 : opts.numReturns;
  flushReleases();
  const ready = hostWait(
    refs.map((r) => r._id),
    numReturns >>> 0,
    millis(opts),
  );
  const yes = [];
  const no = [];
  refs.forEach((r, i) => (ready[i] ? yes : no).push(r));
  return [yes, no];
}

/** Cancels the task making `ref` (Ray's cancel). */
export function cancel(ref, opts = {}) {
  return !!hostCancel(ref._id, !!opts.force, !!opts.recursive);
}

/** Kills an actor (Ray's kill). */
export function kill(handle) {
  return !!hostKillActor(handle._actor);
}

/** The running task's id, 32 hex digits. */
export function taskId() {
  return taskHex(hostTaskId());
}

/** The class entry of the actor this instance holds (set before its
 * constructor runs; an instance holds at most one actor). */
let runningClass = null;

/** The id of the actor whose constructor or method is running, 32 hex
 * digits (Ray's `get_runtime_context().get_actor_id()`): the same on every
 * node and after a restart; null in a remote function's task and in a
 * driver. */
export function currentActorId() {
  const actor = hostCurrentActor();
  return actor === undefined || actor === null ? null : taskHex(actor);
}

/** A handle to the running actor, of its class (Ray's
 * `get_runtime_context().current_actor`), to pass to tasks and other
 * actors so that they call it back; null in a remote function's task and
 * in a driver. Made by the actor itself, it does not keep the actor alive.
 * A call through it must not be waited for inside one of the actor's own
 * methods: calls on one actor run one at a time. */
export function currentActor() {
  const actor = hostCurrentActor();
  return actor === undefined || actor === null ? null : new ActorHandle(actor, runningClass);
}

export function nodeId() {
  return hostNodeId();
}

export function getGpuIds() {
  return Array.from(hostGetGpuIds());
}

export function getResourceIds() {
  const out = {};
  for (const r of hostGetResourceIds()) out[r.name] = r.ids.map(([i, f]) => [i, f]);
  return out;
}

const LEVELS = { trace: "trace", debug: "debug", info: "info", warn: "warn", warning: "warn", error: "error" };

/** Writes a line to the host's log. */
export function log(message, level = "info") {
  const l = LEVELS[String(level).toLowerCase()];
  if (!l) throw new RangeError(`unknown log level ${level} (trace, debug, info, warn, error)`);
  hostLog(l, String(message));
}

/** Runs `body` inside a span of the node's timeline. */
export function profile(name, body) {
  const span = hostProfileBegin(String(name));
  try {
    return body();
  } finally {
    hostProfileEnd(span);
  }
}

/** Declares the driver: `fn(args)` runs in `wray run` with the arguments
 * after `--`. A thrown error fails the run with its message. */
export function main(fn) {
  if (typeof fn !== "function") throw new TypeError("wray.main: expected a function");
  mainFunction = fn;
  return fn;
}

// -- exports ------------------------------------------------------------------

function enter() {
  deferred = [];
  flushReleases();
}

function leave() {
  flushReleases();
}

/** Runs `body`; anything it throws becomes `err(task-error)`. */
function guarded(label, body) {
  try {
    return body();
  } catch (e) {
    if (e instanceof ExportErr) throw e;
    if (e instanceof TaskError && e.raisedHere) {
      throw new ExportErr(witError(e.kind, e.function, e.taskMessage));
    }
    let message;
    try {
      message = formatException(e);
    } catch (_) {
      message = "an exception whose message could not be formatted";
    }
    throw new ExportErr(witError("application", label, message, passedOn(e)));
  }
}

function decodeArgs(label, params, args) {
  if (args.length !== params.length) {
    throw raising("invalid-argument", label, `${label} takes ${params.length} argument(s), got ${args.length}`);
  }
  return args.map((arg, i) => {
    let p;
    if (arg.tag === "value") {
      p = arg.val;
    } else {
      // A resolved dependency passed by id: fetch it (its own error passes
      // through unchanged).
      let ps;
      try {
        ps = hostGet([arg.val], undefined);
      } catch (e) {
        throw new ExportErr(importErr(e));
      }
      p = ps[0];
    }
    if (p.codec === "json") {
      try {
        return decodeJson(p.data);
      } catch (e) {
        throw raising("invalid-argument", label, `argument ${i} of \`${label}\` is not valid JSON: ${e && e.message}`);
      }
    }
    if (p.codec === "raw") return new Uint8Array(p.data);
    throw raising("invalid-argument", label, `\`${label}\` reads json arguments, argument ${i} is ${p.codec}`);
  });
}

function encodeResults(label, result, numReturns, resultCodec) {
  let items;
  if (numReturns === 1) items = [result];
  else {
    if (!Array.isArray(result) || result.length !== numReturns) {
      const got = Array.isArray(result) ? `${result.length} values` : typeof result;
      throw raising(
        "application",
        label,
        `${label} declares numReturns=${numReturns} but returned ${got} (return an array of ${numReturns})`,
      );
    }
    items = result;
  }
  return items.map((item, i) => {
    if (resultCodec === "raw" && isBytes(item)) return { codec: "raw", data: item, refs: [] };
    let enc;
    try {
      enc = encodeJson(item);
    } catch (e) {
      const which = numReturns === 1 ? "its result" : `its result ${i}`;
      throw raising("application", label, `${label} returned a value JSON cannot hold (${which}): ${e && e.message}`);
    }
    // The refs inside stay alive until the host has the value.
    deferred.push(...enc.holders);
    return { codec: "json", data: enc.data, refs: enc.refs };
  });
}

function info(kind, name, cls, numReturns, params, returns_, declared, reuse) {
  return {
    kind,
    name,
    class: cls === null ? undefined : cls,
    numReturns,
    params: params.map((p) => ({ name: p.name, schema: p.schema })),
    returns: returns_,
    resources: resourceRequest(declared || {}),
    limits: limits(declared || {}),
    reuse: !!reuse,
  };
}

/** The `function-info` of every remote function, constructor and method. */
export function describeFunctions() {
  const out = [];
  for (const [name, f] of functions) {
    out.push(info("function", name, null, f.numReturns, f.params, f.returns, f.declared, f.reuse));
  }
  for (const [name, c] of actorClasses) {
    // A constructor returns no value (its return object is the handle's).
    out.push(info("actor-constructor", name, name, 1, c.params, [], c.declared, false));
    for (const [mname, m] of c.methods) {
      out.push(info("actor-method", mname, name, m.numReturns, m.params, m.returns, {}, false));
    }
  }
  return out;
}

function callWith(fnc, thisArg, values) {
  const r = fnc.apply(thisArg, values);
  if (r && typeof r.then === "function") {
    throw new TypeError("remote functions and methods must be synchronous (got a Promise); get() blocks instead of await");
  }
  return r;
}

export const metadata = {
  describe() {
    enter();
    try {
      return { functions: describeFunctions(), sdk: SDK };
    } finally {
      leave();
    }
  },
};

export const functionsExport = {
  invoke(name, args, resultCodec) {
    enter();
    try {
      const f = functions.get(name);
      if (!f) throw new ExportErr(witError("not-found", name, `component has no remote function ${name}`));
      return guarded(name, () => {
        const values = decodeArgs(name, f.params, args);
        const result = callWith(f.fn, undefined, values);
        return encodeResults(name, result, f.numReturns, resultCodec);
      });
    } finally {
      leave();
    }
  },
};

class ActorInstance {
  constructor(entry, obj) {
    this._entry = entry;
    this._obj = obj;
  }
  static create(cls, args) {
    enter();
    try {
      const label = `${cls}.constructor`;
      const entry = actorClasses.get(cls);
      if (!entry) throw new ExportErr(witError("not-found", label, `component has no actor class ${cls}`));
      const obj = guarded(label, () => {
        const values = decodeArgs(label, entry.params, args);
        runningClass = entry;
        return new entry.cls(...values);
      });
      return new ActorInstance(entry, obj);
    } finally {
      leave();
    }
  }
  call(method, args, resultCodec) {
    enter();
    try {
      const entry = this._entry;
      const label = `${entry.name}.${method}`;
      const m = entry.methods.get(method);
      if (!m) {
        throw new ExportErr(witError("not-found", label, `actor class ${entry.name} has no method ${method}`));
      }
      return guarded(label, () => {
        const values = decodeArgs(label, m.params, args);
        const result = callWith(this._obj[method], this._obj, values);
        return encodeResults(label, result, m.numReturns, resultCodec);
      });
    } finally {
      leave();
    }
  }
}

export const actorsExport = { ActorInstance };

export const lifecycle = {
  init() {
    enter();
    leave();
  },
  reinit() {
    enter();
    leave();
  },
};

export const driver = {
  main(args) {
    enter();
    try {
      if (!mainFunction) throw new ExportErr("no main: this component has no wray.main(...) function");
      try {
        callWith(mainFunction, undefined, [Array.from(args)]);
      } catch (e) {
        if (e instanceof ExportErr) throw e;
        if (e instanceof TaskError) throw new ExportErr(e.message);
        throw new ExportErr(formatException(e));
      }
    } finally {
      leave();
    }
  },
};

/** What this component defines, for the build (`build.mjs` imports the app
 * under Node first, with stub host imports, and exports only these parts):
 * `{functions, actors, main}`, the names of its remote functions and actor
 * classes and whether it has a main. Not part of the API. */
export function __wrayDefined() {
  return {
    functions: [...functions.keys()].sort(),
    actors: [...actorClasses.keys()].sort(),
    main: mainFunction !== null,
  };
}

/** The WIT exports, under the names componentize-js looks for (the build's
 * entry module re-exports them; a part the component's world leaves out is
 * ignored). */
export const exports = {
  metadata,
  functions: functionsExport,
  actors: actorsExport,
  lifecycle,
  driver,
};

// ---- snapshot --------------------------------------------------------------

/** The code run once in the bindings' realm before the snapshot: it reads
 * every global of that realm (so SpiderMonkey creates each standard class
 * there now, not in every fresh instance), then goes once through what each
 * lifted and lowered call does: typed arrays and a DataView over them,
 * BigInt conversions, an error with its stack, and an async function that
 * awaits (its promise, its generator, the saved stack of the promise's
 * debug information, the job that resumes it). */
const WARM_BINDINGS = `
  for (const name of Object.getOwnPropertyNames(globalThis)) {
    try { void globalThis[name]; } catch (e) {}
  }
  const bytes = new Uint8Array(16);
  const view = new DataView(bytes.buffer);
  view.setBigInt64(0, 1n, true);
  BigInt.asUintN(64, BigInt(view.getBigInt64(0, true)));
  view.setUint32(8, view.getInt32(8, true) >>> 0, true);
  view.setUint8(12, view.getUint8(12));
  new Uint8Array(bytes.buffer.slice(0, 4));
  try { throw new TypeError("warm"); } catch (e) { void e.stack; }
  (async () => { await undefined; })();
`;

/** Whether the build warmed the bindings' realm ({@link WARM_BINDINGS}):
 * true in a component built by `build.mjs` with the componentize-js it
 * pins, false under Node (the build's probe) or where the realms could not
 * be told apart. For tests and diagnostics; not part of the API.
 *
 * componentize-js evaluates the bindings it generates (the code that lifts
 * every WIT export's arguments and lowers every import's, and wraps each
 * export in an async function) in a realm of their own, whose standard
 * classes SpiderMonkey makes on first use. The build runs the app's
 * top-level code once and snapshots the heap, but none of those calls run
 * then, so every fresh instance used to make `Uint8Array`, `BigInt`,
 * `Promise`, the async function's prototypes and `SavedFrame` again in its
 * first call: a fifth of a trivial fresh task's samples, a third of those
 * in SpiderMonkey (perf, with componentize-js's debug build of the engine;
 * docs/benchmarks.md, "JavaScript: the bindings' realm, made before the
 * snapshot"). The WIT imports are functions of that realm, so their
 * `constructor` is its `Function`, which runs code there.
 * Done at the module's top level, which the build runs before the snapshot;
 * a failure only leaves the realm cold. */
export const bindingsWarmed = (() => {
  const BindingsFunction = hostTaskId.constructor;
  if (typeof BindingsFunction !== "function" || BindingsFunction === Function) return false;
  try {
    BindingsFunction(WARM_BINDINGS)();
    return true;
  } catch (e) {
    return false;
  }
})();
