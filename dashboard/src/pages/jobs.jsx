// Jobs: the cluster's jobs, the newest first, and a job's page with its
// submitted options, its log following live (the `?follow=true` stream,
// resumed at `?offset=` when it breaks) and a stop button, its tasks and
// its actors.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, seg, token, usePoll } from '../api.js';
import { jobOptions } from '../cluster.js';
import { ErrorBox, Table, Unreachable, duration, time } from '../util.jsx';
import { ActorTable } from './actors.jsx';

export function Jobs() {
  const { data, error } = usePoll(() => api('/v1/jobs?limit=1000'));
  return (
    <div>
      <h2>Jobs</h2>
      <ErrorBox error={error} />
      <Unreachable list={data && data.unreachable} />
      {data && <Table testid="jobs" rows={data.jobs} cols={[
        ['job', (j) => <a href={`#/jobs/${j.job_id}`}>{j.job_id}</a>],
        ['component', (j) => j.component], ['args', (j) => j.args.join(' ')],
        ['status', (j) => j.status], ['node', (j) => <code>{j.node_id}</code>],
        ['submitted', (j) => time(j.submitted_at)],
        ['duration', (j) => duration(j.start_time, j.end_time)],
        ['log', (j) => `${j.log_bytes} B`],
      ]} />}
      {data && data.next && <p class="muted">the newest 1000 shown</p>}
    </div>
  );
}

/** Whether a job of `status` has ended. */
const ended = (status) => !['PENDING', 'RUNNING'].includes(status);

/** The log of job `id`, followed while `follow` holds. */
function useLog(id) {
  const [log, setLog] = useState('');
  const [error, setError] = useState(null);
  const offset = useRef(0);
  useEffect(() => {
    const stop = new AbortController();
    offset.current = 0;
    setLog('');
    const decoder = new TextDecoder();
    (async () => {
      // Follow; when the stream breaks before the job ends, go on from the offset.
      for (let tries = 0; tries < 100 && !stop.signal.aborted; tries++) {
        try {
          const res = await fetch(`/v1/jobs/${seg(id)}/logs?follow=true&offset=${offset.current}`,
            { headers: { Authorization: `Bearer ${token()}` }, signal: stop.signal });
          if (!res.ok) { setError({ code: String(res.status), message: (await res.json()).error.message }); return; }
          const reader = res.body.getReader();
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            offset.current += value.length;
            setLog((l) => l + decoder.decode(value, { stream: true }));
          }
          const job = await api(`/v1/jobs/${seg(id)}`, { signal: stop.signal });
          if (ended(job.status)) return;
        } catch (e) {
          if (stop.signal.aborted) return;
          setError(e);
        }
        await new Promise((r) => setTimeout(r, 2000));
      }
    })();
    return () => stop.abort();
  }, [id]);
  return { log, error };
}

/** The job's tasks on every node (`/v1/tasks?job=`), the newest 1000. */
function JobTasks({ id }) {
  const { data } = usePoll(() => api(`/v1/tasks?limit=1000&job=${encodeURIComponent(id)}`), [id]);
  if (!data) return null;
  const mine = data.tasks;
  return (
    <div>
      <h3>Tasks ({mine.length}{data.next ? '+, the newest 1000' : ''})</h3>
      <Unreachable list={data.unreachable} />
      <Table testid="job-tasks" rows={mine} empty="none listed" cols={[
        ['task', (t) => <code>{t.task_id}</code>], ['function', (t) => t.function],
        ['state', (t) => t.state], ['node', (t) => <code>{t.node_id}</code>], ['worker', (t) => t.worker || ''],
        ['ran', (t) => (t.run_ms != null ? `${t.run_ms.toFixed(1)} ms` : '')],
        ['error', (t) => t.error || ''],
      ]} />
    </div>
  );
}

export function Job({ args: [id] }) {
  const { data: job, error, reload } = usePoll(() => api(`/v1/jobs/${seg(id)}`), [id]);
  const { log, error: logError } = useLog(id);
  const [stopError, setStopError] = useState(null);
  const stop = async () => {
    try { await api(`/v1/jobs/${seg(id)}/stop`, { method: 'POST' }); reload(); } catch (e) { setStopError(e); }
  };
  return (
    <div>
      <h2>Job {id}</h2>
      <ErrorBox error={error || stopError || logError} />
      {job && (
        <div class="cards">
          <div class="card"><h3>Status</h3><div class="big" data-testid="job-status">{job.status}</div>
            {job.message && <div class="muted">{job.message}</div>}</div>
          <div class="card"><h3>Component</h3>{job.component} {job.args.join(' ')}
            <div class="muted">driver task {job.driver_task} on {job.node_id}</div></div>
          <div class="card"><h3>Time</h3>submitted {time(job.submitted_at)}<br />ran {duration(job.start_time, job.end_time)}</div>
        </div>
      )}
      {job && (
        <div>
          <h3>Submitted with</h3>
          <Table testid="job-options" rows={jobOptions(job)} empty="no options: the node's defaults" cols={[
            ['option', ([k]) => k], ['value', ([, v]) => <code data-option={v}>{v}</code>],
          ]} />
        </div>
      )}
      {job && !ended(job.status) && <button data-testid="stop-job" onClick={stop}>Stop</button>}
      <h3>Log</h3>
      <pre class="log" data-testid="job-log">{log}</pre>
      <JobTasks id={id} />
      <h3>Actors</h3>
      <ActorTable job={id} />
    </div>
  );
}
