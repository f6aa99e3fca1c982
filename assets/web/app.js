// Jarvis web UI: state, the sessions sidebar, the conversation and the
// composer. Several sessions can be mid-turn at once; switching which one
// is on screen never interrupts a turn.

import { $, h, toast, relTime, svgIcon } from './dom.js';
import { get, post, del, stream, ApiError } from './api.js';
import * as R from './render.js';
import { openLibrary, initLibrary } from './library.js';
import { openTimeline, initTimeline } from './timeline.js';
import { openDigest, digestFromHash } from './digest.js';
import { openMemory } from './memory.js';
import { initViewer } from './viewer.js';
import { initResearch, researchOn, researchSent, onResearchEvent } from './research.js';
import { openModelPicker, openStyle, openPrompts, openConfig, initDialogs } from './dialogs.js';
import { openMcpServers } from './mcp.js';
import { openPalette, initPalette } from './palette.js';
import { initSetup, refresh as refreshSetup, openSetup, searchInstead, searchInline } from './setup.js';
import { initProfiles, showProfile, profileSwitched } from './profiles.js';
import { initCommands, openCommands } from './commands.js';
import { initActions, decorate } from './actions.js';
import { groupSessions } from './sidebar.js';
import * as Q from './queue.js';
import { openPins } from './pins.js';
import { openVoices, onVoices, stop as stopSpeaking } from './speech.js';

// The editor (about a third of our script) loads the first time it is
// needed — the Editor view, a suggested change, a menu action — so a chat
// page load never pays for it. `ed` is the module once it has loaded.
let ed = null;
let edLoading = null;
function editor() {
  edLoading ??= import('./editor.js').then((m) => { m.initEditor(); ed = m; return m; }, (e) => {
    edLoading = null;
    toast(`The editor could not load (${e.message}); reload the page`, true);
    throw e;
  });
  return edLoading;
}
// A failed load was already said by editor(); a failure inside `f` is said here.
const withEditor = (f) => editor().then(f, () => {}).catch((e) => toast(e.message, true));

const S = {
  session: null,          // the viewed session: {id, title, private, model, kb_only, ...}
  sessions: [],           // sidebar metadata
  busy: new Set(),        // server's busy list
  inFlight: new Set(),    // sessions this tab is streaming
  live: new Map(),        // session id → {shell, userLi, text} of this tab's live turn
  drafts: new Map(),      // session id → half-typed text
  gen: 0,                 // bumped on every successful resume (guards polls)
  renaming: null,
};
export const state = S;

const el = {
  app: $('#app'), list: $('#session-list'), empty: $('#sessions-empty'), messages: $('#messages'),
  welcome: $('#welcome'), conv: $('#conversation'), input: $('#input'), form: $('#composer'),
  send: $('#send'), stop: $('#stop'), dbOnly: $('#db-only'), title: $('#session-title'),
  privateBadge: $('#private-badge'), modelLabel: $('#model-label'), modelButton: $('#model-button'), cost: $('#cost'),
};

// ---------- header ----------
export async function refreshInfo() {
  if (!S.session) return;
  try {
    const info = await get(`/info?session_id=${encodeURIComponent(S.session.id)}`);
    el.modelLabel.textContent = info.provider || 'model';
    el.modelButton.classList.toggle('cloud', info.provider_kind === 'cloud');
    // Green only when the server really answered (a cloud model: its key is set).
    const ready = info.model_state === 'ready';
    el.modelButton.dataset.state = ready ? 'ready' : 'down';
    const why = ready ? '' : ` — not ready: ${info.model_message}${info.model_fix ? `. Fix: ${info.model_fix}` : ''}`;
    el.modelButton.title = `Model: ${info.provider}${info.served ? ` (answered by ${info.served})` : ''}${why} — click to switch`;
    el.modelButton.setAttribute('aria-label', `Model ${info.provider}, ${ready ? 'ready' : 'not answering'}; switch model`);
    el.cost.hidden = !info.cost_usd;
    el.cost.textContent = info.cost_usd ? `$${Number(info.cost_usd).toFixed(4)}` : '';
    el.privateBadge.hidden = !info.private;
  } catch (e) { /* the header is best-effort */ }
}

function showSession(s) {
  S.session = s;
  el.title.textContent = s.title || 'New chat';
  document.title = s.title ? `${s.title} — Jarvis` : 'Jarvis';
  el.privateBadge.hidden = !s.private;
  setDbOnly(s.kb_only !== false);
  refreshInfo();
  showProfile(s);
  renderSidebar();
  updateComposer();
}

function setDbOnly(on) {
  el.dbOnly.classList.toggle('on', on);
  el.dbOnly.setAttribute('aria-checked', String(on));
}

// ---------- sidebar ----------
// Listings overlap (a new chat, a turn's first event, a poll): only the
// latest one asked for may draw, or a slow older answer paints a sidebar
// without the session that just started. An older call resolves when the
// latest has drawn, so whoever awaits it sees the fresh list.
let listing = 0;
let newestListing = Promise.resolve();
export function loadSessions() {
  const mine = ++listing;
  newestListing = (async () => {
    let r = null;
    let failure = null;
    try { r = await get('/sessions'); } catch (e) { failure = e; }
    if (mine !== listing) return newestListing;
    if (failure) toast(failure.message, true);
    else {
      S.sessions = r.sessions || [];
      S.busy = new Set(r.busy || []);
    }
    renderSidebar();
    updateComposer();
  })();
  return newestListing;
}

function sessionRow(m) {
  const active = S.session && S.session.id === m.id;
  const busy = S.busy.has(m.id) || S.inFlight.has(m.id);
  const li = h('li', { class: `session${active ? ' active' : ''}`, dataset: { id: m.id } });
  if (S.renaming === m.id) {
    const input = h('input', { class: 'rename-input', value: m.title || '', 'aria-label': 'New title', maxlength: 120 });
    const finish = async (save) => {
      S.renaming = null;
      if (save && input.value.trim() && input.value.trim() !== m.title) {
        try {
          const r = await post(`/sessions/${m.id}/rename`, { title: input.value });
          m.title = r.title;
          if (S.session && S.session.id === m.id) { S.session.title = r.title; el.title.textContent = r.title; }
        } catch (e) { toast(e.message, true); }
      }
      renderSidebar();
    };
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') { e.preventDefault(); finish(true); }
      if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); finish(false); }
    });
    input.addEventListener('blur', () => finish(true));
    li.append(input);
    setTimeout(() => { input.focus(); input.select(); });
    return li;
  }
  const open = h('button', { type: 'button', class: 'session-open', 'aria-current': active ? 'true' : null, title: m.title || 'Untitled' },
    busy ? h('span', { class: 'busy-dot', title: 'Working…', 'aria-label': 'working' }) : null,
    m.private ? h('span', { class: 'private-mark', title: 'Private', 'aria-label': 'private' }, '●') : null,
    m.pinned ? h('span', { class: 'pin-mark', title: 'Pinned', 'aria-label': 'pinned' }, '★') : null,
    h('span', { class: 'session-name' }, m.title || 'Untitled'),
    h('span', { class: 'session-when' }, relTime(Date.parse(m.updated) / 1000)));
  open.addEventListener('click', () => resumeSession(m.id));
  const pin = h('button', { type: 'button', 'aria-pressed': String(!!m.pinned), 'aria-label': m.pinned ? `Unpin ${m.title}` : `Pin ${m.title}`, title: m.pinned ? 'Unpin' : 'Pin' }, m.pinned ? '★' : '☆');
  pin.addEventListener('click', async () => {
    try { await post(`/sessions/${m.id}/pin`, { pinned: !m.pinned }); await loadSessions(); } catch (e) { toast(e.message, true); }
  });
  const ren = h('button', { type: 'button', 'aria-label': `Rename ${m.title}`, title: 'Rename' }, '✎');
  ren.addEventListener('click', () => { S.renaming = m.id; renderSidebar(); });
  const rm = h('button', { type: 'button', 'aria-label': `Delete ${m.title}`, title: 'Delete' }, trashIcon());
  rm.addEventListener('click', () => deleteSession(m));
  li.append(open, h('span', { class: 'tools' }, pin, ren, rm));
  return li;
}

function trashIcon() {
  return svgIcon('M4 7h16M10 11v6M14 11v6M6 7l1 13h10l1-13M9 7V4h6v3');
}

function renderSidebar() {
  const q = $('#session-search').value;
  const kids = [];
  for (const [label, rows] of groupSessions(S.sessions, q)) {
    kids.push(h('li', { class: 'group-label', 'aria-hidden': 'true' }, label), ...rows.map(sessionRow));
  }
  el.list.replaceChildren(...kids);
  el.empty.hidden = S.sessions.length > 0;
  $('#sessions-none').hidden = !(S.sessions.length && !kids.length);
}

async function deleteSession(m) {
  if (!confirm(`Delete “${m.title || 'Untitled'}”? Its saved conversation and its chat-history search entries go; nothing else is touched.`)) return;
  try {
    await del(`/sessions/${m.id}`);
    S.drafts.delete(m.id);
    if (S.session && S.session.id === m.id) await newChat();
    await loadSessions();
    toast('Conversation deleted');
  } catch (e) { toast(e.message, true); }
}

// ---------- per-session drafts ----------
function switchDraft(newId) {
  if (S.session) {
    const t = el.input.value;
    if (t) S.drafts.set(S.session.id, t); else S.drafts.delete(S.session.id);
  }
  el.input.value = S.drafts.get(newId) || '';
  autosize();
}

function giveBackText(sessionId, text) {
  if (S.session && S.session.id === sessionId) {
    el.input.value = text + (el.input.value ? `\n${el.input.value}` : '');
    autosize();
    el.input.focus();
  } else {
    S.drafts.set(sessionId, text);
  }
}

// ---------- conversation ----------
function renderEntries(entries, pending) {
  const kids = [];
  for (const e of entries) {
    if (e.role === 'user') kids.push(e.steered ? Q.steeredBubble(e.text) : R.userBubble(e.text));
    else kids.push(R.savedAssistant(e));
  }
  // A conversation that ends in a failed turn keeps its way out after a
  // reload or a switch of session. (A turn still running has only its
  // question saved: `last` is then missing.)
  const [q, last] = entries.slice(-2);
  if (q && last && q.role === 'user' && last.role !== 'user' && last.error) {
    kids[kids.length - 1].append(R.errorCard('The model call failed; the message above says why.', {
      onRetry: () => send(q.text),
      onSwitch: () => openModelPicker(),
    }));
  }
  el.messages.replaceChildren(...kids);
  for (const p of pending || []) el.messages.append(h('li', { class: 'msg assistant' }, R.confirmCard(p, answerConfirm)));
  el.welcome.hidden = kids.length > 0;
  decorate(el.messages);
}

async function loadHistory(id, gen) {
  const r = await get(`/history?session_id=${encodeURIComponent(id)}`);
  if (gen !== undefined && gen !== S.gen) return null;
  let entries = r.entries || [];
  const live = S.live.get(id);
  if (live && entries.length && entries[entries.length - 1].role === 'user') entries = entries.slice(0, -1);
  renderEntries(entries, r.pending);
  if (live) { el.messages.append(live.userLi, ...(live.steered || []), live.shell.li); decorate(el.messages); }
  scrollDown(true);
  return r;
}

function scrollDown(force) {
  const c = el.conv;
  if (force || c.scrollHeight - c.scrollTop - c.clientHeight < 160) c.scrollTop = c.scrollHeight;
}

export async function resumeSession(id) {
  closeSidebar();
  if (S.session && S.session.id === id) return;
  let r;
  try {
    r = await post(`/sessions/${id}/resume`, {});
  } catch (e) {
    // A failed resume does not bump the generation: the previous
    // session's poll stays valid.
    toast(e.message, true);
    return;
  }
  const gen = ++S.gen;
  switchDraft(id);
  showSession(r.session);
  Q.load(id);
  await loadHistory(id, gen);
  if (r.busy && !S.live.has(id)) {
    el.messages.append(h('li', { class: 'msg assistant', id: 'resume-working' }, R.workingLine()));
    el.welcome.hidden = true;
    S.busy.add(id);
    updateComposer();
    pollUntilDone(id, gen);
  }
}

async function pollUntilDone(id, gen) {
  for (;;) {
    await new Promise((res) => setTimeout(res, 2000));
    if (gen !== S.gen) return;
    let r;
    try { r = await get('/sessions'); } catch { continue; }
    if (gen !== S.gen) return;
    S.sessions = r.sessions || S.sessions;
    S.busy = new Set(r.busy || []);
    renderSidebar();
    if (!S.busy.has(id)) {
      await loadHistory(id, gen);
      updateComposer();
      refreshInfo();
      Q.next(id);
      return;
    }
  }
}

export async function newChat() {
  closeSidebar();
  try {
    const r = await post('/sessions/new', {});
    S.gen++;
    switchDraft(r.session.id);
    showSession(r.session);
    Q.load(r.session.id);
    renderEntries([], []);
    el.input.focus();
  } catch (e) { toast(e.message, true); }
}

async function answerConfirm(token, confirmed) {
  const r = await post('/confirm-action', { token, confirmed });
  return r.message;
}

// ---------- sending ----------
function updateComposer() {
  const id = S.session && S.session.id;
  const running = !!id && (S.inFlight.has(id) || S.busy.has(id));
  // The composer stays usable during a turn: Send queues the message.
  el.send.textContent = running ? 'Queue' : searchInstead() ? 'Search' : 'Send';
  el.send.title = running ? 'Queue this message: it is sent when the answer finishes' : '';
  el.stop.hidden = !running;
  el.input.setAttribute('aria-busy', String(running));
  Q.refresh();
}

function autosize() {
  el.input.style.height = 'auto';
  el.input.style.height = `${Math.min(el.input.scrollHeight, window.innerHeight * 0.4)}px`;
}

/** Send `textArg` (else the composer's text) on the viewed session, or —
 *  `opts.queued` — run that queued message on `opts.sid`. While a turn
 *  runs, a typed message goes to the queue instead. */
export async function send(textArg, opts = {}) {
  if (!S.session && !opts.sid) return;
  const sid = opts.sid || S.session.id;
  const queued = opts.queued || null;
  const text = (queued ? queued.text : (textArg ?? el.input.value)).trim();
  if (!text) return;
  const running = S.inFlight.has(sid) || S.busy.has(sid);
  if (running && queued) return;
  if (textArg === undefined && !queued) { el.input.value = ''; autosize(); }
  if (running) { await Q.add(sid, text); return; }
  if (searchInstead()) {
    // No model yet: the knowledge base still answers, as a search.
    el.welcome.hidden = true;
    await searchInline(text, el.messages);
    scrollDown(true);
    return;
  }
  for (const n of el.messages.querySelectorAll('.rolled-back')) n.remove();
  stopSpeaking();
  const userLi = R.userBubble(text);
  const shell = R.assistantShell();
  const turn = { shell, userLi, text, ended: false };
  S.live.set(sid, turn);
  S.inFlight.add(sid);
  const viewing = () => S.session && S.session.id === sid;
  if (viewing()) {
    if (!S.session.title) {
      // A first message names the session (the server does the same).
      el.title.textContent = text.length > 60 ? `${text.slice(0, 59)}…` : text;
    }
    el.welcome.hidden = true;
    el.messages.append(userLi, shell.li);
    decorate(el.messages);
    scrollDown(true);
  }
  updateComposer();
  renderSidebar();
  const rollback = () => {
    userLi.remove(); shell.li.remove();
    for (const b of turn.steered || []) b.remove();
    giveBackText(sid, text);
    if (viewing()) {
      // A first question rolled back leaves a conversation with no title.
      if (!el.messages.querySelector('.msg.user')) {
        el.title.textContent = S.session.title || 'New chat';
        document.title = S.session.title ? `${S.session.title} — Jarvis` : 'Jarvis';
        el.welcome.hidden = false;
      }
      decorate(el.messages);
    }
  };
  let startFailed = false;
  try {
    // In the Editor view the question is about the file on screen.
    const body = { message: text, session_id: sid };
    if (queued) body.queued = queued.id;
    const open = ed ? ed.openFileForChat() : null;
    if (open) body.open_file = open;
    if (researchOn()) { body.research = true; researchSent(); }
    await stream('/chat', body, (ev) => {
      if (!turn.listed) {
        // The question is saved as the turn starts: list the session now,
        // with its busy dot.
        turn.listed = true;
        loadSessions();
      }
      switch (ev.type) {
        case 'status':
          shell.status.replaceChildren(R.workingLine(ev.state === 'compacting' ? 'Compacting the conversation…' : 'Thinking…'));
          break;
        case 'text':
          shell.status.replaceChildren();
          shell.bubble.hidden = false;
          turn.partial = (turn.partial || '') + ev.text;
          shell.bubble.textContent = turn.partial;
          if (viewing()) scrollDown();
          break;
        case 'thinking': R.thinkingDelta(shell, ev.text); break;
        case 'plan_ready': R.planReady(shell, ev.plan); if (viewing()) scrollDown(); break;
        case 'profile_switched': R.profileSwitched(shell, ev.profile_name); profileSwitched(sid, ev.profile_id); break;
        case 'tool_start': R.toolStarted(shell, ev); if (viewing()) scrollDown(); break;
        case 'steered': {
          // A queued message went to this turn after its tool round.
          const b = Q.steeredBubble(ev.text);
          (turn.steered ||= []).push(b);
          if (shell.li.parentElement) shell.li.before(b);
          Q.load(sid);
          if (viewing()) scrollDown();
          break;
        }
        case 'tool_finish': R.toolFinished(shell, ev); break;
        case 'research': onResearchEvent(shell, ev); if (viewing()) scrollDown(); break;
        case 'edit_proposal': {
          withEditor((m) => m.onProposal(ev));
          const open = h('button', { type: 'button', class: 'btn small primary' }, 'Review in the editor');
          open.addEventListener('click', () => { setView('editor'); withEditor((m) => m.openFile(ev.draft_id, ev.filename)); });
          shell.after.before(h('div', { class: 'card proposal-card', role: 'group', 'aria-label': 'Suggested change' },
            h('p', {}, `✎ A suggested change to ${ev.filename} (${(ev.hunks || []).length} ${(ev.hunks || []).length === 1 ? 'change' : 'changes'}) waits for your review.`),
            h('p', { class: 'muted' }, ev.message || ''),
            open));
          if (viewing()) scrollDown();
          break;
        }
        case 'confirm': {
          const card = R.confirmCard(ev, answerConfirm, { waiting: true });
          (turn.cards ||= []).push(card);
          shell.after.before(card);
          if (viewing()) scrollDown();
          break;
        }
        case 'reply':
          turn.ended = true;
          R.fillReply(shell, ev);
          for (const c of turn.cards || []) c.enable();
          if (ev.error) {
            // A failed model call is saved as a ⚠️ reply: offer the way out.
            shell.after.append(R.errorCard('The model call failed; the message above says why.', {
              onRetry: () => send(text),
              onSwitch: () => openModelPicker(),
            }));
          }
          if (ev.private && viewing()) { el.privateBadge.hidden = false; S.session.private = true; }
          if (ev.title && viewing()) { S.session.title = ev.title; el.title.textContent = ev.title; }
          break;
        case 'stopped':
          turn.ended = true;
          turn.stopped = true;
          rollback();
          if (viewing()) {
            // Quiet, and gone with the next message.
            el.messages.append(h('li', { class: 'rolled-back', role: 'status' },
              'Stopped — the turn was rolled back and your question is back in the message box.'));
            scrollDown(true);
          }
          break;
        case 'error':
          turn.ended = true;
          turn.failed = true;
          shell.status.replaceChildren();
          shell.bubble.hidden = true;
          shell.after.replaceChildren(R.errorCard(ev.message, {
            onRetry: () => { userLi.remove(); shell.li.remove(); send(text); },
            onSwitch: () => openModelPicker(),
          }));
          break;
        default: break;
      }
    });
    if (!turn.ended) {
      // The stream ended without a terminal event (server stopping).
      rollback();
      toast('The server ended the turn before it finished; your message is back in the box.', true);
    }
  } catch (e) {
    startFailed = true;
    if (queued) {
      // It never started: the message is still in the queue.
      userLi.remove(); shell.li.remove();
      toast(e.message, true);
    } else rollback();
    if (queued) { /* said above */ } else if (e instanceof ApiError && e.status === 409) toast(e.message, true);
    else {
      toast(e.message, true);
      if (viewing()) {
        el.messages.append(h('li', { class: 'msg assistant' }, R.errorCard(e.message, {
          onRetry: (ev) => { ev.target.closest('li').remove(); send(); },
          onSwitch: () => openModelPicker(),
        })));
      }
    }
  } finally {
    S.inFlight.delete(sid);
    S.live.delete(sid);
    S.busy.delete(sid);
    updateComposer();
    if (viewing()) decorate(el.messages);
    // The next queued message starts (a stop or a failure paused the
    // queue); not after a turn that could not even start.
    if (turn.failed) Q.hold(sid, true);
    else if (!startFailed && !turn.stopped) Q.next(sid);
    loadSessions();
    if (viewing()) refreshInfo();
  }
}

export async function stopGeneration() {
  if (!S.session) return;
  const sid = S.session.id;
  if (!S.inFlight.has(sid) && !S.busy.has(sid)) return;
  // Whether this tab reads the turn's stream: its `stopped` event rolls
  // the view back; otherwise only the (rolled back) history can.
  const mine = S.inFlight.has(sid);
  try {
    await post('/chat/stop', { session_id: sid });
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 404)) toast(e.message, true);
  }
  if (!mine) {
    // A turn this tab only resumed into: no stream reader will see the
    // stopped event, so re-render from the (rolled back) history.
    S.busy.delete(sid);
    S.gen++;
    await loadHistory(sid, S.gen);
    updateComposer();
  }
  // The stop paused the queue: show it waiting.
  Q.load(sid);
}

// ---------- layout ----------
/** Chat ↔ Editor. The composer stays docked in both. */
export function setView(view) {
  const editing = view === 'editor';
  for (const b of document.querySelectorAll('#view-switch [data-view]')) {
    const on = b.dataset.view === view;
    b.setAttribute('aria-selected', String(on));
    b.tabIndex = on ? 0 : -1;
  }
  el.app.classList.toggle('editing', editing);
  $('#editor').hidden = !editing;
  try { localStorage.setItem('jarvis.view', view); } catch { /* private mode */ }
  if (editing) withEditor(async (m) => { await m.showEditor(); m.updateComposerContext(); });
  else if (ed) ed.updateComposerContext();
}

function closeSidebar() {
  el.app.classList.remove('sidebar-open');
  $('#toggle-sidebar').setAttribute('aria-expanded', 'false');
}

function wire() {
  // The latest message stays in view when the room below it changes (the
  // queue or a notice appears) as long as the reader was at the bottom.
  // (Also when the messages grow below it: action bars, a card.)
  let atBottom = true;
  el.conv.addEventListener('scroll', () => { atBottom = el.conv.scrollHeight - el.conv.scrollTop - el.conv.clientHeight < 48; });
  const stick = new ResizeObserver(() => { if (atBottom) el.conv.scrollTo({ top: el.conv.scrollHeight, behavior: 'instant' }); });
  stick.observe(el.conv);
  stick.observe(el.messages);
  el.form.addEventListener('submit', (e) => { e.preventDefault(); send(); });
  el.input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
  });
  el.input.addEventListener('input', autosize);
  el.stop.addEventListener('click', stopGeneration);
  $('#new-chat').addEventListener('click', newChat);
  $('#session-search').addEventListener('input', renderSidebar);
  $('#session-search').addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && e.target.value) { e.preventDefault(); e.stopPropagation(); e.target.value = ''; renderSidebar(); }
  });
  for (const b of document.querySelectorAll('#view-switch [data-view]')) {
    b.addEventListener('click', () => setView(b.dataset.view));
    b.addEventListener('keydown', (e) => {
      if (e.key === 'ArrowLeft' || e.key === 'ArrowRight') {
        e.preventDefault();
        const other = b.dataset.view === 'chat' ? 'editor' : 'chat';
        setView(other);
        $(`#view-${other}`).focus();
      }
    });
  }
  el.dbOnly.addEventListener('click', async () => {
    const on = el.dbOnly.getAttribute('aria-checked') !== 'true';
    setDbOnly(on);
    try {
      await post('/config', { kb_only: on, session_id: S.session && S.session.id });
      if (S.session) S.session.kb_only = on;
      toast(on ? 'DB only: answers come from your knowledge base alone' : 'The model may fall back to its own knowledge');
    } catch (e) { setDbOnly(!on); toast(e.message, true); }
  });
  $('#toggle-sidebar').addEventListener('click', () => {
    const open = !el.app.classList.contains('sidebar-open');
    el.app.classList.toggle('sidebar-open', open);
    $('#toggle-sidebar').setAttribute('aria-expanded', String(open));
  });
  $('#scrim').addEventListener('click', closeSidebar);
  $('#open-library').addEventListener('click', () => { closeSidebar(); openLibrary(); });
  el.modelButton.addEventListener('click', () => openModelPicker());
  $('#palette-button').addEventListener('click', () => openPalette());
  const menu = $('#menu');
  const menuBtn = $('#menu-button');
  const setMenu = (open) => { menu.hidden = !open; menuBtn.setAttribute('aria-expanded', String(open)); if (open) menu.querySelector('button').focus(); };
  menuBtn.addEventListener('click', (e) => { e.stopPropagation(); setMenu(menu.hidden); });
  document.addEventListener('click', (e) => { if (!menu.hidden && !menu.contains(e.target)) setMenu(false); });
  menu.addEventListener('keydown', (e) => { if (e.key === 'Escape') { setMenu(false); menuBtn.focus(); } });
  menu.addEventListener('click', (e) => {
    const a = e.target.closest('[data-action]');
    if (!a) return;
    setMenu(false);
    ({ library: openLibrary, timeline: openTimeline, digest: () => openDigest(), memory: () => openMemory(), style: openStyle, prompts: openPrompts, config: openConfig, mcp: openMcpServers, setup: () => openSetup(), palette: openPalette, voice: openVoices, pins: openPins, 'discard-suggestions': () => withEditor((m) => m.discardAllProposals()) })[a.dataset.action]();
  });
  document.addEventListener('keydown', (e) => {
    if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 'k') { e.preventDefault(); openPalette(); return; }
    if (e.key === 'Escape' && !document.querySelector('dialog[open]') && S.session && (S.inFlight.has(S.session.id) || S.busy.has(S.session.id))) {
      e.preventDefault(); stopGeneration();
    }
  });
}

async function boot() {
  wire();
  initLibrary();
  initTimeline();
  // A change the server made but could not add to the history (api.js).
  window.addEventListener('jarvis:history-warning', (ev) => toast(ev.detail, true));
  initViewer();
  digestFromHash();
  window.addEventListener('hashchange', digestFromHash);
  initResearch();
  // The last view comes back at once, before the network answers.
  let view = 'chat';
  try { view = localStorage.getItem('jarvis.view') || 'chat'; } catch { /* private mode */ }
  if (view === 'editor') setView('editor');
  initDialogs({ state: S, refreshInfo, onModelChanged: (spec) => { if (S.session) S.session.model = spec; refreshInfo(); } });
  initPalette({ state: S, newChat, resumeSession, openLibrary, openDigest: () => openDigest(), openModelPicker, openStyle, openPrompts, openConfig, openSetup, openCommands, openVoices, openPins, openMcpServers });
  initProfiles({ state: S, refreshInfo });
  initCommands({
    input: el.input, form: el.form, send, newChat, openModelPicker,
    switchModel: async (spec) => {
      if (!S.session) return;
      try { const r = await post('/model', { session_id: S.session.id, spec }); S.session.model = r.spec; refreshInfo(); toast(`Model: ${r.spec}`); } catch (e) { toast(e.message, true); }
    },
  });
  initActions({
    state: S,
    isRunning: (id) => S.inFlight.has(id) || S.busy.has(id),
    rewind: async (id) => (await post(`/sessions/${id}/rewind`, {})).question,
    // The rewound exchange leaves the screen before the question goes again.
    resend: async (text) => { await loadHistory(S.session.id, S.gen); send(text); },
    toComposer: (text) => { el.input.value = text; autosize(); el.input.focus(); },
  });
  onVoices(() => decorate(el.messages));
  Q.initQueue({
    state: S,
    isRunning: (id) => S.inFlight.has(id) || S.busy.has(id),
    run: (sid, item) => send(undefined, { sid, queued: item }),
  });
  initSetup({
    refreshInfo,
    // A model chosen in the set-up panel: the conversation on screen takes
    // it too while it has no messages (a new chat would anyway).
    onDefaultModel: async (spec) => {
      const s = S.session;
      if (s && !el.messages.children.length && !S.inFlight.has(s.id) && !S.busy.has(s.id)) {
        try { await post('/model', { session_id: s.id, spec }); s.model = spec; } catch (e) { toast(e.message, true); }
      }
      refreshInfo();
    },
  });
  // A fresh home opens on the first-run panel; notices say what is missing.
  const setup = refreshSetup({ openIfFirst: true });
  await loadSessions();
  try {
    // Reading the active session changes nothing; a first visit (or a
    // session gone since) asks for a fresh one explicitly.
    let r = await get('/sessions/active');
    if (!r.session) r = await post('/sessions/new');
    S.gen++;
    switchDraft(r.session.id);
    showSession(r.session);
    await loadHistory(r.session.id, S.gen);
    await Q.load(r.session.id);
    if (!r.busy) Q.next(r.session.id);
    if (r.busy) {
      el.messages.append(h('li', { class: 'msg assistant' }, R.workingLine()));
      el.welcome.hidden = true;
      S.busy.add(r.session.id);
      updateComposer();
      pollUntilDone(r.session.id, S.gen);
    }
  } catch (e) {
    toast(e.message, true);
  }
  await setup;
  if (!document.querySelector('dialog[open]')) el.input.focus();
}

boot();
