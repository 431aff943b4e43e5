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
// and runs componentize-js against the repository's wit/ (world
// `wray:runtime/guest`) with the `http` and `fetch-event` features
// disabled, so that the component imports no `wasi:http` (the wray node
// does not provide it).

import { componentize } from "@bytecodealliance/componentize-js";
import { mkdtemp, mkdir, readdir, readFile, writeFile, copyFile, rm, stat } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, relative, resolve, extname } from "node:path";
import { fileURLToPath } from "node:url";

const SDK_DIR = dirname(fileURLToPath(import.meta.url));
/** Features of StarlingMonkey left out: `http` (fetch) and `fetch-event`
 * pull in `wasi:http`, which the wray node does not provide. stdio (console
 * to stdout/stderr), random and clocks stay. */
export const DISABLED_FEATURES = ["http", "fetch-event"];

function usage(msg) {
  if (msg) console.error(`build.mjs: ${msg}`);
  console.error("usage: node sdk/js/build.mjs APP.js -o OUT.wasm [--wit DIR] [--world NAME] [--keep]");
  process.exit(2);
}

function parseArgs(argv) {
  const a = { app: null, out: null, wit: null, world: "guest", keep: false };
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

export async function build({ app, out, wit, world = "guest", keep = false }) {
  const appPath = resolve(app);
  const appDir = dirname(appPath);
  const appRel = relative(appDir, appPath).split("\\").join("/");
  if (["wray.js", "_wray_entry.js"].includes(appRel)) {
    throw new Error(`the app module may not be named ${appRel}`);
  }
  const stage = await mkdtemp(join(tmpdir(), "wray-js-"));
  try {
    await stageTree(appDir, stage, appDir);
    await copyFile(join(SDK_DIR, "wray.js"), join(stage, "wray.js"));
    const entry = join(stage, "_wray_entry.js");
    await writeFile(
      entry,
      `import "./${appRel}";\n` +
        `export { metadata, functionsExport as functions, actorsExport as actors, lifecycle, driver } from "./wray.js";\n`,
    );
    const t0 = Date.now();
    const { component } = await componentize({
      sourcePath: entry,
      witPath: witDir(wit),
      worldName: world.includes(":") ? world : `wray:runtime/${world}`,
      disableFeatures: DISABLED_FEATURES,
    });
    await mkdir(dirname(resolve(out)), { recursive: true });
    await writeFile(out, component);
    const secs = ((Date.now() - t0) / 1000).toFixed(1);
    const mib = ((await stat(out)).size / (1 << 20)).toFixed(1);
    console.log(`built ${out} (${mib} MiB, componentize ${secs} s)`);
  } finally {
    if (keep) console.log(`staging kept in ${stage}`);
    else await rm(stage, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const a = parseArgs(process.argv.slice(2));
  build(a).catch((e) => {
    console.error(`build.mjs: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
  });
}
