// The node's HTTP traffic over the last minutes, from `/metrics` samples
// kept while a page that reads them is shown: requests per second and the
// p50/p99 latency of the requests in the window, estimated from the
// `wray_http_request_duration_seconds` histogram's buckets as Prometheus's
// `histogram_quantile` does (linear within the bucket).
import { parseMetrics } from './metrics.js';

/** How far back the window reaches, in seconds. */
export const WINDOW_S = 300;

/** `{time, requests, buckets: [[le, count]]}` per sample, oldest first. */
const samples = [];

/**
 * The buckets of histogram `name` among `samples` (parsed metrics), summed
 * over its other labels: [[le, cumulative count]], by `le`.
 */
export function bucketsOf(samples, name) {
  const byLe = new Map();
  for (const s of samples) {
    if (s.name === `${name}_bucket`) {
      const le = s.labels.le === '+Inf' ? Infinity : Number(s.labels.le);
      byLe.set(le, (byLe.get(le) || 0) + s.value);
    }
  }
  return [...byLe].sort((a, b) => a[0] - b[0]);
}

/** The counts added from buckets `before` to `after` (same bounds). */
export function deltaBuckets(before, after) {
  const then = new Map(before);
  return after.map(([le, c]) => [le, c - (then.get(le) || 0)]);
}

/** Keeps a sample of `text` (Prometheus text) taken now. */
export function record(text) {
  const all = parseMetrics(text);
  let requests = 0;
  for (const s of all) {
    if (s.name === 'wray_http_requests_total') requests += s.value;
  }
  const buckets = bucketsOf(all, 'wray_http_request_duration_seconds');
  const time = Date.now() / 1000;
  samples.push({ time, requests, buckets });
  while (samples.length && samples[0].time < time - WINDOW_S) samples.shift();
}

/** The `q` quantile (0..1) of the counts `buckets` ([[le, cumulative count]]), in seconds. */
export function quantile(q, buckets) {
  const total = buckets.length ? buckets[buckets.length - 1][1] : 0;
  if (!total) return null;
  const rank = q * total;
  let prevLe = 0;
  let prevCount = 0;
  for (const [le, count] of buckets) {
    if (count >= rank) {
      if (!isFinite(le)) return prevLe;
      return prevLe + (le - prevLe) * ((rank - prevCount) / Math.max(1e-9, count - prevCount));
    }
    prevLe = le;
    prevCount = count;
  }
  return prevLe;
}

/**
 * `{times, rates}` (requests per second between samples) and the window's
 * `p50`, `p99` (seconds, or null with no requests in it).
 */
export function traffic() {
  const times = [];
  const rates = [];
  for (let i = 1; i < samples.length; i++) {
    const dt = samples[i].time - samples[i - 1].time;
    times.push(samples[i].time);
    rates.push(dt > 0 ? (samples[i].requests - samples[i - 1].requests) / dt : 0);
  }
  let p50 = null;
  let p99 = null;
  if (samples.length >= 2) {
    const delta = deltaBuckets(samples[0].buckets, samples[samples.length - 1].buckets);
    p50 = quantile(0.5, delta);
    p99 = quantile(0.99, delta);
  }
  return { times, rates, p50, p99 };
}
