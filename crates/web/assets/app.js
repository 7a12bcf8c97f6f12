// dsh web: the page. Plain JS, no framework, no build step; served from the binary.
// It speaks docs/web-api.md: JSON calls under /api/ with the HttpOnly cookie the server set
// when it exchanged the launch token, and one server-sent event stream per open session.
// Everything the model wrote reaches the DOM as text, except assistant markdown, which the
// server renders and sanitises (`html` on assistant/message events with ?render=html).
// The entry module: navigation, the composer and the page's wiring. The views are modules:
// core.js (DOM and API), sidebar.js, session.js, header.js, render.js.
import { $, get, post, enc, state, banner } from './core.js';
import { addSession, renderSidebar, setSidebarOpen, watchSessions } from './sidebar.js';
import { SessionView } from './session.js';
import { loadModels, resetHeader, wireHeader } from './header.js';

// ---- navigation and actions --------------------------------------------------------------

async function openSession(id) {
  setSidebarOpen(false);
  if (state.view && state.view.id === id) return;
  if (state.view) state.view.close();
  if (location.hash !== `#/s/${id}`) history.replaceState(null, '', `#/s/${id}`);
  $('#empty').hidden = true;
  $('#items').replaceChildren();
  $('#queue').replaceChildren();
  $('#meter').hidden = true;
  banner('');
  const view = new SessionView(id);
  state.view = view;
  resetHeader(id);
  const s = state.sessions.find((x) => x.id === id);
  if (s && s.cwd) state.cwd = s.cwd;
  renderSidebar();
  try { await view.open(); } catch (e) {
    if (state.view === view) banner(e.code === 'session_not_found' ? 'That session no longer exists.' : `Could not open the session: ${e.message}`);
  }
}

async function newSession() {
  try {
    const body = state.cwd ? { cwd: state.cwd } : {};
    const { session } = await post('/api/sessions', body);
    addSession(session);
    await openSession(session.id);
    $('#input').focus();
  } catch (e) { banner(`Could not start a session: ${e.message}`); }
}

async function send(mode) {
  const input = $('#input');
  const text = input.value;
  if (!text.trim()) return;
  if (!state.view) await newSession();
  const view = state.view;
  if (!view) return;
  input.value = '';
  autosize();
  try {
    await post(`/api/sessions/${enc(view.id)}/prompt`, { text, mode });
  } catch (e) {
    input.value = text;
    autosize();
    banner(`Not sent: ${e.message}`);
  }
}

function autosize() {
  const input = $('#input');
  input.style.height = 'auto';
  input.style.height = Math.min(input.scrollHeight + 2, window.innerHeight * 0.4) + 'px';
}

function wire() {
  wireHeader();
  $('#composer').addEventListener('submit', (e) => { e.preventDefault(); send('queue'); });
  $('#steer').addEventListener('click', () => send('steer'));
  $('#cancel').addEventListener('click', async () => {
    if (!state.view) return;
    try { await post(`/api/sessions/${enc(state.view.id)}/cancel`, {}); } catch (e) { banner(`Cancel failed: ${e.message}`); }
  });
  const input = $('#input');
  input.addEventListener('input', autosize);
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send(e.altKey || e.metaKey || e.ctrlKey ? 'steer' : 'queue');
    }
  });
  $('#new-session').addEventListener('click', newSession);
  $('#search').addEventListener('input', (e) => { state.filter = e.target.value; renderSidebar(); });
  $('#menu').addEventListener('click', () => setSidebarOpen(!$('#app').classList.contains('side-open')));
  $('#scrim').addEventListener('click', () => setSidebarOpen(false));
  $('#older button').addEventListener('click', () => state.view && state.view.loadOlder());
  $('#log').addEventListener('scroll', () => {
    if ($('#log').scrollTop < 200 && state.view) state.view.loadOlder();
  }, { passive: true });
  $('#model').addEventListener('change', async (e) => {
    if (!state.view) return;
    const [provider, ...rest] = e.target.value.split('/');
    try { await post(`/api/sessions/${enc(state.view.id)}/model`, { provider, model: rest.join('/') }); } catch (err) { banner(`Model not switched: ${err.message}`); }
  });
  $('#permission').addEventListener('change', async (e) => {
    if (!state.view) return;
    try { await post(`/api/sessions/${enc(state.view.id)}/permission`, { preset: e.target.value }); } catch (err) { banner(`Permission not switched: ${err.message}`); }
  });
  // Links in rendered markdown open in a new tab without handing the page to the target.
  $('#items').addEventListener('click', (e) => {
    const a = e.target.closest('.md a[href]');
    if (!a) return;
    e.preventDefault();
    window.open(a.href, '_blank', 'noopener,noreferrer');
  });
  window.addEventListener('hashchange', route);
}

function route() {
  const m = /^#\/s\/(.+)$/.exec(location.hash);
  if (m) openSession(decodeURIComponent(m[1]));
  else if (!state.view) $('#empty').hidden = false;
}

async function boot() {
  wire();
  // The server exchanged ?token= for the cookie with a redirect; should a token still be in
  // the address (an older server, a bookmark), drop it from the bar and the history.
  if (new URLSearchParams(location.search).has('token')) history.replaceState(null, '', '/' + location.hash);
  try {
    const host = await get('/api/host');
    state.cwd = host.cwd;
  } catch (e) { if (e.status !== 401) banner(`The dsh web server did not answer: ${e.message}`); return; }
  await watchSessions(openSession);
  loadModels();
  route();
}

boot();
