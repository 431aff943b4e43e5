// A JavaScript driver calling a JavaScript actor of another component
// (`counter_js`) and a Rust function (`tree_reduce/make_array`):
//   wray run driver_js.wasm --with counter_js.wasm --with tree_reduce.wasm -- [N]
import { actorClass, fn, get, main, TaskError } from "wray";

const Counter = actorClass("counter_js/Counter");
const echo = fn("counter_js/echo");
const fail = fn("counter_js/fail");
const makeArray = fn("tree_reduce/make_array");

main((args) => {
  const c = Counter.remote(10);
  console.log("counter:", JSON.stringify(get([c.add.remote(1), c.add.remote(5), c.get.remote()])));

  const arr = get(makeArray.remote(3));
  console.log("tree_reduce/make_array(3):", arr.length, "elements, first", arr[0], "last", arr[arr.length - 1]);

  try {
    get(fail.remote("boom"));
    throw new Error("fail did not fail");
  } catch (e) {
    if (!(e instanceof TaskError)) throw e;
    console.log("expected error:", e.kind, e.function, JSON.stringify(e.taskMessage));
  }
  for (const [what, ref] of [
    ["unknown function", fn("counter_js/nope").remote()],
    ["unknown method", c.nope.remote()],
  ]) {
    try {
      get(ref);
    } catch (e) {
      console.log(`${what}:`, e.kind, "-", e.taskMessage);
    }
  }

  const n = Number(args[0] || 1000);
  const t0 = Date.now();
  const refs = [];
  for (let i = 0; i < n; i++) refs.push(echo.remote(i));
  const out = get(refs);
  const ms = Date.now() - t0;
  if (out.length !== n || out[n - 1] !== n - 1) throw new Error("echo returned wrong values");
  console.log(`${n} echo tasks: ${ms} ms, ${(ms / n).toFixed(3)} ms per task`);

  const t1 = Date.now();
  const calls = [];
  for (let i = 0; i < n; i++) calls.push(c.add.remote(1));
  const totals = get(calls);
  const ms1 = Date.now() - t1;
  if (totals[n - 1] !== 16 + n) throw new Error(`counter ends at ${totals[n - 1]}`);
  console.log(`${n} actor calls: ${ms1} ms, ${(ms1 / n).toFixed(3)} ms per call`);
});
