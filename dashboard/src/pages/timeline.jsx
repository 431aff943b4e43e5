// The timeline (Chrome trace JSON of `/v1/timeline`, the cluster's) drawn
// as SVG: a group of rows per node, in it the scheduler's row of waiting
// phases and one row per worker thread in natural order (`wray-worker-2`
// before `wray-worker-10`); zoomed with the mouse wheel or the buttons,
// panned by dragging.
import { useRef, useState } from 'preact/hooks';
import { api, usePoll } from '../api.js';
import { timelineGroups } from '../cluster.js';
import { ErrorBox, Unreachable } from '../util.jsx';

const ROW = 22;
const HEAD = 20;
const LABEL = 160;
const WIDTH = 1000;

/** The tasks of each node drawn (its latest). */
export const TIMELINE_TASKS = 2000;

const COLORS = { task: '#3b82f6', get: '#f59e0b', profile: '#10b981' };

export function Timeline() {
  const { data, error } = usePoll(() => api(`/v1/timeline?limit=${TIMELINE_TASKS}`), [], 5000);
  const [view, setView] = useState(null); // [from, to] in microseconds, or all
  const drag = useRef(null);
  const t = timelineGroups(data);
  const [from, to] = view || [t.start, Math.max(t.end, t.start + 1)];
  const x = (us) => LABEL + ((us - from) / (to - from)) * (WIDTH - LABEL);
  const zoom = (factor, at = 0.5) => {
    const span = (to - from) * factor;
    const mid = from + (to - from) * at;
    setView([mid - span * at, mid - span * at + span]);
  };
  const wheel = (e) => {
    e.preventDefault();
    const r = e.currentTarget.getBoundingClientRect();
    const at = Math.min(1, Math.max(0, ((e.clientX - r.left) * (WIDTH / r.width) - LABEL) / (WIDTH - LABEL)));
    zoom(e.deltaY > 0 ? 1.25 : 0.8, at);
  };
  const down = (e) => { drag.current = { x: e.clientX, from, to }; };
  const move = (e) => {
    const d = drag.current;
    if (!d) return;
    const r = e.currentTarget.getBoundingClientRect();
    const shift = ((e.clientX - d.x) * (WIDTH / r.width) / (WIDTH - LABEL)) * (d.to - d.from);
    setView([d.from - shift, d.to - shift]);
  };
  // Each group: a heading, then its rows.
  let y = 0;
  const placed = t.groups.map((g) => {
    const top = y;
    y += HEAD + g.rows.length * ROW;
    return { g, top };
  });
  const height = Math.max(1, y) + 20;
  return (
    <div class="timeline">
      <h3>Timeline</h3>
      <ErrorBox error={error} />
      <Unreachable list={data && data.unreachable} />
      <div class="filters">
        <button onClick={() => zoom(0.5)} data-testid="zoom-in">Zoom in</button>
        <button onClick={() => zoom(2)}>Zoom out</button>
        <button onClick={() => setView(null)}>Reset</button>
        <span class="muted">{((to - from) / 1000).toFixed(1)} ms shown; each node's latest {TIMELINE_TASKS} tasks; wheel to zoom, drag to pan</span>
      </div>
      <svg data-testid="timeline" viewBox={`0 0 ${WIDTH} ${height}`} width="100%" onWheel={wheel}
        onMouseDown={down} onMouseMove={move} onMouseUp={() => { drag.current = null; }} onMouseLeave={() => { drag.current = null; }}>
        <defs><clipPath id="lanes"><rect x={LABEL} y="0" width={WIDTH - LABEL} height={height} /></clipPath></defs>
        {placed.map(({ g, top }) => (
          <g class="tl-node" data-node={g.name} transform={`translate(0 ${top})`}>
            <text class="tl-head" x="4" y={HEAD - 6}>{g.name}</text>
            <line x1="0" x2={WIDTH} y1={HEAD - 1} y2={HEAD - 1} stroke="#999" />
            {g.rows.map((r, i) => (
              <g class="tl-row" data-worker={r.name} transform={`translate(0 ${HEAD + i * ROW})`}>
                <text x="12" y={ROW - 7}>{r.name}</text>
                <line x1={LABEL} x2={WIDTH} y1={ROW} y2={ROW} stroke="#ddd" />
                <g clip-path="url(#lanes)">
                  {r.events.map((e) => (
                    <rect x={x(e.ts)} y={e.cat === 'task' ? 3 : e.cat === 'get' ? 9 : 6} height={e.cat === 'task' ? ROW - 6 : 8}
                      width={Math.max(1, x(e.ts + e.dur) - x(e.ts))} fill={COLORS[e.cat] || '#9ca3af'}>
                      <title>{e.name} ({(e.dur / 1000).toFixed(2)} ms) {e.args && e.args.task_id}</title>
                    </rect>
                  ))}
                </g>
              </g>
            ))}
          </g>
        ))}
      </svg>
    </div>
  );
}
