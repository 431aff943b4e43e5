#!/usr/bin/env node
// Builds a wray component from a JavaScript module:
//
//   node sdk/js/build.mjs app.js -o app.wasm [--wit DIR] [--world NAME] [--keep]
//
// componentize-js takes one entry module (which may import others by
// relative path), so the build stages a directory holding
//   wray.js         this SDK
//   <app's files>   the .js/.mjs/.json files of the app's directory (tree),
//                   with `from "wray"` rewritten to the staged SDK
//   _wray_entry.js  imports the app (its calls of remote/actor/main fill the
//                   SDK's tables), re-exports the SDK's WIT exports
// and runs componentize-js against the repository's wit/ with the `http`
// and `fetch-event` features disabled, so that the component imports no
// `wasi:http` (the wray node does not provide it).
//
// The component exports only the parts of wray:runtime the app has:
// `metadata` and `functions` for remote functions, `metadata` and `actors`
// for actor classes, `driver` for a `main(..)`; `lifecycle` never (the
// SDK's init/reinit only do what every export does first, and the app's
// top-level code runs once, at build time, either way). To learn what it
// has, the build first imports the staged app under Node, in a child
// process whose module hooks resolve the `wray:runtime/...` imports to
// stubs, and reads the SDK's tables (`__wrayDefined()`); then it writes a
// world of those parts (`world app-exports { include part-functions; .. }`)
// into a copy of the WIT directory and targets it. An app defining none of
// the three is refused. When the app cannot be imported under Node (it
// calls the host at top level, or uses what only StarlingMonkey has), the
// build warns and targets `guest` (every part), as before. `--world NAME`
// skips all of this.

import { mkdtemp, mkdir, readdir, readFile, writeFile, copyFile, cp, rm, stat } from "node:fs/promises";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import { basename, dirname, join, relative, resolve, extname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const SDK_DIR = dirname(fileURLToPath(import.meta.url));
/** Features of StarlingMonkey left out: `http` (fetch) and `fetch-event`
 * pull in `wasi:http`, which the wray node does not provide. stdio (console
 * to stdout/stderr), random and clocks stay. */
export const DISABLED_FEATURES = ["http", "fetch-event"];

/** The world exporting every part: the fallback when the app cannot be
 * imported under Node. */
export const GUEST_WORLD = "wray:runtime/guest";
/** The world the build generates from what the app defines. */
export const APP_WORLD = "app-exports";
/** The file holding it, in the build's copy of the WIT directory. */
export const APP_WORLD_FILE = "wray-app-exports.wit";
/** The parts of wray:runtime, in the order the generated world lists them. */
export const PARTS = ["metadata", "functions", "actors", "lifecycle", "driver"];
/** How long importing the app to see what it defines may take. */
export const PROBE_TIMEOUT_MS = 120_000;

/** An error the command line reports by its message alone. */
export class BuildError extends Error {}

/** The app could not be imported under Node. */
export class ProbeError extends Error {}

function usage(msg) {
  if (msg) console.error(`build.mjs: ${msg}`);
  console.error("usage: node sdk/js/build.mjs APP.js -o OUT.wasm [--wit DIR] [--world NAME] [--keep]");
  console.error("  --world NAME  the world of the WIT to target (NAME: wray:runtime/NAME), e.g. guest;");
  console.error("                default: one exporting the parts the app defines (functions, actors, driver)");
  process.exit(2);
}

function parseArgs(argv) {
  const a = { app: null, out: null, wit: null, world: null, keep: false };
  for (let i = 0; i < argv.length; i++) {
    const x = argv[i];
    if (x === "-o" || x === "--out") a.out = argv[++i];
    else if (x === "--wit") a.wit = argv[++i];
    else if (x === "--world") a.world = argv[++i];
    else if (x === "--keep") a.keep = true;
    else if (x === "-h" || x === "--help") usage();
    else if (x.startsWith("-")) usage(`unknown option ${x}`);
    else if (a.app === null) a.app = x;
    else usage(`unexpected argument ${x}`);
  }
  if (!a.app) usage("no app module");
  if (!a.out) a.out = join(dirname(a.app), basename(a.app, extname(a.app)) + ".wasm");
  return a;
}

function witDir(explicit) {
  if (explicit) return resolve(explicit);
  if (process.env.WRAY_WIT) return resolve(process.env.WRAY_WIT);
  const repo = resolve(SDK_DIR, "..", "..", "wit");
  if (existsSync(join(repo, "runtime.wit"))) return repo;
  usage("cannot find wit/runtime.wit: pass --wit DIR or set WRAY_WIT");
}

const SPECIFIER = /(\bfrom\s*|\bimport\s*\(?\s*)(["'])wray\2/g;

/** `from "wray"` as an import of the staged SDK, relative to `file`. */
function rewrite(text, relFile) {
  const depth = relFile.split(/[\\/]/).length - 1;
  const sdk = (depth === 0 ? "./" : "../".repeat(depth)) + "wray.js";
  return text.replace(SPECIFIER, (_m, pre, q) => `${pre}${q}${sdk}${q}`);
}

async function stageTree(src, dst, root) {
  for (const e of await readdir(src, { withFileTypes: true })) {
    if (e.name === "node_modules" || e.name.startsWith(".")) continue;
    const s = join(src, e.name);
    const d = join(dst, e.name);
    if (e.isDirectory()) {
      await mkdir(d, { recursive: true });
      await stageTree(s, d, root);
    } else if (/\.(m?js)$/.test(e.name)) {
      await writeFile(d, rewrite(await readFile(s, "utf8"), relative(root, s)));
    } else if (e.name.endsWith(".json")) {
      await copyFile(s, d);
    }
  }
}

// -- the world --------------------------------------------------------------

/**
 * The parts a component of an app defining `defined` (`{functions, actors,
 * main}`) exports: `functions` for remote functions, `actors` for actor
 * classes, `metadata` beside either, `driver` for a main. `lifecycle` is
 * never needed (the SDK's hooks only do what each export does first).
 * Throws a BuildError when it defines none of them.
 */
export function partsFor(defined, app = "the app") {
  const parts = [];
  const fns = defined.functions.length > 0;
  const actors = defined.actors.length > 0;
  if (fns || actors) parts.push("metadata");
  if (fns) parts.push("functions");
  if (actors) parts.push("actors");
  if (defined.main) parts.push("driver");
  if (parts.length === 0) {
    throw new BuildError(
      `${app} defines no remote function (remote(..)), no actor class (actor(..)) and no ` +
        "main (main(..)), so its component would export nothing wray can run; define at " +
        "least one of them",
    );
  }
  return parts;
}

/** The WIT of world APP_WORLD: the `part-*` worlds of `parts` included
 * (each brings the imports too). */
export function worldWit(parts, pkg, app = "the app") {
  const lines = [];
  if (pkg) lines.push(`package ${pkg};`, "");
  // (A comment before `package` would count as a second doc comment of the
  // package, which wit-parser refuses.)
  lines.push(`/// Generated by build.mjs: the parts of wray:runtime that ${app.replace(/\n/g, " ")} has.`);
  lines.push(`world ${APP_WORLD} {`);
  for (const p of PARTS) if (parts.includes(p)) lines.push(`    include part-${p};`);
  lines.push("}");
  return lines.join("\n") + "\n";
}

const PACKAGE = /^\s*package\s+([^;\s]+)\s*;/m;

/** The package a WIT directory (or file) declares (`wray:runtime@0.1.0`);
 * null when no top-level file declares one. */
export function witPackage(wit) {
  const files = statSync(wit).isFile()
    ? [wit]
    : readdirSync(wit).sort().filter((f) => f.endsWith(".wit")).map((f) => join(wit, f));
  for (const f of files) {
    const m = PACKAGE.exec(readFileSync(f, "utf8"));
    if (m) return m[1];
  }
  return null;
}

/** Copies WIT `wit` to `dest` with world APP_WORLD of `parts` added (a
 * second file of the same package); `{witPath, worldName}` of the copy. */
export async function stageWit(wit, dest, parts, app = "the app") {
  const pkg = witPackage(wit);
  if (!pkg) throw new BuildError(`no \`package\` declaration in ${wit}`);
  if (statSync(wit).isFile()) {
    await mkdir(dest, { recursive: true });
    await copyFile(wit, join(dest, basename(wit)));
  } else {
    await cp(wit, dest, { recursive: true });
  }
  await writeFile(join(dest, APP_WORLD_FILE), worldWit(parts, pkg, app));
  return { witPath: dest, worldName: `${pkg.split("@")[0]}/${APP_WORLD}` };
}

// -- what the app defines -----------------------------------------------------

/** A WIT import specifier (`wray:runtime/objects@0.1.0`), not a URL scheme
 * Node loads. */
const WIT_SPECIFIER = /^(?!node:|file:|data:|https?:)[a-z][a-z0-9-]*:[a-z][a-z0-9-]*\//;
const NAMED_IMPORT = /\bimport\s*\{([^}]*)\}\s*from\s*(["'])([^"']+)\2/g;

/** The names each WIT specifier is imported with in `sources` (texts of
 * modules): `Map<specifier, Set<name>>`. */
export function witImports(sources) {
  const out = new Map();
  for (const text of sources) {
    for (const m of text.matchAll(NAMED_IMPORT)) {
      const spec = m[3];
      if (!WIT_SPECIFIER.test(spec)) continue;
      if (!out.has(spec)) out.set(spec, new Set());
      for (const part of m[1].split(",")) {
        const name = part.trim().split(/\s+as\s+/)[0].trim();
        if (/^[A-Za-z_$][\w$]*$/.test(name)) out.get(spec).add(name);
      }
    }
  }
  return out;
}

async function moduleTexts(dir) {
  const out = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await moduleTexts(p)));
    else if (/\.m?js$/.test(e.name)) out.push(await readFile(p, "utf8"));
  }
  return out;
}

/** The source of a stub for a WIT import: each name a function that throws
 * (the host exists only inside a component). */
function stubSource(spec, names) {
  const lines = [
    `function unavailable(name) {`,
    `  const message = ${JSON.stringify(spec + ": ")} + name +`,
    `    " called while the build imports the app to see what it defines (the host exists only inside a component)";`,
    `  return () => {`,
    `    throw new Error(message);`,
    `  };`,
    `}`,
  ];
  [...names].forEach((n, i) => {
    lines.push(`const _${i} = unavailable(${JSON.stringify(n)});`);
    lines.push(`export { _${i} as ${n} };`);
  });
  return lines.join("\n") + "\n";
}

const PROBE = `import { register } from "node:module";
import { writeFileSync } from "node:fs";
const [result, hooks, sdk, app] = process.argv.slice(2);
register(hooks);
const wray = await import(sdk);
await import(app);
writeFileSync(result, JSON.stringify(wray.__wrayDefined()));
process.exit(0);
`;

/**
 * What the staged app defines (`{functions, actors, main}`): the app
 * (`appRel` in `stage`) is imported under Node in a child process, its WIT
 * imports resolved to stubs and its `.js` files loaded as ES modules (as
 * componentize-js does), and the SDK's tables are read back. `work` is a
 * scratch directory. Throws a ProbeError when the import fails or times
 * out.
 */
export async function probe(stage, appRel, work, timeoutMs = PROBE_TIMEOUT_MS) {
  await mkdir(work, { recursive: true });
  const stubs = {};
  let i = 0;
  for (const [spec, names] of witImports(await moduleTexts(stage))) {
    const file = join(work, `stub${i++}.mjs`);
    await writeFile(file, stubSource(spec, names));
    stubs[spec] = pathToFileURL(file).href;
  }
  const stageUrl = pathToFileURL(stage).href + "/";
  const hooks = join(work, "hooks.mjs");
  await writeFile(
    hooks,
    `const STUBS = ${JSON.stringify(stubs)};\n` +
      `const STAGE = ${JSON.stringify(stageUrl)};\n` +
      `export async function resolve(specifier, context, next) {\n` +
      `  if (Object.hasOwn(STUBS, specifier)) return { url: STUBS[specifier], format: "module", shortCircuit: true };\n` +
      `  const r = await next(specifier, context);\n` +
      `  if (r.url.startsWith(STAGE) && /\\.m?js$/.test(r.url)) return { ...r, format: "module" };\n` +
      `  return r;\n` +
      `}\n`,
  );
  const probeFile = join(work, "probe.mjs");
  await writeFile(probeFile, PROBE);
  const result = join(work, "defined.json");
  const done = spawnSync(
    process.execPath,
    [
      probeFile,
      result,
      pathToFileURL(hooks).href,
      pathToFileURL(join(stage, "wray.js")).href,
      pathToFileURL(join(stage, appRel)).href,
    ],
    { cwd: stage, encoding: "utf8", timeout: timeoutMs },
  );
  if (done.error) {
    const why = done.error.code === "ETIMEDOUT" ? `importing it took more than ${timeoutMs / 1000} s` : String(done.error);
    throw new ProbeError(why);
  }
  if (done.status !== 0) {
    // Node prints the failing line's source, then `Error: message` and the
    // stack: show the error and the stack's first frames.
    const out = (done.stderr || done.stdout || "")
      .split("\n")
      .filter((l) => l.trim() !== "" && !/^Node\.js v/.test(l));
    const at = out.findIndex((l) => /^(\S*(Error|Exception)\b|Uncaught\b|Thrown\b)/.test(l));
    const shown = at >= 0 ? out.slice(at, at + 6) : out.slice(-6);
    const tail = shown.length ? shown.join("\n    ") : `exit ${done.status}`;
    throw new ProbeError(`importing it under node ${process.version} failed:\n    ${tail}`);
  }
  let d;
  try {
    d = JSON.parse(await readFile(result, "utf8"));
  } catch (e) {
    throw new ProbeError(`importing it wrote no result (${e && e.message})`);
  }
  return { functions: d.functions || [], actors: d.actors || [], main: !!d.main };
}

function some(names, one, many) {
  if (!names.length) return null;
  const shown = names.slice(0, 6).join(", ") + (names.length > 6 ? ", ..." : "");
  return `${names.length} ${names.length === 1 ? one : many} (${shown})`;
}

/** `2 remote functions (a, b), 1 actor class (C), a main`. */
export function describeDefined(d) {
  const items = [
    some(d.functions, "remote function", "remote functions"),
    some(d.actors, "actor class", "actor classes"),
    d.main ? "a main" : null,
  ].filter(Boolean);
  return items.length ? items.join(", ") : "nothing";
}

/**
 * The WIT and world to build the staged app against: world APP_WORLD of the
 * parts it defines, in a copy of `wit` under `work`; `wit` and GUEST_WORLD
 * (every part) when it cannot be imported under Node. Throws a BuildError
 * when it defines none of functions, actors and main.
 */
export async function chooseWorld({ stage, appRel, wit, work, app }) {
  let defined;
  try {
    defined = await probe(stage, appRel, join(work, "probe"));
  } catch (e) {
    if (!(e instanceof ProbeError)) throw e;
    console.error(
      `build.mjs: warning: cannot tell what ${app} defines: ${e.message}\n` +
        `build.mjs: so the component exports every part (world ${GUEST_WORLD}), as if it had ` +
        "remote functions, actor classes and a main; pass --world to choose",
    );
    return { witPath: wit, worldName: GUEST_WORLD };
  }
  const parts = partsFor(defined, app);
  const chosen = await stageWit(wit, join(work, "wit"), parts, app);
  console.log(`${app} defines ${describeDefined(defined)}: exporting ${parts.join(", ")}`);
  return chosen;
}

// -- the build ----------------------------------------------------------------

/** Stages app module `app` and its directory's tree into directory `stage`
 * (see the top of this file) beside the SDK; returns the app's path
 * relative to `stage`. */
export async function stageApp(app, stage) {
  const appPath = resolve(app);
  const appDir = dirname(appPath);
  const appRel = relative(appDir, appPath).split("\\").join("/");
  if (["wray.js", "_wray_entry.js"].includes(appRel)) {
    throw new BuildError(`the app module may not be named ${appRel}`);
  }
  await mkdir(stage, { recursive: true });
  await stageTree(appDir, stage, appDir);
  await copyFile(join(SDK_DIR, "wray.js"), join(stage, "wray.js"));
  return appRel;
}

/**
 * Builds app module `app` into component `out`. `world`: the world of `wit`
 * to target (`NAME` is `wray:runtime/NAME`); by default one of the parts
 * the app defines. `componentize`: componentize-js's (tests pass a stand-in).
 */
export async function build({ app, out, wit, world = null, keep = false, componentize = null }) {
  const work = await mkdtemp(join(tmpdir(), "wray-js-"));
  const stage = join(work, "src");
  try {
    const appRel = await stageApp(app, stage);
    const witPath = witDir(wit);
    const chosen = world
      ? { witPath, worldName: world.includes(":") ? world : `wray:runtime/${world}` }
      : await chooseWorld({ stage, appRel, wit: witPath, work, app: basename(app) });
    const entry = join(stage, "_wray_entry.js");
    await writeFile(
      entry,
      `import "./${appRel}";\n` +
        `export { metadata, functionsExport as functions, actorsExport as actors, lifecycle, driver } from "./wray.js";\n`,
    );
    if (!componentize) ({ componentize } = await import("@bytecodealliance/componentize-js"));
    const t0 = Date.now();
    const { component } = await componentize({
      sourcePath: entry,
      witPath: chosen.witPath,
      worldName: chosen.worldName,
      disableFeatures: DISABLED_FEATURES,
    });
    await mkdir(dirname(resolve(out)), { recursive: true });
    await writeFile(out, component);
    const secs = ((Date.now() - t0) / 1000).toFixed(1);
    const mib = ((await stat(out)).size / (1 << 20)).toFixed(1);
    console.log(`built ${out} (${mib} MiB, componentize ${secs} s)`);
  } finally {
    if (keep) console.log(`staging kept in ${work}`);
    else await rm(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const a = parseArgs(process.argv.slice(2));
  build(a).catch((e) => {
    console.error(`build.mjs: ${e instanceof BuildError ? e.message : e && e.stack ? e.stack : e}`);
    process.exit(1);
  });
}
