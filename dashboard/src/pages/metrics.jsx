// Metrics: the node's Prometheus series (`/metrics`), sampled every 2 s
// while the page is shown, drawn with uPlot: counters as rates per second,
// gauges as values.
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { api, usePoll } from '../api.js';
import { parseMetrics } from '../metrics.js';
import { ErrorBox } from '../util.jsx';

/** Samples kept per series (2 s apart: ten minutes). */
const KEEP = 300;

/**
 * The charts: title, metric name, whether it is a counter (drawn as a rate),
 * and the label its samples are summed by (one line per value).
 */
const CHARTS = [
  ['Tasks by state', 'wray_tasks', false, 'state'],
  ['HTTP requests per second, by status', 'wray_http_requests_total', true, 'status'],
  ['Instantiations per second', 'wray_instantiation_seconds_count', true, null],
  ['Object store bytes', 'wray_object_store_bytes', false, null],
  ['Jobs by status', 'wray_jobs', false, 'status'],
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
    for (const [title, name, counter, by] of CHARTS) {
      const group = (h.series[title] ||= {});
      const sums = new Map();
      for (const s of all.filter((x) => x.name === name)) {
        const key = by ? `${by}=${s.labels[by]}` : name;
        sums.set(key, (sums.get(key) || 0) + s.value);
      }
      for (const [key, value] of sums) {
        const prev = h.last.get(`${title}/${key}`);
        h.last.set(`${title}/${key}`, value);
        const v = counter ? (prev == null || dt <= 0 ? null : (value - prev) / dt) : value;
        (group[key] ||= new Array(h.times.length - 1).fill(null)).push(v);
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
        {CHARTS.map(([title]) => h.series[title] && Object.keys(h.series[title]).length > 0 &&
          <Chart title={title} times={h.times} series={h.series[title]} />)}
      </div>
    </div>
  );
}
