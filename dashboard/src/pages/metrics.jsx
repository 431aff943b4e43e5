// Metrics: the node's Prometheus series (`/metrics`), sampled every 2 s
// while the page is shown, drawn with uPlot: counters as rates per second,
// gauges as values, histograms as their p50 and p99 between samples.
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { api, usePoll } from '../api.js';
import { parseMetrics } from '../metrics.js';
import { bucketsOf, deltaBuckets, quantile } from '../traffic.js';
import { ErrorBox } from '../util.jsx';

/** Samples kept per series (2 s apart: ten minutes). */
const KEEP = 300;

/**
 * The charts: title, metric name, whether it is a counter (drawn as a rate),
 * and the label its samples are summed by (one line per value).
 */
const CHARTS = [
  ['Tasks by state', 'wray_tasks', false, 'state'],
  ['Tasks ended per second', 'wray_tasks', true, 'state', (s) => s.labels.state === 'FINISHED' || s.labels.state === 'FAILED'],
  ['HTTP requests per second, by status', 'wray_http_requests_total', true, 'status'],
  ['Instantiations per second', 'wray_instantiation_seconds_count', true, null],
  ['Object store bytes', 'wray_object_store_bytes', false, null],
  ['Jobs by status', 'wray_jobs', false, 'status'],
  ['Object bytes between nodes per second', 'wray_cluster_object_bytes_sent_total', true, null],
];

/** The histograms drawn as their p50 and p99 between two samples (ms): title, metric. */
const LATENCIES = [
  ['Instantiation latency (ms)', 'wray_instantiation_seconds'],
  ['HTTP request latency (ms)', 'wray_http_request_duration_seconds'],
];

/** A uPlot line chart of `series` ({name: values}) over `times` (seconds). */
export function Chart({ title, times, series, width = 460, height = 200 }) {
  const el = useRef(null);
  const plot = useRef(null);
  const names = Object.keys(series).sort();
  const data = [times, ...names.map((n) => series[n])];
  useEffect(() => {
    if (!plot.current || plot.current.series.length !== names.length + 1) {
      if (plot.current) plot.current.destroy();
      plot.current = new uPlot({
        width, height, title,
        series: [{}, ...names.map((n, i) => ({ label: n, stroke: `hsl(${(i * 67) % 360} 70% 45%)`, width: 1.5 }))],
      }, data, el.current);
    } else {
      plot.current.setData(data);
    }
  });
  useEffect(() => () => plot.current && plot.current.destroy(), []);
  return <div class="chart" ref={el} data-chart={title} />;
}


export function Metrics() {
  const history = useRef({ times: [], last: new Map(), series: {} });
  const [, redraw] = useState(0);
  const { error } = usePoll(async () => {
    const text = await api('/metrics');
    const h = history.current;
    const now = Date.now() / 1000;
    const dt = h.times.length ? now - h.times[h.times.length - 1] : 0;
    h.times.push(now);
    const all = parseMetrics(text);
    const push = (group, key, v) => {
      (group[key] ||= new Array(h.times.length - 1).fill(null)).push(v);
    };
    for (const [title, name] of LATENCIES) {
      const group = (h.series[title] ||= {});
      const buckets = bucketsOf(all, name);
      const prev = h.last.get(title);
      h.last.set(title, buckets);
      const delta = prev && deltaBuckets(prev, buckets);
      for (const [key, q] of [['p50', 0.5], ['p99', 0.99]]) {
        const v = delta ? quantile(q, delta) : null;
        push(group, key, v == null ? null : v * 1000);
      }
    }
    for (const [title, name, counter, by, keep] of CHARTS) {
      const group = (h.series[title] ||= {});
      const sums = new Map();
      for (const s of all.filter((x) => x.name === name && (!keep || keep(x)))) {
        const key = by ? `${by}=${s.labels[by]}` : name;
        sums.set(key, (sums.get(key) || 0) + s.value);
      }
      for (const [key, value] of sums) {
        const prev = h.last.get(`${title}/${key}`);
        h.last.set(`${title}/${key}`, value);
        const v = counter ? (prev == null || dt <= 0 ? null : (value - prev) / dt) : value;
        push(group, key, v);
      }
      for (const arr of Object.values(group)) while (arr.length < h.times.length) arr.push(null);
    }
    if (h.times.length > KEEP) {
      h.times.shift();
      for (const g of Object.values(h.series)) for (const a of Object.values(g)) a.shift();
    }
    redraw((n) => n + 1);
    return true;
  });
  const h = history.current;
  return (
    <div>
      <h2>Metrics</h2>
      <ErrorBox error={error} />
      <p class="muted">Sampled from <code>/metrics</code> every 2 s while this page is open (<span data-testid="samples">{h.times.length}</span> samples).</p>
      <div class="charts" data-testid="charts">
        {[...CHARTS, ...LATENCIES].map(([title]) => h.series[title] && Object.keys(h.series[title]).length > 0 &&
          <Chart title={title} times={h.times} series={h.series[title]} />)}
      </div>
    </div>
  );
}
