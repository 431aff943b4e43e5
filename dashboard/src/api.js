// The page's one way to the node: the public HTTP API (`/v1/...`,
// `/metrics`) with the bearer token kept in sessionStorage, and polling
// that stops while the tab is hidden.
import { useEffect, useRef, useState } from 'preact/hooks';

const KEY = 'wray-token';

/** The token of this tab's session, or null. */
export const token = () => sessionStorage.getItem(KEY);
/** Keeps `t` for this tab's session. */
export const setToken = (t) => sessionStorage.setItem(KEY, t);
/** Forgets the token (log out). */
export const clearToken = () => sessionStorage.removeItem(KEY);

/** An answer of the API that was not 2xx: its status, code, message and task failure. */
export class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${status}`);
    this.status = status;
    this.code = e.code || String(status);
    this.task = e.task || null;
  }
}

let onUnauthorized = () => {};
/** Calls `f` when the node answers 401 (the token is wrong or gone). */
export const whenUnauthorized = (f) => { onUnauthorized = f; };

/**
 * `fetch(path)` with the token; JSON answers parsed, text otherwise.
 * Throws ApiError for a non-2xx answer.
 */
export async function api(path, { method = 'GET', body, contentType = 'application/json', tokenOverride, signal } = {}) {
  // `X-Wray-Request`: what a node asks of a request that changes state
  // (a page of another site cannot send it unasked).
  const headers = { Authorization: `Bearer ${tokenOverride ?? token() ?? ''}`, 'X-Wray-Request': '1' };
  if (body !== undefined) headers['Content-Type'] = contentType;
  const res = await fetch(path, { method, headers, body, signal });
  const type = res.headers.get('content-type') || '';
  const data = type.includes('json') ? await res.json().catch(() => null) : await res.text();
  if (!res.ok) {
    if (res.status === 401 && tokenOverride === undefined) onUnauthorized();
    throw new ApiError(res.status, data);
  }
  return data;
}

/** The least time between two refreshes of a page, in milliseconds. */
export const MIN_REFRESH_MS = 2000;

/** Whether the tab is shown. */
const visible = () => document.visibilityState === 'visible';

/**
 * `{data, error, reload}` of `load()`, run now and every `everyMs` (at least
 * MIN_REFRESH_MS) while the tab is visible; never while it is hidden, and at
 * once when it is shown again.
 */
export function usePoll(load, deps = [], everyMs = MIN_REFRESH_MS) {
  const [state, setState] = useState({ data: null, error: null });
  const tick = useRef(0);
  const run = useRef(() => {});
  useEffect(() => {
    let timer = null;
    let alive = true;
    const period = Math.max(everyMs, MIN_REFRESH_MS);
    const go = async () => {
      clearTimeout(timer);
      timer = null;
      if (!alive || !visible()) return;
      const mine = ++tick.current;
      try {
        const data = await load();
        if (alive && mine === tick.current) setState({ data, error: null });
      } catch (error) {
        if (alive && mine === tick.current) setState((s) => ({ data: s.data, error }));
      }
      if (alive && visible() && timer === null) timer = setTimeout(go, period);
    };
    run.current = go;
    const shown = () => { if (visible()) go(); else { clearTimeout(timer); timer = null; } };
    document.addEventListener('visibilitychange', shown);
    go();
    return () => { alive = false; clearTimeout(timer); document.removeEventListener('visibilitychange', shown); };
  }, deps);
  return { ...state, reload: () => run.current() };
}

/** `path` with each segment percent-encoded. */
export const seg = (s) => encodeURIComponent(s);
