// The top bar: the title (renamed in place), the goal line and its controls, and the model
// and permission pickers.
import { $, h, get, post, enc, state, banner } from './core.js';

// The open session's goal as last seen (null: none), for the goal controls.
let goal = null;

export function setTitle(title) {
  $('#title').textContent = title || 'dsh';
  document.title = title ? `${title} · dsh` : 'dsh';
}

// A session opened (`id`) or none (null): the rename and goal controls follow it.
export function resetHeader(id) {
  closeForms();
  $('#rename').hidden = !id;
  setGoal(null);
  $('#goal-set').hidden = !id;
}

// `d` is a goal/change event's data ({operation, goal, roundsStarted}), or the session
// detail's goal turned into one (`fromDetail`); null clears the line.
export function setGoal(d) {
  const row = $('#goal-row');
  const g = d && d.goal;
  if (!g || d.operation === 'clear') {
    goal = null;
    row.hidden = true;
    $('#goal-set').hidden = !state.view;
    return;
  }
  // The same goal keeps the rounds already counted (an answer may trail its round's start).
  const counted = goal && goal.id === g.id ? goal.roundsStarted : 0;
  goal = { ...g, roundsStarted: Math.max(d.roundsStarted ?? g.roundsStarted ?? 0, counted), activation: d.activation || goal?.activation };
  if (d.operation === 'pause') goal.activation = 'disarmed';
  if (d.operation === 'create' || d.operation === 'resume') goal.activation = 'armed';
  row.hidden = false;
  renderGoal();
  const complete = g.phase === 'complete';
  const resumable = g.phase === 'paused' || g.phase === 'blocked' || (g.phase === 'active' && goal.activation === 'disarmed');
  $('#goal-pause').hidden = !(g.phase === 'active' && goal.activation !== 'disarmed');
  $('#goal-resume').hidden = !resumable;
  $('#goal-edit').hidden = complete;
  $('#goal-set').hidden = !complete;
}

function renderGoal() {
  const el = $('#goal');
  el.replaceChildren(h('b', { text: 'Goal: ' }), goal.objective || '',
    ` · ${goal.phase || ''}` + (goal.maxGoalRounds ? ` · round ${goal.roundsStarted}/${goal.maxGoalRounds}` : ''));
  el.title = goal.objective || '';
}

// A goal round started (its user/message): the line counts it.
export function goalRound(round) {
  if (!goal || !(round > goal.roundsStarted)) return;
  goal.roundsStarted = round;
  renderGoal();
}

// The detail's `goal` ({goal, activation} as the goal tools show it) as setGoal takes it.
export function fromDetail(value) {
  if (!value || !value.goal) return null;
  return { goal: value.goal, roundsStarted: value.goal.roundsStarted, activation: value.activation };
}

function closeForms() {
  $('#rename-form').hidden = true;
  $('#title').hidden = false;
  $('#goal-form').hidden = true;
}

function startRename() {
  if (!state.view) return;
  const input = $('#rename-input');
  input.value = $('#title').textContent;
  $('#title').hidden = true;
  $('#rename-form').hidden = false;
  input.focus();
  input.select();
}

async function rename(e) {
  e.preventDefault();
  const view = state.view;
  const title = $('#rename-input').value;
  if (!view || !title.trim()) return;
  try {
    const done = await post(`/api/sessions/${enc(view.id)}/title`, { title });
    setTitle(done.title);
    closeForms();
  } catch (err) { banner(`Not renamed: ${err.message}`); }
}

function startGoal() {
  if (!state.view) return;
  const input = $('#goal-input');
  input.value = goal && goal.phase !== 'complete' ? goal.objective || '' : '';
  $('#goal-form').hidden = false;
  input.focus();
}

async function goalAction(action, objective) {
  const view = state.view;
  if (!view) return;
  try {
    const done = await post(`/api/sessions/${enc(view.id)}/goal`, objective == null ? { action } : { action, objective });
    setGoal(fromDetail(done.goal));
    closeForms();
  } catch (err) { banner(`Goal not changed: ${err.message}`); }
}

// The rename and goal controls' handlers.
export function wireHeader() {
  $('#rename').addEventListener('click', startRename);
  $('#rename-form').addEventListener('submit', rename);
  $('#rename-cancel').addEventListener('click', closeForms);
  $('#rename-input').addEventListener('keydown', (e) => { if (e.key === 'Escape') closeForms(); });
  $('#goal-set').addEventListener('click', startGoal);
  $('#goal-edit').addEventListener('click', startGoal);
  $('#goal-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const objective = $('#goal-input').value;
    if (objective.trim()) goalAction('set', objective);
  });
  $('#goal-cancel').addEventListener('click', closeForms);
  $('#goal-input').addEventListener('keydown', (e) => { if (e.key === 'Escape') closeForms(); });
  $('#goal-pause').addEventListener('click', () => goalAction('pause'));
  $('#goal-resume').addEventListener('click', () => goalAction('resume'));
  $('#goal-clear').addEventListener('click', () => goalAction('clear'));
}

export function setModel(m) {
  const sel = $('#model');
  const value = m.provider ? `${m.provider}/${m.model}` : m.model;
  if (!value) return;
  if (![...sel.options].some((o) => o.value === value)) sel.append(h('option', { value, text: m.model }));
  sel.value = value;
  sel.hidden = false;
}

export function setPermission(preset) {
  if (!preset || typeof preset !== 'string') return;
  const sel = $('#permission');
  if (![...sel.options].some((o) => o.value === preset)) sel.append(h('option', { value: preset, text: preset }));
  sel.value = preset;
  sel.hidden = false;
}

export async function loadModels() {
  try {
    const m = await get('/api/models');
    const sel = $('#model');
    const current = sel.value;
    sel.replaceChildren();
    for (const p of m.providers || []) {
      const group = h('optgroup', { label: p.id });
      for (const model of p.models || []) {
        const id = typeof model === 'string' ? model : model.id;
        group.append(h('option', { value: `${p.id}/${id}`, text: id }));
      }
      sel.append(group);
    }
    if (current) sel.value = current;
    if (!sel.value && m.current) setModel(m.current);
  } catch (_) { /* the picker keeps the current model only */ }
}
