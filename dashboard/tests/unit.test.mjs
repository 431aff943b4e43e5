// Unit tests of the page's pure parts (`node --test tests/unit.test.mjs`,
// run by `cargo xtask test`): the Prometheus parser and the latency
// quantiles estimated from histogram buckets.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseMetrics } from '../src/metrics.js';
import { quantile } from '../src/traffic.js';

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
