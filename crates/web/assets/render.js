// Rendering helpers with no state: message text, tool arguments, diffs, long text, and how a
// turn ended.
import { h } from './core.js';

export const textOf = (content) => (Array.isArray(content) ? content : [])
  .filter((p) => p && p.type === 'text').map((p) => p.text).join('\n');

export function parseArgs(raw) {
  if (raw && typeof raw === 'object') return raw;
  try { return JSON.parse(raw || '{}'); } catch (_) { return null; }
}

export function argSummary(name, args, raw) {
  if (!args) return String(raw || '').slice(0, 200);
  const pick = args.command || args.file_path || args.path || args.pattern || args.url || args.query
    || args.description || args.prompt;
  if (typeof pick === 'string') return pick.split('\n')[0].slice(0, 200);
  return JSON.stringify(args).slice(0, 200);
}

// A line diff: common prefix/suffix trimmed, the middle by LCS when small, else replaced whole.
export function lineDiff(oldText, newText) {
  const a = (oldText || '').split('\n');
  const b = (newText || '').split('\n');
  let p = 0;
  while (p < a.length && p < b.length && a[p] === b[p]) p++;
  let s = 0;
  while (s < a.length - p && s < b.length - p && a[a.length - 1 - s] === b[b.length - 1 - s]) s++;
  const out = a.slice(0, p).map((l) => ['c', l]);
  const am = a.slice(p, a.length - s);
  const bm = b.slice(p, b.length - s);
  if (am.length * bm.length <= 250000) {
    const n = am.length, m = bm.length;
    const t = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--)
      t[i][j] = am[i] === bm[j] ? t[i + 1][j + 1] + 1 : Math.max(t[i + 1][j], t[i][j + 1]);
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && am[i] === bm[j]) { out.push(['c', am[i]]); i++; j++; }
      else if (j < m && (i === n || t[i][j + 1] > t[i + 1][j])) out.push(['a', bm[j++]]);
      else out.push(['d', am[i++]]);
    }
  } else {
    am.forEach((l) => out.push(['d', l]));
    bm.forEach((l) => out.push(['a', l]));
  }
  a.slice(a.length - s).forEach((l) => out.push(['c', l]));
  return out;
}

export function renderDiff(path, oldText, newText) {
  const lines = lineDiff(oldText, newText);
  const keep = new Uint8Array(lines.length);
  lines.forEach(([k], i) => {
    if (k !== 'c') for (let j = Math.max(0, i - 3); j <= Math.min(lines.length - 1, i + 3); j++) keep[j] = 1;
  });
  const el = h('div.diff', null, path ? h('div.path', { text: path }) : null);
  let gap = false;
  lines.forEach(([k, l], i) => {
    if (!keep[i]) { if (!gap) el.append(h('div.gap', { text: '…' })); gap = true; return; }
    gap = false;
    el.append(h('div', { class: 'l ' + k, text: l }));
  });
  return el;
}

// Long text shows its head; the rest on request.
export function clipped(text, limit = 4000) {
  const pre = h('pre', { text: text.length > limit ? text.slice(0, limit) : text });
  if (text.length <= limit) return pre;
  const more = h('button.more', { type: 'button', text: `Show all (${text.length} characters)` });
  more.onclick = () => { pre.textContent = text; more.remove(); };
  return h('div', null, pre, more);
}

// How a turn ended, when it did not simply complete (the log's turn/end reason).
export function turnEndText(r) {
  switch (r.kind) {
    case undefined: case 'completed': return '';
    case 'aborted': {
      const cause = (r.reason && r.reason.kind) || 'user';
      if (cause === 'user') return 'Turn cancelled';
      if (cause === 'parent') return 'Turn cancelled by the parent agent';
      return `Turn stopped by a ${cause}${r.reason.reason ? `: ${r.reason.reason}` : ''}`;
    }
    case 'error': {
      const e = r.error || {};
      return `Turn failed: ${e.message || e.kind || 'model error'}`;
    }
    case 'max-tokens': return 'Turn stopped: the answer hit the output limit';
    case 'interrupted': return 'Turn interrupted (dsh stopped mid-turn)';
    case 'blocked': return 'Turn blocked before its next step';
    default: return `Turn ended: ${r.kind}`;
  }
}

export function verdictText(v) {
  return ({ 'allow-once': 'Allowed once', 'allow-session': 'Allowed for this session', deny: 'Denied',
    cancelled: 'Cancelled', withdrawn: 'Withdrawn' })[v] || String(v || '');
}
