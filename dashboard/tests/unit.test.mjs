// Unit tests of the page's pure parts (`node --test tests/unit.test.mjs`,
// run by `cargo xtask test`): the Prometheus parser and the latency
// quantiles estimated from histogram buckets, the invoke form's arguments,
// the Cluster page's transfer rates, the timeline's rows by node in natural
// order, a job's submitted options.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseMetrics } from '../src/metrics.js';
import { bucketsOf, deltaBuckets, quantile } from '../src/traffic.js';
import { argText, fieldKind } from '../src/args.js';
import { rates } from '../src/rates.js';
import { jobOptions, naturalCompare, timelineGroups, used } from '../src/cluster.js';

test('samples are parsed with their labels; comments skipped', () => {
  const text = '# HELP x y\n# TYPE wray_tasks gauge\nwray_tasks{state="RUNNING"} 3\n'
    + 'wray_http_requests_total{route="/v1/x",method="GET",status="200"} 7\nwray_object_store_bytes 0\n';
  const s = parseMetrics(text);
  assert.equal(s.length, 3);
  assert.deepEqual(s[0].labels, { state: 'RUNNING' });
  assert.equal(s[0].value, 3);
  assert.equal(s[1].labels.route, '/v1/x');
  assert.equal(s[2].name, 'wray_object_store_bytes');
});

test('quantiles interpolate within the bucket, as histogram_quantile does', () => {
  // 100 requests: 50 under 1 ms, 40 more under 2 ms, 10 more under 4 ms.
  const buckets = [[0.001, 50], [0.002, 90], [0.004, 100], [Infinity, 100]];
  assert.equal(quantile(0.5, buckets), 0.001);
  assert.ok(Math.abs(quantile(0.7, buckets) - 0.0015) < 1e-12);
  assert.ok(Math.abs(quantile(0.99, buckets) - 0.0038) < 1e-12);
  assert.equal(quantile(0.5, [[0.001, 0], [Infinity, 0]]), null);
  // Past the last finite bound: that bound.
  assert.equal(quantile(0.99, [[0.001, 1], [Infinity, 10]]), 0.001);
});

test("a parameter's field kind comes from its schema's type; anything else is JSON", () => {
  assert.equal(fieldKind('{"type":"integer","format":"int64"}'), 'integer');
  assert.equal(fieldKind('{"type":"string"}'), 'string');
  assert.equal(fieldKind('{"type":"boolean"}'), 'boolean');
  assert.equal(fieldKind('{"type":"array","items":{}}'), 'json');
  assert.equal(fieldKind('{"type":["string","null"]}'), 'json');
  assert.equal(fieldKind('not json'), 'json');
});

test('arguments keep numbers exactly as written and name the bad field', () => {
  assert.equal(argText('integer', 'x', ' 18446744073709551615 '), '18446744073709551615');
  assert.equal(argText('number', 'x', '-1.5e3'), '-1.5e3');
  assert.equal(argText('string', 's', 'a "q"'), '"a \\"q\\""');
  assert.equal(argText('boolean', 'b', 'true'), 'true');
  assert.equal(argText('json', 'v', '[1, {"a": 2}]'), '[1, {"a": 2}]');
  assert.throws(() => argText('integer', 'x', '1.5'), /x: an integer/);
  assert.throws(() => argText('integer', 'x', ''), /x: an integer/);
  assert.throws(() => argText('number', 'y', 'NaN'), /y: a number/);
  assert.throws(() => argText('json', 'v', '{'), /v: not JSON/);
});

test('transfer rates are bytes per second between two reads; none for a new or restarted node', () => {
  const prev = { at: 1000, nodes: { a: { sent: 100, received: 0 }, b: { sent: 50, received: 50 } } };
  const now = [
    { node_id: 'a', object_bytes_sent: 2100, object_bytes_received: 1000 },
    { node_id: 'b', object_bytes_sent: 10, object_bytes_received: 60 },
    { node_id: 'c', object_bytes_sent: 5, object_bytes_received: 5 },
  ];
  const r = rates(prev, now, 3000);
  assert.deepEqual(r.a, { sent: 1000, received: 500 });
  assert.equal(r.b, null);
  assert.equal(r.c, null);
  assert.deepEqual(rates(null, now, 3000).a, null);
});

test('histogram buckets are summed over other labels and differenced by bound', () => {
  const all = parseMetrics('h_bucket{route="a",le="0.001"} 1\nh_bucket{route="b",le="0.001"} 2\n'
    + 'h_bucket{route="a",le="+Inf"} 4\nh_bucket{route="b",le="+Inf"} 6\nh_count 10\n');
  const now = bucketsOf(all, 'h');
  assert.deepEqual(now, [[0.001, 3], [Infinity, 10]]);
  assert.deepEqual(deltaBuckets([[0.001, 1], [Infinity, 4]], now), [[0.001, 2], [Infinity, 6]]);
});

test('names sort as people count: digits as numbers', () => {
  const names = ['wray-worker-10', 'wray-http-2', 'wray-worker-2', 'wray-worker-1', 'wray-http-10', 'scheduler', 'wray-worker-002'];
  assert.deepEqual([...names].sort(naturalCompare),
    ['scheduler', 'wray-http-2', 'wray-http-10', 'wray-worker-1', 'wray-worker-2', 'wray-worker-002', 'wray-worker-10']);
  assert.ok(naturalCompare('a99999999999999999999', 'a100000000000000000000') < 0);
  assert.equal(naturalCompare('x', 'x'), 0);
});

test("the timeline's rows are grouped by node, the scheduler first, workers in natural order", () => {
  const meta = (pid, tid, name) => ({ name: 'thread_name', ph: 'M', pid, tid, args: { name } });
  const trace = { traceEvents: [
    { name: 'process_name', ph: 'M', pid: 2, args: { name: 'wray node-b' } },
    { name: 'process_name', ph: 'M', pid: 1, args: { name: 'wray node-a' } },
    meta(1, 2, 'wray-worker-10'), meta(1, 1, 'wray-worker-9'), meta(1, 0, 'scheduler'),
    meta(2, 0, 'scheduler'), meta(2, 1, 'wray-worker-0'),
    // Thread ids repeat across nodes: each event stays with its own node.
    { name: 'f', cat: 'task', ph: 'X', pid: 2, tid: 1, ts: 100, dur: 5 },
    { name: 'g', cat: 'task', ph: 'X', pid: 1, tid: 1, ts: 90, dur: 50 },
  ] };
  const t = timelineGroups(trace);
  assert.deepEqual(t.groups.map((g) => g.name), ['node-a', 'node-b']);
  // Node ids are hex, sorted as text: `node-379..` before `node-9a..`.
  const ids = timelineGroups({ traceEvents: [
    { name: 'process_name', ph: 'M', pid: 1, args: { name: 'wray node-9ac3' } },
    { name: 'process_name', ph: 'M', pid: 2, args: { name: 'wray node-379d' } },
    meta(1, 0, 'scheduler'), meta(2, 0, 'scheduler'),
  ] });
  assert.deepEqual(ids.groups.map((g) => g.name), ['node-379d', 'node-9ac3']);
  assert.deepEqual(t.groups[0].rows.map((r) => r.name), ['scheduler', 'wray-worker-9', 'wray-worker-10']);
  assert.deepEqual(t.groups[0].rows[1].events.map((e) => e.name), ['g']);
  assert.deepEqual(t.groups[1].rows[1].events.map((e) => e.name), ['f']);
  assert.deepEqual([t.start, t.end], [90, 140]);
  assert.deepEqual(timelineGroups(null), { groups: [], start: 0, end: 1 });
});

test("a job's submitted options are listed, and only those it set", () => {
  const job = {
    job_id: '0123456789abcdef', component: 'wc', args: ['x'], status: 'RUNNING', node_id: 'node-a',
    submitted_at: 1, log_bytes: 0, driver_task: 't', message: null, start_time: null, end_time: null,
    dirs: [{ host: '/srv/corpus', guest: '/data' }], env: { LANG: 'C' }, num_cpus: 2, num_gpus: null,
    resources: { accelerator: 1 }, timeout: 60, metadata: { team: 'a' },
    working_dir: { hash: 'abc', bytes: 10 },
  };
  assert.deepEqual(jobOptions(job), [
    ['dir', '/srv/corpus → /data'], ['env', 'LANG=C'], ['num cpus', '2'],
    ['resource', 'accelerator: 1'], ['timeout', '60 s'], ['metadata', 'team=a'],
    ['working dir', '{"hash":"abc","bytes":10}'],
  ]);
  assert.deepEqual(jobOptions({ job_id: 'x', dirs: [], env: {}, resources: {}, metadata: {} }), []);
});

test('resources in use are the total less what is free', () => {
  assert.deepEqual(used({ CPU: 3, memory: 10 }, { CPU: 1 }), { CPU: 2, memory: 10 });
});
