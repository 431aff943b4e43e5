// Actors: the actors created over HTTP, each with a kill button.
import { useState } from 'preact/hooks';
import { api, seg, usePoll } from '../api.js';
import { ErrorBox, Table } from '../util.jsx';

export function Actors() {
  const { data, error, reload } = usePoll(() => api('/v1/actors?limit=1000'));
  const [killError, setKillError] = useState(null);
  const kill = async (id) => {
    try { await api(`/v1/actors/${seg(id)}`, { method: 'DELETE' }); setKillError(null); } catch (e) { setKillError(e); }
    reload();
  };
  return (
    <div>
      <h2>Actors</h2>
      <ErrorBox error={error || killError} />
      {data && <Table testid="actors" rows={data.actors} empty="no actors" cols={[
        ['actor', (a) => <code data-actor={a.actor}>{a.actor}</code>], ['component', (a) => a.component],
        ['class', (a) => a.class],
        ['', (a) => <button class="danger" data-kill={a.actor} onClick={() => kill(a.actor)}>Kill</button>],
      ]} />}
    </div>
  );
}
