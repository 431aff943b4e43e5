// The dashboard in a real headless Chromium, against a running node that
// has the `api` test component deployed as `api` (cli/tests/all/dashboard.rs
// starts it):
//
//   node tests/e2e.mjs <node url> <token> <screenshot dir> <api.wasm>
//
// (`api.wasm` is deployed again from the page, as `copy`, twice, then with a
// custom section added, and undeployed.)
//
// Each check waits for a state of the page (never a fixed sleep) and fails
// the run (exit 1) with what it waited for.
import fs, { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { launch } from './browser.mjs';

const [url, token, shots, wasm] = process.argv.slice(2);
if (!url || !token || !shots || !wasm) {
  console.error('usage: node tests/e2e.mjs <node url> <token> <screenshot dir> <a component .wasm to deploy>');
  process.exit(2);
}
mkdirSync(shots, { recursive: true });
const WAIT = { timeout: 30_000 };

/** `fetch` of the API with the token; the JSON answer. */
async function api(path, init = {}) {
  const res = await fetch(url + path, {
    ...init, headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
  });
  if (!res.ok) throw new Error(`${init.method || 'GET'} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** An unsigned LEB128 encoding of `n` (the wasm binary format's). */
function leb128(n) {
  const out = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n) byte |= 0x80;
    out.push(byte);
  } while (n);
  return out;
}

/**
 * `bytes` (a component) with a custom section `name` holding `text`
 * appended: the same component as far as it runs, other bytes (a custom
 * section may come anywhere; id 0, then its size, then its name).
 */
function withCustomSection(bytes, name, text) {
  const nameBytes = Buffer.from(name);
  const content = Buffer.concat([Buffer.from(leb128(nameBytes.length)), nameBytes, Buffer.from(text)]);
  return Buffer.concat([bytes, Buffer.from([0, ...leb128(content.length)]), content]);
}

/** Runs `f`, saying which check it is; a failure names it. */
async function check(name, f) {
  const start = Date.now();
  try {
    await f();
    console.log(`ok   ${name} (${Date.now() - start} ms)`);
  } catch (e) {
    console.log(`FAIL ${name}: ${e.message}`);
    throw e;
  }
}

const { context, close } = await launch();
let failed = false;
try {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // Answers of 4xx that the checks ask for are logged as "Failed to load resource";
  // anything else (a script error, a CSP violation) fails the run.
  page.on('console', (m) => { if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text()); });
  const shot = (name) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: false });
  const go = async (hash) => { await page.goto(`${url}/#/${hash}`); };

  await check('the page is served with a Content-Security-Policy', async () => {
    const res = await page.goto(`${url}/`);
    const csp = res.headers()['content-security-policy'] || '';
    if (!csp.includes("default-src 'self'")) throw new Error(`policy: ${csp}`);
  });

  await check('a wrong token shows the login error', async () => {
    await page.fill('input[name=token]', 'not-the-token');
    await page.click('button[type=submit]');
    await page.getByTestId('login-error').waitFor(WAIT);
    const text = await page.getByTestId('login-error').textContent();
    if (!text.includes('refused')) throw new Error(`login error says ${text}`);
    await shot('login-error');
  });

  await check('the token logs in and the overview shows the node', async () => {
    await page.fill('input[name=token]', token);
    await page.click('button[type=submit]');
    await page.getByTestId('node-count').waitFor(WAIT);
    const n = await page.getByTestId('node-count').textContent();
    if (n !== '1') throw new Error(`node count ${n}`);
    const inUrl = page.url().includes(token);
    if (inUrl) throw new Error('the token is in the URL');
    await shot('overview');
  });

  await check('the deployed function is listed', async () => {
    await go('functions');
    await page.locator('[data-component="api"] [data-export="inc"]').waitFor(WAIT);
  });

  await check('invoking it from the form shows the result', async () => {
    await page.selectOption('select[name=function]', 'api/inc');
    // One field per parameter, from its schema (`x: i64`).
    await page.fill('[data-param="x"] input', '41');
    await page.click('[data-testid=invoke-form] button[type=submit]');
    await page.getByTestId('invoke-result').waitFor(WAIT);
    const text = (await page.getByTestId('invoke-result').textContent()).trim();
    if (text !== '42') throw new Error(`result ${text}`);
    await page.getByTestId('invoke-form').scrollIntoViewIfNeeded();
    await shot('functions');
  });

  await check("a field that does not fit its parameter's schema names it", async () => {
    await page.fill('[data-param="x"] input', '4.5');
    await page.click('[data-testid=invoke-form] button[type=submit]');
    await page.getByTestId('invoke-error').filter({ hasText: 'x: an integer' }).waitFor(WAIT);
  });

  await check('a failing call shows the error', async () => {
    await page.check('[data-testid=invoke-form] input[name=raw]');
    await page.fill('textarea[name=args]', '["not a number"]');
    await page.click('[data-testid=invoke-form] button[type=submit]');
    await page.getByTestId('invoke-error').filter({ hasText: 'invalid' }).waitFor(WAIT);
    const text = await page.getByTestId('invoke-error').textContent();
    if (!text.includes('invalid')) throw new Error(`error ${text}`);
    await shot('function-error');
  });

  await check('a component is deployed and undeployed from the page', async () => {
    await page.setInputFiles('[data-testid=deploy-form] input[name=file]', wasm);
    await page.fill('[data-testid=deploy-form] input[name=name]', 'copy');
    await page.click('[data-testid=deploy-form] button[type=submit]');
    await page.getByTestId('deploy-result').filter({ hasText: 'deployed copy version 1' }).waitFor(WAIT);
    await page.locator('[data-component="copy"]').waitFor(WAIT);
    const listed = (await api('/v1/components')).components.map((c) => c.record.name);
    if (!listed.includes('copy')) throw new Error(`the node lists ${listed}`);
    // The same bytes again: no new version.
    await page.click('[data-testid=deploy-form] button[type=submit]');
    await page.getByTestId('deploy-result').filter({ hasText: 'version 1 (the same bytes as before' }).waitFor(WAIT);
    // Other bytes (the component with a custom section added): version 2 is
    // current, and version 1 is made current from the page.
    await page.setInputFiles('[data-testid=deploy-form] input[name=file]', {
      name: 'copy.wasm',
      mimeType: 'application/wasm',
      buffer: withCustomSection(fs.readFileSync(wasm), 'wray-e2e', 'version 2'),
    });
    await page.click('[data-testid=deploy-form] button[type=submit]');
    await page.getByTestId('deploy-result').filter({ hasText: 'deployed copy version 2' }).waitFor(WAIT);
    await page.locator('[data-component="copy"] summary', { hasText: 'version 2' }).first().waitFor(WAIT);
    await page.click('[data-versions="copy"] > summary');
    await page.locator('[data-versions="copy"] [data-version="2"]', { hasText: 'current' }).waitFor(WAIT);
    await page.click('[data-rollback="copy@1"]');
    await page.locator('[data-versions="copy"] [data-version="1"]', { hasText: 'current' }).waitFor(WAIT);
    const now = await api('/v1/components/copy');
    if (now.version !== 1) throw new Error(`the node's current version of copy is ${now.version}`);
    await page.click('[data-undeploy="copy"]');
    await page.click('[data-undeploy="copy"]');
    await page.locator('[data-component="copy"]').waitFor({ ...WAIT, state: 'detached' });
    const left = (await api('/v1/components')).components.map((c) => c.record.name);
    if (left.includes('copy')) throw new Error('the node still lists it');
  });

  // A job that prints, runs a task, then prints again; and one that prints
  // `started` and then waits on a task until it is stopped.
  const done = await api('/v1/jobs', { method: 'POST', body: JSON.stringify({
    component: 'api', args: ['job_output', 'dash', '3'],
    env: { DASH: 'one' }, metadata: { team: 'dashboard' }, timeout: 600,
  }) });
  const forever = await api('/v1/jobs', { method: 'POST', body: JSON.stringify({ component: 'api', args: ['job_forever'] }) });

  await check("the job's log lines appear while it runs", async () => {
    await go(`jobs/${forever.job_id}`);
    await page.locator('[data-testid=job-log]', { hasText: 'started' }).waitFor(WAIT);
    const status = (await api(`/v1/jobs/${forever.job_id}`)).status;
    if (status !== 'RUNNING') throw new Error(`the job is ${status}`);
    await page.getByTestId('job-status').filter({ hasText: 'RUNNING' }).waitFor(WAIT);
    // Its actor (made by its driver, not over HTTP): alive, its
    // constructor and two calls run.
    await page.locator('[data-testid=job-actors] tr', { hasText: 'Counter' })
      .locator('[data-state=ALIVE]').waitFor(WAIT);
    await page.locator('[data-testid=job-actors] [data-calls="3"]').waitFor(WAIT);
    await shot('job');
  });

  await check('the jobs are listed, and a job\'s page shows its log and tasks', async () => {
    await go('jobs');
    await page.locator(`[data-testid=jobs] a[href="#/jobs/${done.job_id}"]`).waitFor(WAIT);
    await page.locator(`[data-testid=jobs] tr`, { hasText: done.job_id }).filter({ hasText: 'SUCCEEDED' }).waitFor(WAIT);
    await shot('jobs');
    // The finished job's page: its log, and its tasks (the driver and the task it ran).
    await page.click(`[data-testid=jobs] a[href="#/jobs/${done.job_id}"]`);
    await page.locator('[data-testid=job-log]', { hasText: 'done dash 4' }).waitFor(WAIT);
    await page.locator('[data-testid=job-tasks] tr', { hasText: 'shout' }).filter({ hasText: 'FINISHED' }).waitFor(WAIT);
    await page.locator('[data-testid=job-tasks] tr', { hasText: 'main' }).waitFor(WAIT);
    const rows = await page.locator('[data-testid=job-tasks] tbody tr').count();
    if (rows !== 2) throw new Error(`the job's page lists ${rows} tasks, not its 2`);
    // What it was submitted with.
    for (const option of ['DASH=one', 'team=dashboard', '600 s']) {
      await page.locator(`[data-testid=job-options] [data-option="${option}"]`).waitFor(WAIT);
    }
    await page.getByTestId('job-options').scrollIntoViewIfNeeded();
    await shot('job-options');
  });

  const created = await api('/v1/actors', { method: 'POST', body: JSON.stringify({ component: 'api', class: 'Counter', args: [0] }) });

  await check('the timeline has one row per worker, under its node, in natural order', async () => {
    await go('tasks');
    // The rows drawn are the node's trace's rows (read again each time: a
    // task started meanwhile on another thread adds one), and at least two.
    // Polled from here (both sides read in one round, every 250 ms until
    // the deadline), so that the rows checked are the rows compared.
    const [me] = await api('/v1/nodes');
    const natural = (a, b) => a.localeCompare(b, 'en', { numeric: true });
    const deadline = Date.now() + WAIT.timeout;
    for (;;) {
      const trace = await api('/v1/timeline?limit=2000');
      const names = trace.traceEvents.filter((e) => e.ph === 'M' && e.name === 'thread_name').map((e) => e.args.name);
      const want = ['scheduler', ...names.filter((n) => n !== 'scheduler').sort(natural)];
      const got = await page.$$eval(`[data-testid=timeline] [data-node="${me.node_id}"] .tl-row`, (gs) => gs.map((g) => g.dataset.worker));
      const same = names.length >= 2 && JSON.stringify(got) === JSON.stringify(want);
      if (same && got.some((n) => n.startsWith('wray-worker'))) break;
      if (Date.now() > deadline) throw new Error(`timeline rows ${got} against the trace's ${want}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    await page.locator('[data-testid=tasks] td', { hasText: 'inc' }).first().waitFor(WAIT);
    await page.getByTestId('zoom-in').click();
    await shot('tasks');
  });

  await check('the newest task is the first row', async () => {
    await go('tasks');
    for (let i = 0; i < 3; i++) await api('/v1/functions/api/inc', { method: 'POST', body: '[1]' });
    const newest = (await api('/v1/tasks?limit=1')).tasks[0].task_id;
    await page.waitForFunction((id) => {
      const first = document.querySelector('[data-testid=tasks] tbody tr td:first-child');
      return first && first.textContent === id;
    }, newest, { ...WAIT, polling: 250 });
  });

  await check("the Tasks page's job filter shows only that job's tasks", async () => {
    await go('tasks');
    await page.getByTestId('task-job').fill(done.job_id);
    // Its two tasks (the driver and `shout`), and nothing of other jobs.
    await page.waitForFunction((job) => {
      const ids = [...document.querySelectorAll('[data-testid=tasks] tbody tr td:first-child')].map((td) => td.textContent);
      return ids.length === 2 && ids.every((id) => id.startsWith(job));
    }, done.job_id, { ...WAIT, polling: 250 });
    await page.getByTestId('task-job').fill('');
  });

  await check('an actor is killed from the Actors page', async () => {
    await go('actors');
    const button = page.locator(`[data-kill="${created.actor}"]`);
    await button.waitFor(WAIT);
    await shot('actors');
    await button.click();
    await button.waitFor({ ...WAIT, state: 'detached' });
    await page.locator(`[data-testid=actors] tr`, { hasText: created.actor }).locator('[data-state=DEAD]').waitFor(WAIT);
    const left = (await api('/v1/actors')).actors.find((a) => a.actor === created.actor);
    if (!left || left.state !== 'DEAD') throw new Error(`the node lists the actor as ${JSON.stringify(left)}`);
  });

  await check("a job's actor is killed from its page", async () => {
    await go(`jobs/${forever.job_id}`);
    const row = page.locator('[data-testid=job-actors] tr', { hasText: 'Counter' });
    await row.locator('button[data-kill]').click();
    await row.locator('[data-state=DEAD]').waitFor(WAIT);
    const actors = (await api(`/v1/actors?job=${forever.job_id}`)).actors;
    if (actors.length !== 1 || actors[0].state !== 'DEAD' || actors[0].http) {
      throw new Error(`the job's actors: ${JSON.stringify(actors)}`);
    }
  });

  await check('the job is stopped from its page', async () => {
    await go(`jobs/${forever.job_id}`);
    await page.getByTestId('stop-job').click();
    await page.getByTestId('job-status').filter({ hasText: 'STOPPED' }).waitFor(WAIT);
  });

  await check('the logs page shows the node log and a task\'s output', async () => {
    const res = await fetch(`${url}/v1/functions/api/shout`, {
      method: 'POST', body: '["logged"]',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    });
    if (!res.ok) throw new Error(`shout: ${res.status}`);
    const task = res.headers.get('wray-task-id');
    await go('logs');
    await page.locator('[data-testid=node-log]', { hasText: 'wray' }).waitFor(WAIT);
    const [me] = await api('/v1/nodes');
    await page.locator('[data-testid=log-of]', { hasText: me.node_id }).waitFor(WAIT);
    await page.locator(`[data-task="${task}"]`).click();
    await page.locator('[data-testid=task-stdout]', { hasText: 'task logged' }).waitFor(WAIT);
    await page.locator('[data-testid=task-stderr]', { hasText: 'task logged stderr' }).waitFor(WAIT);
    await shot('logs');
  });

  await check('objects, metrics, cluster and the overview\'s traffic show data', async () => {
    await go('objects');
    await page.getByTestId('objects').waitFor(WAIT);
    await shot('objects');
    await go('metrics');
    await page.locator('[data-testid=charts] .uplot').first().waitFor(WAIT);
    // Three samples (4 s): the rates have two points to draw.
    await page.getByTestId('samples').filter({ hasText: /^[3-9]$/ }).waitFor(WAIT);
    // The histograms as their quantiles: the instantiation latency chart drawn.
    await page.locator('[data-chart="Instantiation latency (ms)"] .uplot').waitFor(WAIT);
    await shot('metrics');
    await go('cluster');
    await page.locator('[data-testid=nodes] td', { hasText: 'alive' }).waitFor(WAIT);
    // The transfer columns: a rate once two reads are apart (none moved on one node).
    await page.locator('[data-testid=nodes] [data-sent="0"]', { hasText: '0 B/s' }).waitFor(WAIT);
    await shot('cluster');
    await go('overview');
    await page.locator('[data-testid=recent-jobs] tr', { hasText: forever.job_id }).filter({ hasText: 'STOPPED' }).waitFor(WAIT);
    // Two samples of /metrics apart: a request rate and latency quantiles.
    await page.getByTestId('traffic').filter({ hasText: /requests\/s/ }).filter({ hasText: /p50 \d/ }).waitFor(WAIT);
    // The store's use and spill, as the node reports them.
    const [node] = await api('/v1/nodes');
    await page.getByTestId('spilled').filter({ hasText: new RegExp(`^${node.object_store_spilled}$`) }).waitFor(WAIT);
    // The cluster's resources in all, as /v1/resources says.
    const res = await api('/v1/resources');
    await page.locator(`[data-testid=cluster-resources] [data-resource=CPU][data-total="${res.total.CPU}"]`).waitFor(WAIT);
    await shot('overview');
  });

  await check('the newest error is the first of the recent errors', async () => {
    for (let i = 0; i < 2; i++) {
      await fetch(`${url}/v1/functions/api/four_gpus`, {
        method: 'POST', body: '[]', headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      });
    }
    const newest = (await api('/v1/errors?limit=1')).errors[0].task_id;
    await go('overview');
    await page.waitForFunction((id) => {
      const first = document.querySelector('[data-testid=recent-errors] tbody tr td:nth-child(2)');
      return first && first.textContent === id;
    }, newest, { ...WAIT, polling: 250 });
  });

  await check('the page logged no errors', async () => {
    if (errors.length) throw new Error(errors.join('\n'));
  });
} catch (e) {
  failed = true;
} finally {
  await close();
}
process.exit(failed ? 1 : 0);
