// Functions: the deployed components, their versions (kept ones made
// current again) and exports, and a
// form that calls a function: one field per parameter, by its JSON Schema
// (or the whole argument array as JSON).
import { useState } from 'preact/hooks';
import { api, seg, usePoll } from '../api.js';
import { ErrorBox, bytes } from '../util.jsx';
import { argText, fieldKind } from '../args.js';

/** A JSON Schema (as text) named by its title (`int64`), or the text. */
const schemaName = (text) => {
  try { const s = JSON.parse(text); return s.title || s.type || text; } catch { return text; }
};

/** One input of a parameter, by the kind its schema gives. */
function Field({ param, kind, value, onInput }) {
  const name = `param-${param.name}`;
  const set = (e) => onInput(e.target.value);
  let input;
  if (kind === 'boolean') {
    input = <select name={name} value={value || 'false'} onChange={set}><option>false</option><option>true</option></select>;
  } else if (kind === 'json') {
    input = <textarea name={name} rows="2" value={value} onInput={set} placeholder="JSON" />;
  } else {
    input = <input name={name} inputmode={kind === 'string' ? 'text' : 'decimal'} value={value} onInput={set} />;
  }
  return <label data-param={param.name}>{param.name} <span class="muted">{schemaName(param.schema)}</span> {input}</label>;
}

function Invoke({ components }) {
  const fns = components.flatMap((c) => c.record.functions
    .filter((f) => f.kind === 'Function')
    .map((f) => ({ component: c.record.name, f })));
  const [pick, setPick] = useState('');
  const [values, setValues] = useState({});
  const [raw, setRaw] = useState(null);
  const [out, setOut] = useState(null);
  const [busy, setBusy] = useState(false);
  const chosen = fns.find((x) => `${x.component}/${x.f.name}` === pick) || fns[0];
  const params = chosen ? chosen.f.params.map((p) => ({ p, kind: fieldKind(p.schema) })) : [];
  const composed = () => `[${params.map(({ p, kind }) => argText(kind, p.name, values[p.name] ?? '')).join(', ')}]`;
  const choose = (value) => { setPick(value); setValues({}); setRaw(null); setOut(null); };
  const editRaw = (on) => {
    setOut(null);
    if (!on) { setRaw(null); return; }
    let text;
    try { text = composed(); } catch { text = '[]'; }
    setRaw(text);
  };
  const submit = async (e) => {
    e.preventDefault();
    if (!chosen) return;
    let args;
    try {
      args = raw ?? composed();
      JSON.parse(args);
    } catch (err) {
      setOut({ error: { code: 'bad_argument', message: raw == null ? err.message : `the arguments are not JSON: ${err.message}` } });
      return;
    }
    setBusy(true);
    try {
      const result = await api(`/v1/functions/${seg(chosen.component)}/${seg(chosen.f.name)}`, { method: 'POST', body: args });
      setOut({ result });
    } catch (error) { setOut({ error }); }
    setBusy(false);
  };
  return (
    <form class="invoke" onSubmit={submit} data-testid="invoke-form">
      <h3>Call a function</h3>
      <label>Function <select name="function" value={chosen ? `${chosen.component}/${chosen.f.name}` : ''}
        onChange={(e) => choose(e.target.value)}>
        {fns.map((x) => <option value={`${x.component}/${x.f.name}`}>{x.component}/{x.f.name}</option>)}
      </select></label>
      {raw == null && params.map(({ p, kind }) => (
        <Field param={p} kind={kind} value={values[p.name] ?? ''} onInput={(v) => setValues({ ...values, [p.name]: v })} />
      ))}
      {raw == null && chosen && params.length === 0 && <div class="muted">no parameters</div>}
      <label class="inline"><input type="checkbox" name="raw" checked={raw != null} onChange={(e) => editRaw(e.target.checked)} /> edit the arguments as one JSON array</label>
      {raw != null && <label>Arguments (a JSON array) <textarea name="args" rows="3" value={raw} onInput={(e) => setRaw(e.target.value)} /></label>}
      <button type="submit" disabled={busy || !chosen}>{busy ? 'Calling…' : 'Call'}</button>
      {out && out.error && <ErrorBox error={out.error} testid="invoke-error" />}
      {out && !out.error && <pre data-testid="invoke-result">{JSON.stringify(out.result, null, 2)}</pre>}
    </form>
  );
}

/** Deploy a component file under a name (`POST /v1/components?name=`). */
function Deploy({ onDone }) {
  const [out, setOut] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    const form = new FormData(e.target);
    const file = form.get('file');
    const name = form.get('name').trim();
    if (!file || !file.size || !name) {
      setOut({ error: { code: 'missing', message: 'choose a component file and a name' } });
      return;
    }
    setBusy(true);
    try {
      const info = await api(`/v1/components?name=${seg(name)}`, { method: 'POST', body: file, contentType: 'application/wasm' });
      // The same bytes deployed again make no new version (`new: false`).
      const same = info.new === false ? ' (the same bytes as before: no new version)' : '';
      setOut({ done: `deployed ${info.record.name} version ${info.version ?? '?'}${same}` });
      onDone();
    } catch (error) { setOut({ error }); }
    setBusy(false);
  };
  return (
    <form class="invoke" onSubmit={submit} data-testid="deploy-form">
      <h3>Deploy a component</h3>
      <label>Component (.wasm) <input name="file" type="file" accept=".wasm,application/wasm" /></label>
      <label>Name <input name="name" /></label>
      <button type="submit" disabled={busy}>{busy ? 'Deploying…' : 'Deploy'}</button>
      {out && out.error && <ErrorBox error={out.error} testid="deploy-error" />}
      {out && out.done && <div class="muted" data-testid="deploy-result">{out.done}</div>}
    </form>
  );
}

/**
 * A component's kept versions (`/v1/components/{name}/versions`), read when
 * opened, each but the current one with a button that makes it current
 * (`POST /v1/components/{name}/rollback?version=N`).
 */
function Versions({ name, current, onDone }) {
  const [list, setList] = useState(null);
  const [error, setError] = useState(null);
  const load = async () => {
    try { setList((await api(`/v1/components/${seg(name)}/versions`)).versions); setError(null); } catch (e) { setError(e); }
  };
  const rollback = async (v) => {
    try { await api(`/v1/components/${seg(name)}/rollback?version=${v}`, { method: 'POST' }); setError(null); } catch (e) { setError(e); }
    await load();
    onDone();
  };
  return (
    <details data-versions={name} onToggle={(e) => { if (e.target.open) load(); }}>
      <summary class="muted">versions kept</summary>
      <ErrorBox error={error} />
      {list && <ul>{list.slice().reverse().map((v) => (
        <li data-version={v.version}>version {v.version} · {new Date(v.deployed_ms).toLocaleString()} · {bytes(v.size)} · <code>{v.hash.slice(0, 12)}</code>
          {v.version === current ? <b> current</b>
            : <button data-rollback={`${name}@${v.version}`} onClick={(e) => { e.preventDefault(); rollback(v.version); }}>Make current</button>}</li>
      ))}</ul>}
    </details>
  );
}

/** Undeploy, asked twice: the first click arms, the second undeploys. */
function Undeploy({ name, onDone, onError }) {
  const [armed, setArmed] = useState(false);
  const click = async (e) => {
    e.preventDefault();
    if (!armed) { setArmed(true); return; }
    try { await api(`/v1/components/${seg(name)}`, { method: 'DELETE' }); onDone(); } catch (err) { onError(err); }
    setArmed(false);
  };
  return <button class="danger" data-undeploy={name} onClick={click}>{armed ? `Undeploy ${name}?` : 'Undeploy'}</button>;
}

export function Functions() {
  const { data, error, reload } = usePoll(() => api('/v1/components?limit=1000'), [], 5000);
  const [undeployError, setUndeployError] = useState(null);
  const components = data ? data.components : [];
  return (
    <div>
      <h2>Functions</h2>
      <ErrorBox error={error || undeployError} />
      <div data-testid="components">
        {components.map((c) => (
          <details class="component" open data-component={c.record.name}>
            <summary><b>{c.record.name}</b> version {c.version ?? '?'} · {bytes(c.record.size)} · {c.record.sdk}
              {c.record.has_main && ' · has main'}{' '}
              <Undeploy name={c.record.name} onDone={() => { setUndeployError(null); reload(); }} onError={setUndeployError} /></summary>
            <ul>{c.record.functions.map((f) => (
              <li data-export={f.name}><code>{f.class && f.kind === 'ActorMethod' ? `${f.class}.` : ''}{f.name}({f.params.map((p) => `${p.name}: ${schemaName(p.schema)}`).join(', ')}){f.returns.length ? ` → ${f.returns.map(schemaName).join(', ')}` : ''}</code>
                <span class="muted"> {f.kind === 'ActorClass' ? 'actor class' : f.kind === 'ActorMethod' ? 'method' : ''}</span></li>
            ))}</ul>
            <Versions name={c.record.name} current={c.version} onDone={reload} />
          </details>
        ))}
        {data && components.length === 0 && <p class="muted">nothing deployed</p>}
      </div>
      {data && <Invoke components={components} />}
      <Deploy onDone={reload} />
    </div>
  );
}
