// The build's choice of world (build.mjs): what an app defines, read by
// importing it under Node in a child process, decides which parts of
// wray:runtime its component exports. componentize-js is replaced by a
// stand-in that records its options. No wasm:
//   node --test sdk/js/tests/build.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import {
  APP_WORLD_FILE,
  BuildError,
  GUEST_WORLD,
  ProbeError,
  build,
  partsFor,
  probe,
  stageApp,
  stageWit,
  witImports,
  witPackage,
  worldWit,
} from "../build.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO_WIT = resolve(HERE, "..", "..", "..", "wit");

async function tmp() {
  return mkdtemp(join(tmpdir(), "wray-js-test-"));
}

/** Writes `files` ({relative path: text}) under a new directory; returns it. */
async function app(files) {
  const dir = await tmp();
  for (const [name, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, name)), { recursive: true });
    await writeFile(join(dir, name), text);
  }
  return dir;
}

/** What the app `main` (in `files`) defines, as the build probes it. */
async function defined(files, main = "app.js") {
  const dir = await app(files);
  const work = await tmp();
  try {
    const stage = join(work, "src");
    const rel = await stageApp(join(dir, main), stage);
    return await probe(stage, rel, join(work, "probe"));
  } finally {
    await rm(dir, { recursive: true, force: true });
    await rm(work, { recursive: true, force: true });
  }
}

test("each kind of definition picks its parts", () => {
  assert.deepEqual(partsFor({ functions: ["f"], actors: [], main: false }), ["metadata", "functions"]);
  assert.deepEqual(partsFor({ functions: [], actors: ["A"], main: false }), ["metadata", "actors"]);
  assert.deepEqual(partsFor({ functions: [], actors: [], main: true }), ["driver"]);
  assert.deepEqual(partsFor({ functions: ["f"], actors: ["A"], main: true }), [
    "metadata",
    "functions",
    "actors",
    "driver",
  ]);
});

test("nothing defined is refused, naming what is missing", () => {
  assert.throws(
    () => partsFor({ functions: [], actors: [], main: false }, "empty.js"),
    (e) =>
      e instanceof BuildError &&
      ["empty.js", "remote(..)", "actor(..)", "main(..)"].every((w) => e.message.includes(w)),
  );
});

test("the world includes the part worlds in order, package first", () => {
  const lines = worldWit(["driver", "actors", "metadata"], "wray:runtime@0.1.0", "a.js").split("\n");
  assert.equal(lines[0], "package wray:runtime@0.1.0;");
  assert.ok(lines.includes("world app-exports {"));
  assert.deepEqual(
    lines.filter((l) => l.trim().startsWith("include")).map((l) => l.trim()),
    ["include part-metadata;", "include part-actors;", "include part-driver;"],
  );
});

test("the WIT copy holds the original and the world", async () => {
  assert.equal(witPackage(REPO_WIT), "wray:runtime@0.1.0");
  const dir = await tmp();
  try {
    const { witPath, worldName } = await stageWit(REPO_WIT, join(dir, "wit"), ["driver"], "d.js");
    assert.equal(worldName, "wray:runtime/app-exports");
    const files = await readdir(witPath);
    assert.ok(files.includes("runtime.wit") && files.includes(APP_WORLD_FILE), files.join(", "));
    assert.match(await readFile(join(witPath, APP_WORLD_FILE), "utf8"), /include part-driver;/);
    assert.ok(!existsSync(join(REPO_WIT, APP_WORLD_FILE)));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("the SDK's WIT imports are found for the stubs", async () => {
  const sdk = await readFile(join(HERE, "..", "wray.js"), "utf8");
  const found = witImports([sdk]);
  assert.deepEqual([...found.get("wray:runtime/objects@0.1.0")].sort(), ["get", "put", "release", "wait"]);
  assert.ok(found.get("wray:runtime/tasks@0.1.0").has("submit"));
  assert.ok(!found.has("node:fs"));
});

const COUNTER = `
import { actor, remote } from "wray";
export const Counter = actor(class Counter { add(k) { return k; } });
export const echo = remote(function echo(x) { return x; });
`;

test("probe: functions and actors", async () => {
  assert.deepEqual(await defined({ "app.js": COUNTER }), {
    functions: ["echo"],
    actors: ["Counter"],
    main: false,
  });
});

test("probe: a driver calling other components defines only main", async () => {
  const d = await defined({
    "app.js": `
import { actorClass, fn, main, get } from "wray";
const C = actorClass("counter_js/Counter");
const f = fn("tree_reduce/make_array");
main((args) => console.log(get(f.remote(3))));
`,
  });
  assert.deepEqual(d, { functions: [], actors: [], main: true });
});

test("probe: definitions in other modules of the app, remote(class)", async () => {
  const d = await defined({
    "app.js": `import "./lib/more.js";\nimport { remote } from "wray";\nexport const K = remote(class K {});\n`,
    "lib/more.js": `import { remote } from "wray";\nexport const f = remote((x) => x, { name: "f" });\n`,
  });
  assert.deepEqual(d, { functions: ["f"], actors: ["K"], main: false });
});

test("probe: .js files load as ES modules, as in the component", async () => {
  // No package.json, and one saying commonjs: still ES modules.
  for (const extra of [{}, { "package.json": '{"type": "commonjs"}' }]) {
    const d = await defined({ "app.js": COUNTER, ...extra });
    assert.deepEqual(d.actors, ["Counter"]);
  }
});

test("probe: nothing defined", async () => {
  assert.deepEqual(await defined({ "app.js": `import { fn } from "wray";\nexport const x = 1;\n` }), {
    functions: [],
    actors: [],
    main: false,
  });
});

test("probe: a failed import is a ProbeError carrying its message", async () => {
  await assert.rejects(
    defined({ "app.js": `throw new Error("only in StarlingMonkey");\n` }),
    (e) => e instanceof ProbeError && e.message.includes("only in StarlingMonkey"),
  );
});

test("probe: calling the host at the top level is a ProbeError", async () => {
  await assert.rejects(
    defined({ "app.js": `import { put } from "wray";\nput(1);\n` }),
    (e) => e instanceof ProbeError && e.message.includes("the host exists only inside a component"),
  );
});

/** Builds `files`' app.js with a stand-in componentize; its options. */
async function fakeBuild(files, opts = {}) {
  const dir = await app(files);
  const out = join(dir, "out", "app.wasm");
  let seen = null;
  const componentize = async (o) => {
    seen = {
      ...o,
      witFiles: existsSync(o.witPath) ? await readdir(o.witPath) : [],
      entry: await readFile(o.sourcePath, "utf8"),
    };
    return { component: new Uint8Array([0, 0x61, 0x73, 0x6d]) };
  };
  const log = console.log;
  const err = console.error;
  const lines = [];
  console.log = console.error = (...a) => lines.push(a.join(" "));
  try {
    await build({ app: join(dir, "app.js"), out, wit: REPO_WIT, componentize, ...opts });
  } finally {
    console.log = log;
    console.error = err;
    await rm(dir, { recursive: true, force: true });
  }
  return { seen, log: lines.join("\n") };
}

test("build: the generated world is targeted", async () => {
  const { seen, log } = await fakeBuild({ "app.js": COUNTER });
  assert.equal(seen.worldName, "wray:runtime/app-exports");
  assert.ok(seen.witFiles.includes(APP_WORLD_FILE));
  assert.deepEqual(seen.disableFeatures, ["http", "fetch-event"]);
  assert.match(log, /exporting metadata, functions, actors/);
});

test("build: an explicit world wins, and skips the probe", async () => {
  const { seen } = await fakeBuild({ "app.js": `throw new Error("not here");\n` }, { world: "guest" });
  assert.equal(seen.worldName, "wray:runtime/guest");
  assert.equal(seen.witPath, REPO_WIT);
  const q = await fakeBuild({ "app.js": COUNTER }, { world: "wray:runtime/library" });
  assert.equal(q.seen.worldName, "wray:runtime/library");
});

test("build: nothing defined fails before componentize", async () => {
  await assert.rejects(
    fakeBuild({ "app.js": `import "wray";\n` }),
    (e) => e instanceof BuildError && e.message.includes("defines no remote function"),
  );
});

test("build: an app Node cannot import falls back to every part, with a warning", async () => {
  const { seen, log } = await fakeBuild({ "app.js": `throw new Error("only in StarlingMonkey");\n` });
  assert.equal(seen.worldName, GUEST_WORLD);
  assert.match(log, /warning: cannot tell what app\.js defines/);
});
