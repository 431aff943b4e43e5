// A named, detached counter that outlives the job that made it and is
// found by name from any job on any node (Ray's named actors:
// `Counter.options({name, lifetime: "detached"})` and `getActor(name)`),
// restarted on another node if its own dies. Deployed as `keeper_js`; one
// command per job (`wray job submit keeper_js -- COMMAND NAME ...`):
//
//   make NAME START [RESOURCE]  creates the counter NAME at START (detached,
//                               one restart, one retry of a lost call;
//                               holding one unit of custom resource
//                               RESOURCE when given) and adds 1: prints
//                               `make <count>` and `node <node id>`, or
//                               `make refused: <why>` when the name is taken
//   use NAME                    adds 1 to the counter NAME: `use <count>`,
//                               or `use missing: <why>` (no such name), or
//                               `use failed: <task error>` (it died)
//   where NAME                  `where <node id>`: the node it lives on
//   kill NAME                   `kill true` (its name is free again)
import { actor, getActor, get, kill, main, nodeId, TaskError } from "wray";

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
    node() {
      return nodeId();
    }
  },
  {
    params: [{ name: "start", schema: integer }],
    methods: { add: { params: [{ name: "k", schema: integer }], returns: integer }, node: { returns: { type: "string" } } },
  },
);

const USAGE = "usage: keeper_js (make NAME START [RESOURCE] | use NAME | where NAME | kill NAME)";

function make(name, start, resource) {
  const options = { name, lifetime: "detached", maxRestarts: 1, maxTaskRetries: 1 };
  if (resource) options.resources = { [resource]: 1 };
  let counter;
  try {
    counter = Counter.options(options).remote(start);
  } catch (e) {
    console.log(`make refused: ${e.message}`);
    return;
  }
  console.log(`make ${get(counter.add.remote(1))}`);
  console.log(`node ${get(counter.node.remote())}`);
}

function use(name) {
  let counter;
  try {
    counter = getActor(name);
  } catch (e) {
    if (e.kind !== "not-found") throw e;
    console.log(`use missing: ${e.message}`);
    return;
  }
  try {
    console.log(`use ${get(counter.add.remote(1))}`);
  } catch (e) {
    if (!(e instanceof TaskError)) throw e;
    console.log(`use failed: ${e.message}`);
  }
}

main((args) => {
  const [command, name, ...rest] = args;
  if (command === "make" && (rest.length === 1 || rest.length === 2)) make(name, Number(rest[0]), rest[1]);
  else if (command === "use" && rest.length === 0 && name) use(name);
  else if (command === "where" && rest.length === 0 && name) console.log(`where ${get(getActor(name).node.remote())}`);
  else if (command === "kill" && rest.length === 0 && name) console.log(`kill ${kill(getActor(name))}`);
  else throw new Error(USAGE);
});
