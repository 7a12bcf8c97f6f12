// The page's shared core: DOM helpers, the API client and the page state.
// Everything the model wrote reaches the DOM as text (h() makes text nodes), except assistant
// markdown, which the server renders and sanitises (`html` on assistant/message events with
// ?render=html).

export const $ = (sel, root = document) => root.querySelector(sel);

// h('div.a.b', {title: 'x', onclick: f}, child, 'text', ...): an element; strings become text.
export function h(tag, attrs, ...kids) {
  const [name, ...classes] = tag.split('.');
  const el = document.createElement(name || 'div');
  if (classes.length) el.className = classes.join(' ');
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v == null || v === false) continue;
      if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else if (k === 'text') el.textContent = v;
      else el.setAttribute(k, v === true ? '' : v);
    }
  }
  for (const kid of kids.flat()) {
    if (kid == null || kid === false) continue;
    el.append(typeof kid === 'string' ? document.createTextNode(kid) : kid);
  }
  return el;
}

// ---- API --------------------------------------------------------------------------------

export class ApiError extends Error {
  constructor(status, code, message) { super(message || code); this.status = status; this.code = code; }
}

export async function call(method, path, body) {
  const init = { method, credentials: 'same-origin', headers: {} };
  if (method !== 'GET') {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body || {});
  }
  let res;
  try { res = await fetch(path, init); } catch (e) { throw new ApiError(0, 'network', 'the dsh web server is not reachable'); }
  const text = await res.text();
  let value = null;
  try { value = text ? JSON.parse(text) : null; } catch (_) { /* not JSON */ }
  if (!res.ok) {
    const err = value && value.error ? value.error : {};
    if (res.status === 401) showLocked();
    throw new ApiError(res.status, err.code || String(res.status), err.message || `HTTP ${res.status}`);
  }
  return value;
}
export const get = (path) => call('GET', path);
export const post = (path, body) => call('POST', path, body);
export const enc = encodeURIComponent;

// ---- page state --------------------------------------------------------------------------

export const state = {
  sessions: [],       // the host event stream's list (sidebar.js)
  filter: '',
  cwd: null,          // the workspace new sessions start in
  view: null,         // the open SessionView
  models: null,
};

export function banner(text) {
  const el = $('#banner');
  el.textContent = text || '';
  el.hidden = !text;
}

export function showLocked() {
  banner('Not signed in: open the URL `dsh web` printed (it carries the token).');
}

export const titleOf = (s) => s.title || (s.id ? s.id.replace(/^session-/, '').slice(0, 8) : 'session');
export const baseName = (p) => (p || '').replace(/\/+$/, '').split('/').pop() || p || '';
