// Actors: the cluster's actors (Ray's list_actors), live and recently
// dead, the newest first, each as its own node says, each live one with a
// kill button; a job's page shows its own (`job`).
import { useState } from 'preact/hooks';
import { api, seg, usePoll } from '../api.js';
import { ErrorBox, Table, Unreachable } from '../util.jsx';

/** The table of `/v1/actors` (of job `job` when given), the newest 1000. */
export function ActorTable({ job }) {
  const query = job ? `&job=${encodeURIComponent(job)}` : '';
  const { data, error, reload } = usePoll(() => api(`/v1/actors?limit=1000${query}`), [job]);
  const [killError, setKillError] = useState(null);
  const kill = async (id) => {
    try { await api(`/v1/actors/${seg(id)}`, { method: 'DELETE' }); setKillError(null); } catch (e) { setKillError(e); }
    reload();
  };
  return (
    <div>
      <ErrorBox error={error || killError} />
      <Unreachable list={data && data.unreachable} />
      {data && <Table testid={job ? 'job-actors' : 'actors'} rows={data.actors} empty="no actors" cols={[
        ['actor', (a) => <code data-actor={a.actor}>{a.actor}</code>],
        ['class', (a) => a.class], ['component', (a) => a.component],
        ['state', (a) => <span data-state={a.state} class={a.state === 'DEAD' ? 'bad' : 'ok'} title={a.death_cause || ''}>{a.state}</span>],
        ['calls', (a) => <span data-calls={a.calls}>{a.calls}{a.queued ? ` (+${a.queued} queued)` : ''}</span>],
        ['name', (a) => a.name || ''], ['job', (a) => <a href={`#/jobs/${a.job}`}>{a.job}</a>],
        ['node', (a) => <code>{a.node_id}</code>],
        ['restarts', (a) => a.restarts],
        ['', (a) => a.state !== 'DEAD' && <button class="danger" data-kill={a.actor} onClick={() => kill(a.actor)}>Kill</button>],
      ]} />}
      {data && data.next && <p class="muted">the newest 1000 shown</p>}
    </div>
  );
}

export function Actors() {
  return (
    <div>
      <h2>Actors</h2>
      <ActorTable />
    </div>
  );
}
