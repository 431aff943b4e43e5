// The dashboard: a login form, then pages chosen by the URL's hash
// (`#/jobs/3`), each reading the node's public HTTP API.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, clearToken, setToken, token, whenUnauthorized } from './api.js';
import { Overview } from './pages/overview.jsx';
import { Functions } from './pages/functions.jsx';
import { Jobs, Job } from './pages/jobs.jsx';
import { Tasks } from './pages/tasks.jsx';
import { Actors } from './pages/actors.jsx';
import { Objects } from './pages/objects.jsx';
import { Metrics } from './pages/metrics.jsx';
import { Cluster } from './pages/cluster.jsx';
import { Logs } from './pages/logs.jsx';

/** The pages of the menu: hash, title, component. */
const PAGES = [
  ['overview', 'Overview', Overview],
  ['functions', 'Functions', Functions],
  ['jobs', 'Jobs', Jobs],
  ['tasks', 'Tasks', Tasks],
  ['actors', 'Actors', Actors],
  ['objects', 'Objects', Objects],
  ['metrics', 'Metrics', Metrics],
  ['cluster', 'Cluster', Cluster],
  ['logs', 'Logs', Logs],
];

/** The hash's path segments: `#/jobs/3` is `['jobs', '3']`. */
const route = () => location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);

function Login({ onLogin }) {
  const [error, setError] = useState(null);
  const submit = async (e) => {
    e.preventDefault();
    const t = new FormData(e.target).get('token').trim();
    try {
      await api('/v1/nodes', { tokenOverride: t });
      setToken(t);
      onLogin();
    } catch (err) {
      setError(err.status === 401 ? 'the node refused this token' : `the node did not answer: ${err.message}`);
    }
  };
  return (
    <form class="login" onSubmit={submit} data-testid="login">
      <h1>wray</h1>
      <label>Token <input name="token" type="password" autocomplete="current-password" autofocus /></label>
      <p class="muted">The node's token is the file <code>token</code> in its directory (<code>&lt;tmp&gt;/wray/node_latest/token</code>).</p>
      <button type="submit">Log in</button>
      {error && <div class="error" data-testid="login-error">{error}</div>}
    </form>
  );
}

function App() {
  const [loggedIn, setLoggedIn] = useState(!!token());
  const [path, setPath] = useState(route());
  useEffect(() => {
    // A node started with `--no-auth` answers without a token: no login.
    if (!token()) api('/v1/nodes', { tokenOverride: '' }).then(() => setLoggedIn(true), () => {});
  }, []);
  useEffect(() => {
    const f = () => setPath(route());
    addEventListener('hashchange', f);
    whenUnauthorized(() => { clearToken(); setLoggedIn(false); });
    return () => removeEventListener('hashchange', f);
  }, []);
  if (!loggedIn) return <Login onLogin={() => setLoggedIn(true)} />;
  const [name = 'overview', ...rest] = path;
  let Page = (PAGES.find(([h]) => h === name) || PAGES[0])[2];
  if (name === 'jobs' && rest.length) Page = Job;
  return (
    <div class="shell">
      <nav>
        <b>wray</b>
        {PAGES.map(([h, title]) => <a href={`#/${h}`} class={h === name ? 'on' : ''}>{title}</a>)}
        <a href="#/" class="logout" onClick={() => { clearToken(); setLoggedIn(false); }}>Log out</a>
      </nav>
      <main data-page={name}><Page args={rest} /></main>
    </div>
  );
}

render(<App />, document.getElementById('app'));
