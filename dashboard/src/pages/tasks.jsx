// Tasks: a filterable table of `/v1/tasks` and the timeline of
// `/v1/timeline`.
import { useState } from 'preact/hooks';
import { api, usePoll } from '../api.js';
import { ErrorBox, Table } from '../util.jsx';
import { Timeline } from './timeline.jsx';

/** A job id as the API takes it: 16 hex digits. */
const JOB_ID = /^[0-9a-f]{16}$/;

export function Tasks() {
  const [job, setJob] = useState('');
  const jobQuery = JOB_ID.test(job.trim()) ? `&job=${job.trim()}` : '';
  const { data, error } = usePoll(() => api(`/v1/tasks?limit=1000${jobQuery}`), [jobQuery]);
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
      <h3>Tasks ({shown.length} of {tasks.length}{data && data.next ? '+' : ''})</h3>
      <div class="filters">
        <label>State <select data-testid="task-state" value={state} onChange={(e) => setState(e.target.value)}>
          <option value="">any</option>{states.map((s) => <option>{s}</option>)}</select></label>
        <label>Function <input data-testid="task-function" value={fn} onInput={(e) => setFn(e.target.value)} /></label>
        <label>Job <input data-testid="task-job" placeholder="16 hex digits" value={job} onInput={(e) => setJob(e.target.value)} /></label>
      </div>
      <Table testid="tasks" rows={[...shown].reverse().slice(0, 500)} cols={[
        ['task', (t) => <code>{t.task_id}</code>], ['function', (t) => t.function],
        ['state', (t) => t.state], ['worker', (t) => t.worker || ''],
        ['queued', (t) => (t.queued_ms != null ? `${t.queued_ms.toFixed(1)} ms` : '')],
        ['ran', (t) => (t.run_ms != null ? `${t.run_ms.toFixed(1)} ms` : '')],
        ['error', (t) => t.error || ''],
      ]} />
    </div>
  );
}
