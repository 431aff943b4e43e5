// Tasks: the cluster's timeline (`/v1/timeline`) and a filterable table of
// its tasks (`/v1/tasks`), the newest first.
import { useState } from 'preact/hooks';
import { api, usePoll } from '../api.js';
import { ErrorBox, Table, Unreachable, time } from '../util.jsx';
import { Timeline } from './timeline.jsx';

/** A job id as the API takes it: 16 hex digits. */
const JOB_ID = /^[0-9a-f]{16}$/;

/** Rows read (the newest). */
const ROWS = 1000;

export function Tasks() {
  const [job, setJob] = useState('');
  const [node, setNode] = useState('');
  const jobQuery = JOB_ID.test(job.trim()) ? `&job=${job.trim()}` : '';
  const nodeQuery = node ? `&node=${encodeURIComponent(node)}` : '';
  const { data, error } = usePoll(() => api(`/v1/tasks?limit=${ROWS}${jobQuery}${nodeQuery}`), [jobQuery, nodeQuery]);
  const { data: nodes } = usePoll(() => api('/v1/nodes'), [], 10000);
  const [state, setState] = useState('');
  const [fn, setFn] = useState('');
  const tasks = data ? data.tasks : [];
  const states = [...new Set(tasks.map((t) => t.state))].sort();
  const shown = tasks.filter((t) => (!state || t.state === state) && (!fn || t.function.includes(fn)));
  return (
    <div>
      <h2>Tasks</h2>
      <ErrorBox error={error} />
      <Timeline />
      <h3>Tasks, the newest first ({shown.length} of {tasks.length}{data && data.next ? `, the newest ${ROWS}` : ''})</h3>
      <Unreachable list={data && data.unreachable} />
      <div class="filters">
        <label>State <select data-testid="task-state" value={state} onChange={(e) => setState(e.target.value)}>
          <option value="">any</option>{states.map((s) => <option>{s}</option>)}</select></label>
        <label>Function <input data-testid="task-function" value={fn} onInput={(e) => setFn(e.target.value)} /></label>
        <label>Job <input data-testid="task-job" placeholder="16 hex digits" value={job} onInput={(e) => setJob(e.target.value)} /></label>
        <label>Node <select data-testid="task-node" value={node} onChange={(e) => setNode(e.target.value)}>
          <option value="">every node</option>
          {(nodes || []).map((n) => <option value={n.node_id}>{n.node_id}{n.alive ? '' : ' (dead)'}</option>)}</select></label>
      </div>
      <Table testid="tasks" rows={shown.slice(0, 500)} cols={[
        ['task', (t) => <code>{t.task_id}</code>], ['function', (t) => t.function],
        ['state', (t) => t.state], ['node', (t) => <code>{t.node_id}</code>], ['worker', (t) => t.worker || ''],
        ['submitted', (t) => time(t.submitted_at)],
        ['queued', (t) => (t.queued_ms != null ? `${t.queued_ms.toFixed(1)} ms` : '')],
        ['ran', (t) => (t.run_ms != null ? `${t.run_ms.toFixed(1)} ms` : '')],
        ['error', (t) => t.error || ''],
      ]} />
    </div>
  );
}
