// Overview: the cluster's nodes and its resources in all (used and free),
// each node's share, the object store (use and spill), tasks by state on
// the node asked, HTTP traffic, the newest jobs and errors of the cluster.
import { api, usePoll } from '../api.js';
import { used } from '../cluster.js';
import { parseMetrics } from '../metrics.js';
import { record, traffic, WINDOW_S } from '../traffic.js';
import { Chart } from './metrics.jsx';
import { ErrorBox, Table, Unreachable, bytes, resources, time } from '../util.jsx';

async function load() {
  const [nodes, res, jobs, errors, metrics] = await Promise.all([
    api('/v1/nodes'), api('/v1/resources'), api('/v1/jobs?limit=5'),
    api('/v1/errors?limit=5'), api('/metrics'),
  ]);
  record(metrics);
  const tasks = {};
  for (const s of parseMetrics(metrics)) {
    if (s.name === 'wray_tasks') tasks[s.labels.state] = s.value;
  }
  return {
    nodes, res, jobs: jobs.jobs, errors: errors.errors, tasks, traffic: traffic(),
    unreachable: [...(jobs.unreachable || []), ...(errors.unreachable || [])],
  };
}

/** Seconds as `1.2 ms`, or `–`. */
const ms = (s) => (s == null ? '–' : `${(s * 1000).toFixed(s < 0.01 ? 2 : 1)} ms`);

/** A resource's quantity: bytes for `memory`, a number otherwise. */
const qty = (k, v) => (k === 'memory' || k.endsWith('_bytes') ? bytes(v) : +v.toFixed(3));

export function Overview() {
  const { data, error } = usePoll(load);
  if (!data) return <div><h2>Overview</h2><ErrorBox error={error} />{!error && <p class="muted">loading</p>}</div>;
  const inUse = used(data.res.total, data.res.available);
  const alive = data.nodes.filter((n) => n.alive);
  const store = { used: 0, capacity: 0, spilled: 0 };
  for (const n of alive) {
    store.used += n.object_store_used; store.capacity += n.object_store_capacity; store.spilled += n.object_store_spilled || 0;
  }
  return (
    <div data-testid="overview">
      <h2>Overview</h2>
      <ErrorBox error={error} />
      <Unreachable list={data.unreachable} />
      <div class="cards">
        <div class="card"><h3>Nodes</h3><div class="big" data-testid="node-count">{data.nodes.length}</div>
          <div class="muted">{alive.length} alive</div></div>
        <div class="card" data-testid="cluster-resources"><h3>The cluster's resources (used / total)</h3>
          {Object.entries(data.res.total).map(([k, v]) => (
            <div data-resource={k} data-total={v}>{k}: <b>{qty(k, inUse[k])}</b> / {qty(k, v)}</div>
          ))}
          <h3>Free</h3><div>{resources(data.res.available) || 'none'}</div></div>
        <div class="card" data-testid="object-store"><h3>Object store</h3>
          <div>{bytes(store.used)} used{store.capacity ? ` of ${bytes(store.capacity)} shared memory` : ''}</div>
          <div>spilled to disk: <b data-testid="spilled">{store.spilled}</b> objects</div></div>
        <div class="card"><h3>Tasks (this node)</h3>
          {Object.keys(data.tasks).length === 0 && <div class="muted">none yet</div>}
          {Object.entries(data.tasks).map(([k, v]) => <div>{k}: <b>{v}</b></div>)}</div>
        <div class="card" data-testid="traffic"><h3>HTTP (last {WINDOW_S / 60} min, while shown)</h3>
          <div>{data.traffic.rates.length ? `${data.traffic.rates[data.traffic.rates.length - 1].toFixed(1)} requests/s` : 'measuring…'}</div>
          <div>p50 {ms(data.traffic.p50)} · p99 {ms(data.traffic.p99)}</div></div>
      </div>
      <h3>Nodes</h3>
      <Table testid="overview-nodes" rows={alive} cols={[
        ['node', (n) => <code>{n.node_id}</code>],
        ['used / total', (n) => {
          const u = used(n.resources, n.resources_available);
          return Object.entries(n.resources).map(([k, v]) => `${k} ${qty(k, u[k])} / ${qty(k, v)}`).join(', ');
        }],
        ['running', (n) => n.running_tasks],
        ['object store', (n) => `${bytes(n.object_store_used)} of ${bytes(n.object_store_capacity)}`],
      ]} />
      {data.traffic.times.length > 1 && (
        <Chart title="HTTP requests per second" times={data.traffic.times} series={{ 'requests/s': data.traffic.rates }} width={600} height={160} />
      )}
      <h3>Recent jobs</h3>
      <Table testid="recent-jobs" rows={data.jobs} cols={[
        ['job', (j) => <a href={`#/jobs/${j.job_id}`}>{j.job_id}</a>],
        ['component', (j) => j.component], ['status', (j) => j.status],
        ['node', (j) => <code>{j.node_id}</code>],
        ['submitted', (j) => time(j.submitted_at)],
      ]} />
      <h3>Recent errors</h3>
      <Table testid="recent-errors" rows={data.errors} cols={[
        ['time', (e) => time(e.time)], ['task', (e) => <code>{e.task_id}</code>], ['function', (e) => e.function],
        ['node', (e) => <code>{e.node_id}</code>], ['kind', (e) => e.kind], ['message', (e) => e.message],
      ]} />
    </div>
  );
}
