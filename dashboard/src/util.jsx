// Small shared pieces: error boxes, tables, formatting.

/** Bytes as `1.2 MiB`. */
export function bytes(n) {
  if (n == null) return '';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${i ? n.toFixed(1) : n} ${units[i]}`;
}

/** Seconds since the epoch as a local time. */
export const time = (s) => (s ? new Date(s * 1000).toLocaleTimeString() : '');

/** A duration in seconds, from `a` to `b` (or now). */
export const duration = (a, b) => (a ? `${((b || Date.now() / 1000) - a).toFixed(1)} s` : '');

/** An API error, with the cause chain of a failed task. */
export function ErrorBox({ error, testid = 'error' }) {
  if (!error) return null;
  const task = error.task;
  return (
    <div class="error" data-testid={testid}>
      <b>{error.code}</b>: {error.message}
      {task && (
        <ul class="causes">
          <li>{task.kind} in {task.function} ({task.task}): {task.message}</li>
          {(task.causes || []).map((c) => (
            <li>caused by {c.kind} in {c.function} ({c.task}): {c.message}</li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** A table of `rows` with `cols`: [heading, row => cell]. */
export function Table({ cols, rows, testid, empty = 'none' }) {
  return (
    <table data-testid={testid}>
      <thead><tr>{cols.map(([h]) => <th>{h}</th>)}</tr></thead>
      <tbody>
        {rows.length === 0 && <tr><td colSpan={cols.length} class="muted">{empty}</td></tr>}
        {rows.map((r) => <tr>{cols.map(([, f]) => <td>{f(r)}</td>)}</tr>)}
      </tbody>
    </table>
  );
}

/** A map of resources as `CPU 2, GPU 0`. */
export const resources = (m) => Object.entries(m || {})
  .map(([k, v]) => `${k} ${k === 'memory' || k.endsWith('_bytes') ? bytes(v) : +v.toFixed(3)}`).join(', ');

/** The nodes a cluster listing could not read (`unreachable`), if any. */
export function Unreachable({ list }) {
  if (!list || !list.length) return null;
  return (
    <div class="warn" data-testid="unreachable">
      {list.map((u) => <div>node <code>{u.node_id}</code> did not answer: {u.error}</div>)}
    </div>
  );
}

/** Seconds since the epoch as a local date and time. */
export const when = (s) => (s ? new Date(s * 1000).toLocaleString() : '');
