// Overview: nodes, resources used and free, tasks by state, recent jobs
// and errors.
import { api, usePoll } from '../api.js';
import { parseMetrics } from '../metrics.js';
import { ErrorBox, Table, resources, time } from '../util.jsx';

async function load() {
  const [nodes, res, jobs, errors, metrics] = await Promise.all([
    api('/v1/nodes'), api('/v1/resources'), api('/v1/jobs'),
    api('/v1/errors?limit=100'), api('/metrics'),
  ]);
  const tasks = {};
  for (const s of parseMetrics(metrics)) {
    if (s.name === 'wray_tasks') tasks[s.labels.state] = s.value;
  }
  return { nodes, res, jobs, errors: errors.errors, tasks };
}

export function Overview() {
  const { data, error } = usePoll(load);
  if (!data) return <div><h2>Overview</h2><ErrorBox error={error} />{!error && <p class="muted">loading</p>}</div>;
  const used = {};
  for (const [k, v] of Object.entries(data.res.total)) used[k] = v - (data.res.available[k] ?? 0);
  return (
    <div data-testid="overview">
      <h2>Overview</h2>
      <ErrorBox error={error} />
      <div class="cards">
        <div class="card"><h3>Nodes</h3><div class="big" data-testid="node-count">{data.nodes.length}</div>
          <div class="muted">{data.nodes.filter((n) => n.alive).length} alive</div></div>
        <div class="card"><h3>Resources used</h3><div data-testid="resources-used">{resources(used) || 'none'}</div>
          <h3>Free</h3><div>{resources(data.res.available)}</div></div>
        <div class="card"><h3>Tasks</h3>
          {Object.keys(data.tasks).length === 0 && <div class="muted">none yet</div>}
          {Object.entries(data.tasks).map(([k, v]) => <div>{k}: <b>{v}</b></div>)}</div>
      </div>
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
