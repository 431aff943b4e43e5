// Cluster: every node, alive or dead, with its resources.
import { api, usePoll } from '../api.js';
import { ErrorBox, Table, bytes, resources } from '../util.jsx';

export function Cluster() {
  const { data, error } = usePoll(() => api('/v1/nodes'));
  return (
    <div>
      <h2>Cluster</h2>
      <ErrorBox error={error} />
      {data && <Table testid="nodes" rows={data} cols={[
        ['node', (n) => <code>{n.node_id}</code>],
        ['state', (n) => <span class={n.alive ? 'ok' : 'bad'}>{n.alive ? 'alive' : 'dead'} ({n.state})</span>],
        ['address', (n) => n.http_address || n.address || ''],
        ['resources', (n) => resources(n.resources)], ['free', (n) => resources(n.resources_available)],
        ['GPUs', (n) => n.gpus.map((g) => g.name).join(', ')],
        ['running', (n) => n.running_tasks],
        ['object store', (n) => `${bytes(n.object_store_used)} of ${bytes(n.object_store_capacity)}`],
      ]} />}
    </div>
  );
}
