// One open session: its history (paged back on scroll), its live event stream, tool cards,
// approvals and questions, the queue and the context meter.
import { $, h, get, post, enc, state, banner, titleOf } from './core.js';
import { textOf, parseArgs, argSummary, lineDiff, renderDiff, clipped, turnEndText, verdictText } from './render.js';
import { renderSidebar } from './sidebar.js';
import { setTitle, setGoal, goalRound, fromDetail, setModel, setPermission } from './header.js';

export const PAGE = 300;

export class SessionView {
  constructor(id) {
    this.id = id;
    this.firstSeq = null;
    this.lastSeq = -1;
    this.hasMore = false;
    this.running = false;
    this.cards = new Map();       // callId -> tool card
    this.live = new Map();        // "turn:step" -> streaming assistant element
    this.approvals = new Map();   // approval id -> pending approval
    this.questions = new Map();   // question id -> pending question
    this.queue = { 'next-turn': [], 'next-step': [] };
    this.contextWindow = null;
    this.es = null;
    this.retry = 0;
    this.closed = false;
    this.items = $('#items');
  }

  async open() {
    // The detail resumes the session; should that fail (its workspace is gone, its settings
    // are broken), the log is still readable: show it without the live parts.
    let resumeError = null;
    try {
      const detail = await get(`/api/sessions/${enc(this.id)}`);
      if (this.closed) return;
      this.applyDetail(detail);
    } catch (e) {
      if (e.code === 'session_not_found' || e.status === 401) throw e;
      resumeError = e;
    }
    const page = await get(`/api/sessions/${enc(this.id)}/history?limit=${PAGE}&render=html`);
    if (this.closed) return;
    this.items.replaceChildren();
    const frag = document.createDocumentFragment();
    this.renderBatch(page.events || [], frag);
    this.items.append(frag);
    // The detail's goal knows its activation, which the replayed goal/change events do not.
    if (this.detailGoal) setGoal(this.detailGoal);
    this.firstSeq = page.events && page.events.length ? page.events[0].seq : null;
    this.hasMore = !!page.hasMore;
    this.lastSeq = Math.max(this.lastSeq, page.lastSeq ?? -1,
      ...(page.events || []).map((e) => e.seq));
    $('#older').hidden = !this.hasMore;
    this.renderPending();
    this.scrollToEnd(true);
    if (resumeError) {
      banner(`Read-only: this session cannot be resumed here (${resumeError.message}).`);
      return;
    }
    this.connect();
  }

  applyDetail(d) {
    const s = d.session || {};
    setTitle(titleOf(s));
    this.detailGoal = fromDetail(d.goal);
    this.setRunning(s.status === 'running');
    if (d.model) setModel(d.model);
    if (d.permission) setPermission(d.permission.preset || d.permission);
    this.contextWindow = (d.model && (d.model.contextWindow || d.model.context_window)) || d.contextWindow || null;
    for (const a of (d.pending && d.pending.approvals) || []) this.approvals.set(a.id, a);
    for (const q of (d.pending && d.pending.questions) || []) this.questions.set(q.id, q);
    if (Array.isArray(d.queue)) {
      for (const item of d.queue) {
        const target = item.target || (item.mode === 'steer' || item.placement === 'steering' ? 'next-step' : 'next-turn');
        (this.queue[target] || this.queue['next-turn']).push(item.message || item);
      }
    }
    this.renderQueue();
  }

  close() {
    this.closed = true;
    if (this.es) this.es.close();
    clearTimeout(this.retryTimer);
  }

  // The stream: catch up from the last seq seen, then live. On a drop, reconnect with backoff
  // from the last seq (never from the browser's own retry, whose URL would be stale).
  connect() {
    if (this.closed) return;
    const es = new EventSource(`/api/sessions/${enc(this.id)}/events?after=${this.lastSeq}&render=html`);
    this.es = es;
    es.addEventListener('open', () => { this.retry = 0; banner(''); });
    es.addEventListener('status', (m) => { this.setRunning(!!JSON.parse(m.data).running); });
    es.addEventListener('event', (m) => this.onEvent(JSON.parse(m.data)));
    es.addEventListener('approval', (m) => { const a = JSON.parse(m.data); this.approvals.set(a.id, a); this.renderPending(); });
    es.addEventListener('approval-resolved', (m) => { const a = JSON.parse(m.data); this.resolveApproval(a.id, a.decision); });
    es.addEventListener('question', (m) => { const q = JSON.parse(m.data); this.questions.set(q.id, q); this.renderPending(); });
    es.addEventListener('question-resolved', (m) => { const q = JSON.parse(m.data); this.resolveQuestion(q.id, q.outcome); });
    es.addEventListener('error', () => {
      es.close();
      if (this.closed) return;
      this.retry = Math.min(this.retry + 1, 6);
      if (this.retry > 1) banner('Connection lost; reconnecting…');
      this.retryTimer = setTimeout(() => this.connect(), 250 * 2 ** (this.retry - 1));
    });
  }

  onEvent(ev) {
    if (ev.seq <= this.lastSeq) return;      // already shown
    this.lastSeq = ev.seq;
    const stick = this.nearEnd();
    const frag = document.createDocumentFragment();
    this.apply(ev, frag, null);
    this.items.append(frag);
    if (stick) this.scrollToEnd();
  }

  // A page of events, oldest first. Chunks of a step whose whole message is in the page are
  // skipped: the message renders once instead of replaying every delta.
  renderBatch(events, frag) {
    const done = new Set();
    for (const ev of events) if (ev.type === 'assistant/message') done.add(`${ev.data.turn}:${ev.data.step}`);
    for (const ev of events) this.apply(ev, frag, done);
  }

  async loadOlder() {
    if (!this.hasMore || this.loading || this.firstSeq == null) return;
    this.loading = true;
    try {
      const page = await get(`/api/sessions/${enc(this.id)}/history?before=${this.firstSeq}&limit=${PAGE}&render=html`);
      if (this.closed) return;
      const log = $('#log');
      const before = log.scrollHeight - log.scrollTop;
      // Older events render with their own card maps, so the newer page's cards stay as they are.
      const saved = [this.cards, this.live];
      this.cards = new Map(); this.live = new Map();
      const frag = document.createDocumentFragment();
      this.renderBatch(page.events || [], frag);
      [this.cards, this.live] = saved;
      this.items.prepend(frag);
      log.scrollTop = log.scrollHeight - before;
      if (page.events && page.events.length) this.firstSeq = page.events[0].seq;
      this.hasMore = !!page.hasMore;
      $('#older').hidden = !this.hasMore;
    } catch (e) {
      banner(`Could not load earlier events: ${e.message}`);
    } finally { this.loading = false; }
  }

  apply(ev, out, done) {
    const d = ev.data || {};
    switch (ev.type) {
      case 'user/message':
        if (d.source && d.source.kind === 'user') out.append(h('div.msg.user', { 'data-seq': ev.seq, text: textOf(d.content) }));
        else if (d.source && d.source.kind === 'goal') {
          out.append(h('div.note', { text: `goal round ${d.source.round ?? ''}` }));
          goalRound(d.source.round);
        }
        break;
      case 'assistant/chunk':
        if (done && done.has(`${d.turn}:${d.step}`)) break;
        this.chunk(d, out);
        break;
      case 'assistant/message': this.message(ev, out); break;
      case 'tool/call': this.card(d.callId, d.name, d.arguments, out).setState('running…'); break;
      case 'tool/result': this.result(d, out); break;
      case 'approval/asked': this.asked(d, out); break;
      case 'approval/decided': {
        const card = this.cards.get(d.callId);
        const verdict = d.decision || d.outcome || d.kind;
        if (card && card.approval) card.approval.decided(verdict);
        break;
      }
      case 'turn/start': break;
      case 'turn/end': {
        const why = turnEndText(d.reason || {});
        if (why) out.append(h('div', { class: 'note' + (d.reason.kind === 'error' ? ' err' : ''), text: why }));
        for (const el of this.live.values()) el.classList.remove('live');
        this.live.clear();
        break;
      }
      case 'agent/inbox/spliced': {
        const list = this.queue[d.target];
        if (list) {
          list.splice(d.start || 0, d.removedCount || 0, ...(d.inserted || []));
          if (done === null) this.renderQueue();
        }
        break;
      }
      case 'session/title': {
        setTitle(d.title);
        const s = state.sessions.find((x) => x.id === this.id);
        if (s && s.title !== d.title) { s.title = d.title; renderSidebar(); }
        break;
      }
      case 'goal/change': setGoal(d); break;
      case 'permission/preset': setPermission(d.preset); break;
      case 'request/header': {
        const c = d.header && d.header.config;
        if (c && c.model) setModel({ provider: c.provider, model: c.model });
        break;
      }
      case 'compaction/end': out.append(h('div.note', { text: 'Context compacted' })); break;
      case 'llm/retry': out.append(h('div.note', { text: `Model request failed; retrying${d.attempt ? ` (attempt ${d.attempt})` : ''}` })); break;
      case 'plan/mode': out.append(h('div.note', { text: `Plan mode ${d.active === false || d.mode === 'off' ? 'off' : 'on'}` })); break;
      default: break;
    }
  }

  // Streaming: one element per step, filled delta by delta as plain text until the whole
  // message (with its server-rendered markdown) replaces it.
  chunk(d, out) {
    const key = `${d.turn}:${d.step}`;
    let el = this.live.get(key);
    if (!el) {
      el = h('div.msg.assistant.live');
      el.blocks = new Map();
      this.live.set(key, el);
      out.append(el);
    }
    const c = d.chunk || {};
    let b = el.blocks.get(c.index);
    if (c.type === 'block-start') {
      if (c.blockType === 'reasoning') b = h('details.reasoning', { open: true }, h('summary', { text: 'Thinking…' }), h('div'));
      else if (c.blockType === 'tool-call') b = h('div.card.collapsed', null, h('div.head', null, h('span.name', { text: 'tool' }), h('span.args'), h('span.state', { text: 'preparing…' })));
      else b = h('div.live-text');
      b.kind = c.blockType; b.text = '';
      el.blocks.set(c.index, b);
      el.append(b);
    } else if (b && (c.type === 'text-delta' || c.type === 'reasoning-delta')) {
      b.text += c.text || '';
      (b.kind === 'reasoning' ? b.lastChild : b).textContent = b.text;
    } else if (b && c.type === 'tool-call-delta') {
      if (c.name) $('.name', b).textContent = c.name;
      b.text += c.argumentsDelta || '';
      $('.args', b).textContent = b.text.slice(0, 200);
    } else if (c.type === 'usage') {
      this.usage(c.usage);
    }
  }

  message(ev, out) {
    const d = ev.data;
    const key = `${d.turn}:${d.step}`;
    const live = this.live.get(key);
    const m = d.message || {};
    const el = h('div.msg.assistant', { 'data-seq': ev.seq });
    let textDone = false;
    for (const part of m.content || []) {
      if (part.type === 'reasoning' && part.text) {
        el.append(h('details.reasoning', null, h('summary', { text: 'Reasoning' }), h('div', { text: part.text })));
      } else if (part.type === 'text' && part.text && !textDone) {
        const md = h('div.md');
        if (typeof ev.html === 'string') { md.innerHTML = ev.html; textDone = true; } // sanitised by the server
        else md.append(h('div.live-text', { text: part.text }));
        el.append(md);
      } else if (part.type === 'tool-call') {
        el.append(this.card(part.id, part.name, part.arguments, null));
      }
    }
    if (d.interrupted) el.append(h('div.note', { text: 'interrupted' }));
    if (live) { live.replaceWith(el); this.live.delete(key); } else out.append(el);
    if (d.usage) this.usage(d.usage);
  }

  card(callId, name, rawArgs, out) {
    let card = this.cards.get(callId);
    if (!card) {
      const args = parseArgs(rawArgs);
      const state = h('span.state');
      const body = h('div.body');
      card = h('div.card.collapsed', { 'data-call': callId },
        h('div.head', { onclick: () => card.classList.toggle('collapsed') },
          h('span.name', { text: name || 'tool' }), h('span.args', { text: argSummary(name, args, rawArgs) }), state),
        body);
      card.args = args; card.body = body; card.toolName = name;
      card.setState = (text, cls) => { state.textContent = text; state.className = 'state' + (cls ? ' ' + cls : ''); return card; };
      if (args && name === 'bash' && args.command) body.append(h('pre', { text: '$ ' + args.command }));
      this.cards.set(callId, card);
      if (out) out.append(card);
    } else if (out && !card.parentNode) {
      out.append(card);
    }
    return card;
  }

  result(d, out) {
    const m = d.message || {};
    const part = (m.content || []).find((p) => p.type === 'tool-result') || {};
    const callId = (m.source && m.source.callId) || part.toolCallId;
    const card = this.card(callId, null, null, out);
    const text = textOf(part.content);
    const meta = d.meta || {};
    const failed = part.isError || d.error;
    let label = failed ? 'failed' : 'done';
    if (typeof meta.exitCode === 'number') label = `exit ${meta.exitCode}`;
    if (meta.signal) label = `killed (${meta.signal})`;
    if (meta.timedOut) label = 'timed out';
    const bad = failed || (typeof meta.exitCode === 'number' && meta.exitCode !== 0) || meta.signal || meta.timedOut;
    card.setState(label, bad ? 'err' : 'ok');
    if (d.error && d.error.code) card.body.append(h('div.note.err', { text: d.error.code }));
    const diffs = Array.isArray(meta.diffs) ? meta.diffs : [];
    if (diffs.length) {
      for (const df of diffs) card.body.append(renderDiff(df.path, df.oldText, df.newText));
      card.classList.remove('collapsed');
    } else if (!failed && card.args && typeof card.args.old_string === 'string' && typeof card.args.new_string === 'string') {
      card.body.append(renderDiff(card.args.file_path, card.args.old_string, card.args.new_string));
      card.classList.remove('collapsed');
    }
    if (text) card.body.append(clipped(text));
    if (bad) card.classList.remove('collapsed');
  }

  // An approval the agent asked for; buttons only while the server holds it as pending.
  asked(d, out) {
    const card = this.card(d.callId, d.tool, null, out);
    if (card.approval) return;
    const box = h('div.approval', { 'data-call': d.callId },
      h('div', null, h('b', { text: 'Approval needed: ' }), h('span', { text: d.tool || '' })),
      h('div.what', { text: d.summary || '' }),
      d.reason ? h('div.why', { text: d.reason }) : null,
      d.escalation ? h('div.why', { text: `wants ${d.escalation.mode} (now ${d.escalation.from}): ${d.escalation.justification}` }) : null);
    box.acts = h('div.acts');
    box.verdict = h('div.verdict');
    box.append(box.acts, box.verdict);
    box.decided = (verdict) => {
      box.classList.add('done');
      box.acts.replaceChildren();
      box.verdict.textContent = verdictText(verdict);
    };
    card.approval = box;
    card.classList.remove('collapsed');
    card.body.prepend(box);
    card.setState('waiting for approval');
  }

  // Pending approvals and questions from the server: attach buttons to their cards (or show a
  // card of their own when the asking event is outside the loaded page).
  renderPending() {
    for (const a of this.approvals.values()) {
      let card = this.cards.get(a.callId);
      if (!card || !card.approval) {
        this.asked({ callId: a.callId || a.id, tool: a.tool, summary: a.summary, reason: a.reason }, this.items);
        card = this.cards.get(a.callId || a.id);
      }
      const box = card.approval;
      if (box.pendingId === a.id) continue;
      box.pendingId = a.id;
      box.classList.remove('done');
      box.verdict.textContent = '';
      const answer = (decision) => async () => {
        box.acts.querySelectorAll('button').forEach((b) => { b.disabled = true; });
        try {
          await post(`/api/sessions/${enc(this.id)}/approvals/${enc(a.id)}`, { decision });
          this.resolveApproval(a.id, decision);
        } catch (e) {
          if (e.status === 404) this.resolveApproval(a.id, 'answered elsewhere');
          else { banner(`Could not answer: ${e.message}`); box.acts.querySelectorAll('button').forEach((b) => { b.disabled = false; }); }
        }
      };
      box.acts.replaceChildren(
        h('button.primary', { type: 'button', 'data-decision': 'allow-once', onclick: answer('allow-once'), text: 'Allow once' }),
        a.grant === null ? null : h('button', { type: 'button', 'data-decision': 'allow-session', onclick: answer('allow-session'), text: 'Allow for session' }),
        h('button', { type: 'button', 'data-decision': 'deny', onclick: answer('deny'), text: 'Deny' }));
    }
    for (const q of this.questions.values()) this.questionCard(q);
    this.scrollToEnd();
  }

  resolveApproval(id, decision) {
    const a = this.approvals.get(id);
    this.approvals.delete(id);
    const card = a && this.cards.get(a.callId || a.id);
    if (card && card.approval) { card.approval.decided(decision); card.approval.pendingId = null; }
  }

  questionCard(q) {
    if (this.items.querySelector(`.question[data-id="${CSS.escape(q.id)}"]`)) return;
    const box = h('div.question', { 'data-id': q.id });
    const inputs = [];
    for (const item of q.questions || []) {
      const isPlan = item.intent && item.intent.kind === 'plan-review';
      box.append(h('div.q', { text: item.header ? `${item.header}: ${item.question}` : item.question }));
      if (item.detail) box.append(isPlan ? clipped(item.detail, 20000) : h('div.detail', { text: item.detail }));
      const name = `q-${q.id}-${item.id}`;
      const opts = (item.options || []).map((o) => {
        const input = h('input', { type: item.multiSelect ? 'checkbox' : 'radio', name, value: o.label });
        return { o, input, label: h('label', null, input, ' ', o.label, o.description ? h('small', { text: ` — ${o.description}` }) : null) };
      });
      opts.forEach((x) => box.append(x.label));
      const custom = h('input', { type: 'text', placeholder: isPlan ? 'Or say what to change' : 'Or type an answer' });
      box.append(custom);
      inputs.push({ item, opts, custom });
    }
    const submit = h('button.primary', { type: 'button', text: 'Answer' });
    const dismiss = h('button', { type: 'button', text: 'Dismiss' });
    const send = async (body) => {
      submit.disabled = dismiss.disabled = true;
      try {
        await post(`/api/sessions/${enc(this.id)}/questions/${enc(q.id)}`, body);
        this.resolveQuestion(q.id, body.dismiss ? 'dismissed' : 'answered');
      } catch (e) {
        if (e.status === 404) this.resolveQuestion(q.id, 'answered elsewhere');
        else { banner(`Could not answer: ${e.message}`); submit.disabled = dismiss.disabled = false; }
      }
    };
    submit.onclick = () => send({
      answers: inputs.map(({ item, opts, custom }) => {
        const a = { id: item.id, selected: opts.filter((x) => x.input.checked).map((x) => x.o.label) };
        if (custom.value.trim()) a.custom = custom.value.trim();
        return a;
      }),
    });
    dismiss.onclick = () => send({ dismiss: true });
    box.append(h('div.acts', null, submit, dismiss));
    const card = q.callId && this.cards.get(q.callId);
    if (card) { card.classList.remove('collapsed'); card.body.prepend(box); } else this.items.append(box);
  }

  resolveQuestion(id, outcome) {
    this.questions.delete(id);
    const box = this.items.querySelector(`.question[data-id="${CSS.escape(id)}"]`);
    if (box) {
      box.classList.add('done');
      box.querySelectorAll('input,button').forEach((x) => { x.disabled = true; });
      const acts = $('.acts', box);
      if (acts) acts.replaceWith(h('div.verdict', { text: outcome }));
    }
  }

  usage(u) {
    if (!u) return;
    const used = (u.inputTokens || 0) + (u.outputTokens || 0);
    const meter = $('#meter');
    meter.hidden = false;
    const label = $('.label', meter);
    const k = (n) => (n >= 1000 ? `${Math.round(n / 100) / 10}k` : String(n));
    if (this.contextWindow) {
      const pct = Math.min(100, Math.round((used / this.contextWindow) * 100));
      $('.fill', meter).style.width = pct + '%';
      meter.classList.toggle('high', pct >= 80);
      label.textContent = `${pct}%`;
      meter.title = `Context: ${k(used)} of ${k(this.contextWindow)} tokens`;
    } else {
      $('.bar', meter).hidden = true;
      label.textContent = `${k(used)} tokens`;
      meter.title = 'Context used by the last request';
    }
  }

  renderQueue() {
    const el = $('#queue');
    el.replaceChildren(
      ...this.queue['next-step'].map((m) => h('div.queued', null, h('span', { text: 'steering: ' }), h('b', { text: textOf(m.content) }))),
      ...this.queue['next-turn'].map((m) => h('div.queued', null, h('span', { text: 'queued: ' }), h('b', { text: textOf(m.content) }))));
  }

  setRunning(running) {
    this.running = running;
    $('#cancel').hidden = !running;
    $('#steer').hidden = !running;
    $('#send').textContent = running ? 'Queue' : 'Send';
  }

  nearEnd() {
    const log = $('#log');
    return log.scrollHeight - log.scrollTop - log.clientHeight < 120;
  }

  scrollToEnd(force) {
    if (!force && !this.nearEnd()) return;
    const log = $('#log');
    log.scrollTop = log.scrollHeight;
  }
}
