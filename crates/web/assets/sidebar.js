// The sidebar: sessions by workspace, children under their parent, a running dot and a title
// search. The list comes from the host event stream (`/api/events`, docs/web-api.md): a
// snapshot, then each session created, changed or removed, here, in another tab, or by
// another process (a `dsh run` in a terminal).
import { $, h, state, titleOf, baseName } from './core.js';

let opener = () => {};
let cursor = null;
let retry = 0;

// Follows the host event stream; `open(id)` opens a session clicked in the list. Resolves
// once the first list has arrived (or the stream failed once), so a caller can route then.
export function watchSessions(open) {
  opener = open;
  return new Promise((ready) => connect(ready));
}

function upsert(session) {
  const at = state.sessions.findIndex((s) => s.id === session.id);
  if (at >= 0) state.sessions[at] = session;
  else state.sessions.unshift(session);
}

// On a drop, reconnect with backoff from the last cursor: only the changes missed come (or a
// fresh snapshot when the server has forgotten them or restarted).
function connect(ready) {
  const es = new EventSource(cursor ? `/api/events?after=${encodeURIComponent(cursor)}` : '/api/events');
  const seen = (m) => { if (m.lastEventId) cursor = m.lastEventId; };
  es.addEventListener('open', () => { retry = 0; });
  es.addEventListener('snapshot', (m) => {
    seen(m);
    state.sessions = JSON.parse(m.data).sessions || [];
    renderSidebar();
    if (ready) { ready(); ready = null; }
  });
  es.addEventListener('session', (m) => {
    seen(m);
    upsert(JSON.parse(m.data).session);
    renderSidebar();
  });
  es.addEventListener('session-removed', (m) => {
    seen(m);
    const { id } = JSON.parse(m.data);
    state.sessions = state.sessions.filter((s) => s.id !== id);
    renderSidebar();
  });
  es.addEventListener('error', () => {
    es.close();
    if (ready) { ready(); ready = null; }
    retry = Math.min(retry + 1, 6);
    setTimeout(() => connect(null), 250 * 2 ** (retry - 1));
  });
}

// A session this page just created, shown before the stream reports it.
export function addSession(session) {
  upsert(session);
  renderSidebar();
}

export function renderSidebar() {
  const nav = $('#sessions');
  const q = state.filter.trim().toLowerCase();
  const byId = new Map(state.sessions.map((s) => [s.id, s]));
  const children = new Map();
  for (const s of state.sessions) {
    if (s.parentId && byId.has(s.parentId)) {
      if (!children.has(s.parentId)) children.set(s.parentId, []);
      children.get(s.parentId).push(s);
    }
  }
  // A session shows when its title matches or a descendant's does (so the path stays visible).
  const shown = new Set();
  const matches = (s) => !q || titleOf(s).toLowerCase().includes(q);
  const visit = (s) => {
    let any = matches(s);
    for (const c of children.get(s.id) || []) any = visit(c) || any;
    if (any) shown.add(s.id);
    return any;
  };
  const roots = state.sessions.filter((s) => !s.parentId || !byId.has(s.parentId));
  roots.forEach(visit);
  const groups = new Map();
  for (const s of roots) {
    if (!shown.has(s.id)) continue;
    const key = s.cwd || '';
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(s);
  }
  const current = state.view && state.view.id;
  const row = (s) => {
    const kids = (children.get(s.id) || []).filter((c) => shown.has(c.id));
    return h('div', null,
      h('div.sess', {
        'data-id': s.id, title: titleOf(s), class: 'sess' + (s.id === current ? ' active' : ''),
        onclick: () => opener(s.id),
      }, h('span', { class: 'dot ' + (s.status || ''), title: s.status === 'waiting' ? 'waiting for an answer' : (s.status || '') }), h('span.t', { text: titleOf(s) }),
      s.origin ? h('span.n', { text: s.origin }) : null),
      kids.length ? h('div.children', null, kids.map(row)) : null);
  };
  const frag = document.createDocumentFragment();
  for (const [cwd, list] of groups) {
    frag.append(h('div.ws', null,
      h('div', { class: 'ws-name' + (cwd === state.cwd ? ' current' : ''), title: cwd, text: baseName(cwd) || 'workspace' }),
      list.map(row)));
  }
  if (!groups.size) frag.append(h('div.note', { text: q ? 'No session matches.' : 'No sessions yet.' }));
  nav.replaceChildren(frag);
}

export function setSidebarOpen(open) {
  $('#app').classList.toggle('side-open', open);
  $('#scrim').hidden = !open;
}
