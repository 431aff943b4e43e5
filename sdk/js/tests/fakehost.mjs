// A fake host for the SDK's unit tests under Node: every WIT import of
// `wray:runtime/*` (tests/actors.test.mjs's module hooks resolve them all
// to this module), with an in-process object store that runs tasks and
// actor calls at once through the SDK's own exports, and an actor
// directory with the host's rules for names. No wasm.

/** What the tests read and set: the SDK's exports (`sdk`, set once the
 * SDK is imported) and everything the host saw. */
export const HOST = {
  sdk: null,
  reset() {
    this.store = new Map();
    this.actors = new Map();
    this.actorErrors = new Map();
    this.names = new Map();
    this.created = [];
    this.lookups = [];
    this.nextTask = 1n;
    // The actor whose constructor or method runs (`current-actor`).
    this.actor = undefined;
  },
};
HOST.reset();

const taskKey = (t) => `${t.hi}:${t.lo}`;
const objKey = (o) => `${o.task.hi}:${o.task.lo}:${o.index}`;
const current = { hi: 0n, lo: 0xdn };

function newTask() {
  const t = { hi: 0n, lo: HOST.nextTask };
  HOST.nextTask += 1n;
  return t;
}

/** What componentize-js throws for `err(value)` of a WIT result. */
function err(payload) {
  const e = new Error("err");
  e.payload = payload;
  return e;
}

function taskError(kind, fn, message) {
  return { kind, function: fn, task: current, message, causes: [] };
}

function run(task, n, call, args, actor = undefined) {
  const ids = Array.from({ length: n }, (_, i) => ({ task, index: i + 1 }));
  let results;
  let failed = null;
  const saved = HOST.actor;
  HOST.actor = actor;
  try {
    results = call(args);
  } catch (e) {
    failed = e && e.payload ? e.payload : taskError("application", "?", String(e));
  } finally {
    HOST.actor = saved;
  }
  ids.forEach((id, i) => HOST.store.set(objKey(id), failed ? { error: failed } : { value: results[i] }));
  return ids;
}

// objects
export function put(value) {
  const id = { task: current, index: 0x80000000 + HOST.store.size };
  HOST.store.set(objKey(id), { value });
  return id;
}
export function get(ids) {
  return ids.map((id) => {
    const v = HOST.store.get(objKey(id));
    if (!v) throw err(taskError("timeout", "get", "no such object"));
    if (v.error) throw err(v.error);
    return v.value;
  });
}
export function wait(ids, n) {
  return ids.map((id) => HOST.store.has(objKey(id)));
}
export function release() {}
// mapping
export const putBytes = (data, codec, refs) => put({ codec, data, refs });
// tasks
export function cancel() {
  return false;
}
export function killActor(actor) {
  return HOST.actors.delete(taskKey(actor));
}
export function submit(fn, args, options) {
  return run(newTask(), options.numReturns, (a) => HOST.sdk.functionsExport.invoke(fn, a, options.resultCodec), args);
}
export function submitTo(component, fn, args, options) {
  return run(newTask(), options.numReturns, () => {
    throw err(taskError("not-found", fn, `no component is deployed as \`${component}\``));
  }, args);
}
export function createActor(cls, args, options) {
  const task = newTask();
  HOST.created.push({ component: null, cls, options, actor: null });
  HOST.store.set(objKey({ task, index: 1 }), { value: { codec: "json", data: new Uint8Array([110, 117, 108, 108]), refs: [] } });
  const saved = HOST.actor;
  HOST.actor = task;
  try {
    HOST.actors.set(taskKey(task), { cls, instance: HOST.sdk.actorsExport.ActorInstance.create(cls, args) });
  } catch (e) {
    HOST.actorErrors.set(taskKey(task), e.payload);
  } finally {
    HOST.actor = saved;
  }
  return task;
}
export function createActorOf(component, cls, args, options) {
  const task = newTask();
  HOST.created.push({ component, cls, options, actor: null });
  // Another component's actor: alive (its calls answer null), for names.
  HOST.actors.set(taskKey(task), { cls, instance: null });
  return task;
}
export function createActorWith(component, cls, args, options, actor) {
  const task = component === undefined ? createActor(cls, args, options) : createActorOf(component, cls, args, options);
  HOST.created[HOST.created.length - 1].actor = actor;
  if (actor.name !== undefined) {
    const holder = HOST.names.get(actor.name);
    if (holder && HOST.actors.has(taskKey(holder.actor))) {
      // The host kills an actor that cannot take its name.
      HOST.actors.delete(taskKey(task));
      HOST.actorErrors.set(taskKey(task), taskError("actor-died", `${cls}.new`, "it could not take its name"));
    } else if (HOST.actors.has(taskKey(task))) {
      HOST.names.set(actor.name, { actor: task, cls });
    }
  }
  return task;
}
export function getActor(name, cls) {
  HOST.lookups.push([name, cls]);
  const holder = HOST.names.get(name);
  if (!holder || !HOST.actors.has(taskKey(holder.actor))) {
    throw err(taskError("not-found", "main", `no live actor is named \`${name}\``));
  }
  if (cls && holder.cls !== cls) {
    throw err(taskError("invalid-argument", "main", `the actor named \`${name}\` is of class \`${holder.cls}\`, not \`${cls}\``));
  }
  return holder.actor;
}
export function callActor(actor, method, args, options) {
  const a = HOST.actors.get(taskKey(actor));
  return run(newTask(), options.numReturns, (resolved) => {
    if (!a) throw err(taskError("actor-died", method, `actor died: ${(HOST.actorErrors.get(taskKey(actor)) || {}).message}`));
    if (!a.instance) return [{ codec: "json", data: new Uint8Array([110, 117, 108, 108]), refs: [] }];
    return a.instance.call(method, resolved, options.resultCodec);
  }, args, actor);
}
// runtime
export const taskId = () => current;
export const currentActor = () => HOST.actor;
export const nodeId = () => "fake-node";
export function log() {}
export const getGpuIds = () => [];
export const getResourceIds = () => [];
export const profileBegin = () => 1;
export function profileEnd() {}
