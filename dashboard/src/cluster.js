// Pure helpers of the cluster's views (unit-tested in tests/unit.test.mjs):
// names sorted as people count (`wray-worker-2` before `wray-worker-10`),
// the timeline's rows grouped by node, a job's submitted options, and the
// resources in use.

/**
 * `a` against `b`, runs of digits compared as numbers: negative when `a`
 * comes first.
 */
export function naturalCompare(a, b) {
  const parts = (s) => String(s).match(/\d+|\D+/g) || [];
  const pa = parts(a);
  const pb = parts(b);
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    const x = pa[i];
    const y = pb[i];
    const digits = /^\d/.test(x) && /^\d/.test(y);
    if (digits) {
      // Compared as numbers of any length: by length once leading zeros go.
      const nx = x.replace(/^0+(?=\d)/, '');
      const ny = y.replace(/^0+(?=\d)/, '');
      if (nx.length !== ny.length) return nx.length - ny.length;
      if (nx !== ny) return nx < ny ? -1 : 1;
    } else if (x !== y) {
      return x < y ? -1 : 1;
    }
  }
  return pa.length - pb.length;
}

/**
 * The rows of a Chrome trace (`/v1/timeline`), grouped by process (a node
 * each): `{groups: [{pid, name, rows: [{tid, name, events}]}], start, end}`.
 * Groups by node id; in each, the `scheduler` row first, then the workers in
 * natural order. `start` and `end` bound every event, in microseconds.
 */
export function timelineGroups(trace) {
  const procs = new Map();
  const threads = new Map();
  const events = new Map();
  let start = Infinity;
  let end = -Infinity;
  for (const e of (trace && trace.traceEvents) || []) {
    const key = `${e.pid}/${e.tid}`;
    if (e.ph === 'M' && e.name === 'process_name') procs.set(e.pid, e.args.name);
    else if (e.ph === 'M' && e.name === 'thread_name') threads.set(key, { pid: e.pid, tid: e.tid, name: e.args.name });
    else if (e.ph === 'X') {
      if (!events.has(key)) events.set(key, []);
      events.get(key).push(e);
      start = Math.min(start, e.ts);
      end = Math.max(end, e.ts + e.dur);
    }
  }
  const groups = new Map();
  for (const [key, t] of threads) {
    if (!groups.has(t.pid)) {
      const name = String(procs.get(t.pid) || `process ${t.pid}`).replace(/^wray /, '');
      groups.set(t.pid, { pid: t.pid, name, rows: [] });
    }
    groups.get(t.pid).rows.push({ tid: t.tid, name: t.name, events: events.get(key) || [] });
  }
  const rank = (r) => (r.name === 'scheduler' ? 0 : 1);
  // Node ids are hex: their digits are no numbers to count by.
  const out = [...groups.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const g of out) g.rows.sort((a, b) => rank(a) - rank(b) || naturalCompare(a.name, b.name));
  return { groups: out, start: isFinite(start) ? start : 0, end: isFinite(end) ? end : 1 };
}

/** The fields of a job's info that are not options it was submitted with. */
const JOB_INFO = new Set(['job_id', 'component', 'args', 'status', 'message', 'submitted_at',
  'start_time', 'end_time', 'driver_task', 'node_id', 'log_bytes']);

/** A value of an option as text. */
const shown = (v) => (typeof v === 'string' ? v : JSON.stringify(v));

/**
 * A job's submitted options as `[label, text]` rows, only those it set:
 * environment variables, directories, working directory, the driver's
 * resources, its time limit, its metadata, and any other option the node
 * reports.
 */
export function jobOptions(job) {
  const rows = [];
  const rest = Object.entries(job || {}).filter(([k]) => !JOB_INFO.has(k));
  for (const [key, value] of rest) {
    if (value == null) continue;
    if (key === 'env' || key === 'metadata') {
      for (const [k, v] of Object.entries(value)) rows.push([key, `${k}=${v}`]);
    } else if (key === 'dirs') {
      for (const d of value) rows.push(['dir', `${d.host} → ${d.guest}`]);
    } else if (key === 'resources') {
      for (const [k, v] of Object.entries(value)) rows.push(['resource', `${k}: ${v}`]);
    } else if (key === 'timeout') {
      rows.push(['timeout', `${value} s`]);
    } else if (Array.isArray(value) ? value.length : typeof value === 'object' ? Object.keys(value).length : true) {
      rows.push([key.replace(/_/g, ' '), shown(value)]);
    }
  }
  return rows;
}

/** What of each resource is in use: `total` less `available`. */
export function used(total, available) {
  const out = {};
  for (const [k, v] of Object.entries(total || {})) out[k] = v - ((available || {})[k] ?? 0);
  return out;
}
