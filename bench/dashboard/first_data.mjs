// The dashboard's cost, measured in headless Chromium against a running node
// (not a test: figures for docs/dashboard.md):
//
//   node bench/dashboard/first_data.mjs <node url> <token> [runs]
//
// - first data: from the start of the navigation to the overview showing
//   the node count (its first API answers drawn), `runs` times, with the
//   token already in the tab's sessionStorage (as after a login);
// - the bundle: bytes of each file, and gzipped;
// - requests the overview makes in 10 s while shown, and while hidden.
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launch } from '../../dashboard/tests/browser.mjs';

const [url, token, runsArg] = process.argv.slice(2);
if (!url || !token) {
  console.error('usage: node bench/dashboard/first_data.mjs <node url> <token> [runs]');
  process.exit(2);
}
const runs = Number(runsArg || 20);
const dist = join(dirname(fileURLToPath(import.meta.url)), '../../dashboard/dist');

let total = 0;
let totalGz = 0;
for (const f of ['index.html', 'app.js', 'app.css']) {
  const b = readFileSync(join(dist, f));
  const gz = gzipSync(b, { level: 9 }).length;
  total += b.length;
  totalGz += gz;
  console.log(`bundle ${f}: ${b.length} bytes (${gz} gzipped)`);
}
console.log(`bundle total: ${total} bytes (${totalGz} gzipped)`);

const { context, close } = await launch();
try {
  await context.addInitScript((t) => sessionStorage.setItem('wray-token', t), token);
  const page = await context.newPage();
  const times = [];
  for (let i = 0; i < runs; i++) {
    await page.goto('about:blank');
    await page.goto(`${url}/#/overview`);
    await page.getByTestId('node-count').waitFor({ timeout: 10_000 });
    // performance.now() counts from the navigation's start.
    times.push(await page.evaluate(() => performance.now()));
  }
  times.sort((a, b) => a - b);
  const q = (p) => times[Math.min(times.length - 1, Math.floor(p * times.length))].toFixed(1);
  console.log(`first data on the overview (${runs} loads): median ${q(0.5)} ms, p90 ${q(0.9)} ms, max ${q(1)} ms`);

  let requests = 0;
  page.on('request', (r) => { if (new URL(r.url()).pathname.startsWith('/v1/') || r.url().endsWith('/metrics')) requests++; });
  const count = async () => {
    requests = 0;
    const start = Date.now();
    // Waiting is what is measured here (the page's own timers run meanwhile).
    await page.waitForTimeout(10_000);
    return [requests, (Date.now() - start) / 1000];
  };
  const [shown, s1] = await count();
  await page.evaluate(() => {
    Object.defineProperty(document, 'visibilityState', { value: 'hidden', configurable: true });
    document.dispatchEvent(new Event('visibilitychange'));
  });
  const [hidden, s2] = await count();
  console.log(`API requests of the overview: ${shown} in ${s1.toFixed(0)} s shown, ${hidden} in ${s2.toFixed(0)} s hidden`);
} finally {
  await close();
}
