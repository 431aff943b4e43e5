// Objects: the object store's objects, a page of them.
import { api, usePoll } from '../api.js';
import { ErrorBox, Table, bytes } from '../util.jsx';

export function Objects() {
  const { data, error } = usePoll(() => api('/v1/objects?limit=1000'));
  return (
    <div>
      <h2>Objects</h2>
      <ErrorBox error={error} />
      {data && <Table testid="objects" rows={data.objects} empty="no objects" cols={[
        ['object', (o) => <code>{o.id}</code>], ['size', (o) => bytes(o.size)],
        ['where', (o) => o.location], ['holders', (o) => o.holders],
      ]} />}
      {data && data.next && <p class="muted">more than {data.objects.length}</p>}
    </div>
  );
}
