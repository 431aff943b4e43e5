// Cluster: every node, alive or dead, with its resources, object store and
// object transfer rates (each node's byte counters, `object_bytes_sent` and
// `object_bytes_received`, over the time between two refreshes).
import { useRef } from 'preact/hooks';
import { api, usePoll } from '../api.js';
import { ErrorBox, Table, bytes, resources } from '../util.jsx';
import { rates } from '../rates.js';

const rate = (r) => (r == null ? '–' : `${bytes(Math.round(r))}/s`);

export function Cluster() {
  const last = useRef(null);
  const { data, error } = usePoll(async () => {
    const nodes = await api('/v1/nodes');
    const at = Date.now();
    const r = rates(last.current, nodes, at);
    last.current = { at, nodes: Object.fromEntries(nodes.map((n) => [n.node_id, { sent: n.object_bytes_sent, received: n.object_bytes_received }])) };
    return { nodes, rates: r };
  });
  return (
    <div>
      <h2>Cluster</h2>
      <ErrorBox error={error} />
      {data && <Table testid="nodes" rows={data.nodes} cols={[
        ['node', (n) => <code>{n.node_id}</code>],
        ['state', (n) => n.alive && n.unusable
          ? <span class="bad" data-unusable={n.unusable} title={n.unusable_reason || ''}>alive ({n.state}), not placed on: {n.unusable}</span>
          : <span class={n.alive ? 'ok' : 'bad'}>{n.alive ? 'alive' : 'dead'} ({n.state})</span>],
        ['address', (n) => n.http_address || n.address || ''],
        ['resources', (n) => resources(n.resources)], ['free', (n) => resources(n.resources_available)],
        ['GPUs', (n) => n.gpus.map((g) => g.name).join(', ')],
        ['running', (n) => n.running_tasks],
        ['object store', (n) => `${bytes(n.object_store_used)} of ${bytes(n.object_store_capacity)}${n.object_store_spilled ? `, ${n.object_store_spilled} spilled` : ''}`],
        ['objects sent', (n) => <span data-sent={n.object_bytes_sent}>{rate(data.rates[n.node_id]?.sent)} <span class="muted">({bytes(n.object_bytes_sent)} in all)</span></span>],
        ['objects received', (n) => <span data-received={n.object_bytes_received}>{rate(data.rates[n.node_id]?.received)} <span class="muted">({bytes(n.object_bytes_received)} in all)</span></span>],
      ]} />}
    </div>
  );
}
