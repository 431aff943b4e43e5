// Objects: the objects of every node's store, the newest first.
import { api, usePoll } from '../api.js';
import { ErrorBox, Table, Unreachable, bytes, time } from '../util.jsx';

export function Objects() {
  const { data, error } = usePoll(() => api('/v1/objects?limit=1000'));
  return (
    <div>
      <h2>Objects</h2>
      <ErrorBox error={error} />
      <Unreachable list={data && data.unreachable} />
      {data && <Table testid="objects" rows={data.objects} empty="no objects" cols={[
        ['object', (o) => <code>{o.id}</code>], ['size', (o) => bytes(o.size)],
        ['where', (o) => o.location], ['holders', (o) => o.holders],
        ['node', (o) => <code>{o.node_id}</code>], ['made', (o) => time(o.created_at)],
      ]} />}
      {data && data.next && <p class="muted">the newest {data.objects.length} shown</p>}
    </div>
  );
}
