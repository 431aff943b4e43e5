// Overview: nodes, resources used and free, the object store (use and
// spill), tasks by state, HTTP traffic, recent jobs and errors.
import { api, usePoll } from '../api.js';
import { parseMetrics } from '../metrics.js';
import { record, traffic, WINDOW_S } from '../traffic.js';
import { Chart } from './metrics.jsx';
import { ErrorBox, Table, bytes, resources, time } from '../util.jsx';

async function load() {
  const [nodes, res, jobs, errors, metrics] = await Promise.all([
    api('/v1/nodes'), api('/v1/resources'), api('/v1/jobs'),
    api('/v1/errors?limit=100'), api('/metrics'),
  ]);
  record(metrics);
  const tasks = {};
  for (const s of parseMetrics(metrics)) {
    if (s.name === 'wray_tasks') tasks[s.labels.state] = s.value;
  }
  return { nodes, res, jobs, errors: errors.errors, tasks, traffic: traffic() };
}

/** Seconds as `1.2 ms`, or `–`. */
const ms = (s) => (s == null ? '–' : `${(s * 1000).toFixed(s < 0.01 ? 2 : 1)} ms`);

export function Overview() {
  const { data, error } = usePoll(load);
  if (!data) return <div><h2>Overview</h2><ErrorBox error={error} />{!error && <p class="muted">loading</p>}</div>;
  const used = {};
  for (const [k, v] of Object.entries(data.res.total)) used[k] = v - (data.res.available[k] ?? 0);
  const store = { used: 0, capacity: 0, spilled: 0 };
  for (const n of data.nodes.filter((n) => n.alive)) {
    store.used += n.object_store_used; store.capacity += n.object_store_capacity; store.spilled += n.object_store_spilled || 0;
  }
  return (
    <div data-testid="overview">
      <h2>Overview</h2>
      <ErrorBox error={error} />
      <div class="cards">
        <div class="card"><h3>Nodes</h3><div class="big" data-testid="node-count">{data.nodes.length}</div>
          <div class="muted">{data.nodes.filter((n) => n.alive).length} alive</div></div>
        <div class="card"><h3>Resources used</h3><div data-testid="resources-used">{resources(used) || 'none'}</div>
          <h3>Free</h3><div>{resources(data.res.available)}</div></div>
        <div class="card" data-testid="object-store"><h3>Object store</h3>
          <div>{bytes(store.used)} used{store.capacity ? ` of ${bytes(store.capacity)} shared memory` : ''}</div>
          <div>spilled to disk: <b data-testid="spilled">{store.spilled}</b> objects</div></div>
        <div class="card"><h3>Tasks</h3>
          {Object.keys(data.tasks).length === 0 && <div class="muted">none yet</div>}
          {Object.entries(data.tasks).map(([k, v]) => <div>{k}: <b>{v}</b></div>)}</div>
        <div class="card" data-testid="traffic"><h3>HTTP (last {WINDOW_S / 60} min, while shown)</h3>
          <div>{data.traffic.rates.length ? `${data.traffic.rates[data.traffic.rates.length - 1].toFixed(1)} requests/s` : 'measuring…'}</div>
          <div>p50 {ms(data.traffic.p50)} · p99 {ms(data.traffic.p99)}</div></div>
      </div>
      {data.traffic.times.length > 1 && (
        <Chart title="HTTP requests per second" times={data.traffic.times} series={{ 'requests/s': data.traffic.rates }} width={600} height={160} />
      )}
      <h3>Recent jobs</h3>
      <Table testid="recent-jobs" rows={data.jobs.slice(-5).reverse()} cols={[
        ['job', (j) => <a href={`#/jobs/${j.job_id}`}>{j.job_id}</a>],
        ['component', (j) => j.component], ['status', (j) => j.status],
        ['submitted', (j) => time(j.submitted_at)],
      ]} />
      <h3>Recent errors</h3>
      <Table testid="recent-errors" rows={data.errors.slice(-5).reverse()} cols={[
        ['time', (e) => time(e.time)], ['function', (e) => e.function],
        ['kind', (e) => e.kind], ['message', (e) => e.message],
      ]} />
    </div>
  );
}
