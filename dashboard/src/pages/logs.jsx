// Logs: a node's log (the end of its `node.log`, `/v1/logs?node=`) and the
// tasks whose output it keeps; a task picked shows what it wrote to stdout
// and stderr (`/v1/tasks/{id}/logs`, from whichever node has it).
import { useState } from 'preact/hooks';
import { api, seg, usePoll } from '../api.js';
import { ErrorBox, Table, bytes } from '../util.jsx';

/** Bytes of the log's end read. */
const LOG_BYTES = 65536;

function TaskOutput({ id }) {
  const { data, error } = usePoll(() => api(`/v1/tasks/${seg(id)}/logs`), [id], 5000);
  return (
    <div data-testid="task-output">
      <h3>Task <code>{id}</code>{data ? ` (${data.function})` : ''}</h3>
      <ErrorBox error={error} />
      {data && <div>
        <div class="muted">stdout</div><pre data-testid="task-stdout">{data.stdout}</pre>
        <div class="muted">stderr</div><pre data-testid="task-stderr">{data.stderr}</pre>
        {data.dropped > 0 && <div class="muted">{bytes(data.dropped)} more written and dropped</div>}
      </div>}
    </div>
  );
}

export function Logs() {
  const [node, setNode] = useState('');
  const [task, setTask] = useState(null);
  const { data: nodes } = usePoll(() => api('/v1/nodes'), [], 10000);
  const query = `?bytes=${LOG_BYTES}${node ? `&node=${encodeURIComponent(node)}` : ''}`;
  const { data, error } = usePoll(() => api(`/v1/logs${query}`), [query], 3000);
  return (
    <div>
      <h2>Logs</h2>
      <div class="filters">
        <label>Node <select data-testid="log-node" value={node} onChange={(e) => { setNode(e.target.value); setTask(null); }}>
          <option value="">this node</option>
          {(nodes || []).filter((n) => n.alive).map((n) => <option value={n.node_id}>{n.node_id}</option>)}</select></label>
        {data && <span class="muted">{data.file || 'no log file'}: {bytes(data.size)}, the last {bytes(data.size - data.offset)} shown</span>}
      </div>
      <ErrorBox error={error} />
      <div class="split">
        <div>
          <h3>Node log {data && <code data-testid="log-of">{data.node_id}</code>}</h3>
          <pre class="log" data-testid="node-log">{data ? data.text : ''}</pre>
        </div>
        <div>
          <h3>Tasks with output (the latest first)</h3>
          {data && <Table testid="output-tasks" rows={data.tasks} empty="no task output kept" cols={[
            ['task', (t) => <a href="#/logs" data-task={t.task_id} onClick={(e) => { e.preventDefault(); setTask(t.task_id); }}><code>{t.task_id}</code></a>],
            ['function', (t) => t.function], ['kept', (t) => bytes(t.bytes)],
            ['dropped', (t) => (t.dropped ? bytes(t.dropped) : '')],
          ]} />}
          {task && <TaskOutput id={task} />}
        </div>
      </div>
    </div>
  );
}
