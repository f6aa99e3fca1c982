// The queue above the composer: messages typed while a turn runs wait
// here (kept by the server per conversation, so a reload keeps them), can
// be edited in place, moved, removed, or sent now — handed to the running
// turn after its current tool round. When a turn ends the next one starts
// (app.js asks `next()`); a Stop pauses the queue until Resume.

import { $, h, toast } from './dom.js';
import { get, post } from './api.js';

let ctx = null;
let shown = { id: null, items: [], held: false };
let editing = null; // id of the row being edited
let kept = null; // the edit's text across a redraw

/** ctx: {state, isRunning(id), run(sessionId, item)} */
export function initQueue(c) {
  ctx = c;
}

const panel = () => $('#queue');

export function current(sessionId) {
  return shown.id === sessionId ? shown : { id: sessionId, items: [], held: false };
}

/** Read the queue of `sessionId` and draw it (the viewed session only). */
export async function load(sessionId) {
  let q;
  try { q = await get(`/queue?session_id=${encodeURIComponent(sessionId)}`); } catch (e) { toast(e.message, true); return current(sessionId); }
  return show(sessionId, q);
}

function show(sessionId, q) {
  const viewed = ctx.state.session && ctx.state.session.id === sessionId;
  if (!viewed) return { id: sessionId, ...q };
  if (shown.id !== sessionId) editing = null;
  shown = { id: sessionId, items: q.items || [], held: !!q.held };
  draw();
  return shown;
}

async function op(sessionId, body) {
  try {
    const q = await post('/queue', { session_id: sessionId, ...body });
    return show(sessionId, q);
  } catch (e) {
    toast(e.message, true);
    await load(sessionId);
    return null;
  }
}

// Adds go one after another, so two typed in quick succession keep their
// order (two requests in flight could reach the server either way round).
let adding = Promise.resolve();

/** Queue `text` behind the running turn. */
export function add(sessionId, text) {
  adding = adding.then(() => op(sessionId, { op: 'add', text }));
  return adding;
}
export const hold = (sessionId, held) => op(sessionId, { op: 'hold', held });

/** The turn on `sessionId` ended: start the next queued message unless a
 *  stop (or a failure) paused the queue. */
export async function next(sessionId) {
  const q = await load(sessionId);
  if (!q || q.held || !q.items.length || ctx.isRunning(sessionId)) return;
  ctx.run(sessionId, q.items[0]);
}

function draw() {
  const p = panel();
  // A redraw (the turn's state changed) keeps what is being typed in an edit.
  const typing = p.querySelector('.queue-item.editing');
  kept = typing && typing.dataset.id === editing ? typing.querySelector('.edit-area').value : null;
  const { id, items, held } = shown;
  p.hidden = !items.length;
  if (!items.length) { p.replaceChildren(); return; }
  const running = ctx.isRunning(id);
  const head = h('div', { class: 'queue-head' },
    h('span', { class: 'queue-title' }, `${items.length} queued`),
    h('span', { class: 'queue-state' }, held
      ? 'Paused after a stop — nothing is sent until you resume.'
      : running ? 'Sent one by one when the answer finishes.' : 'Starting the next one…'),
    held ? h('button', { type: 'button', class: 'btn small primary', onclick: async () => { await hold(id, false); next(id); } }, 'Resume') : null,
    h('button', { type: 'button', class: 'btn small ghost', onclick: () => op(id, { op: 'clear' }) }, 'Clear'));
  const rows = items.map((it, i) => row(id, it, i, items.length, running));
  p.replaceChildren(head, h('ol', { class: 'queue-list', 'aria-label': 'Queued messages' }, rows));
}

function row(id, it, i, n, running) {
  if (editing === it.id) {
    const area = h('textarea', { class: 'edit-area', 'aria-label': 'Edit the queued message', rows: Math.min(6, it.text.split('\n').length + 1) });
    area.value = kept ?? it.text;
    const done = async (save) => {
      editing = null;
      if (save && area.value.trim() && area.value.trim() !== it.text) await op(id, { op: 'edit', id: it.id, text: area.value });
      else draw();
    };
    area.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); done(true); }
      // Escape leaves the edit, never stops the turn.
      if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); done(false); }
    });
    setTimeout(() => area.focus());
    return h('li', { class: 'queue-item editing', dataset: { id: it.id } }, area,
      h('div', { class: 'queue-acts' },
        h('button', { type: 'button', class: 'btn small ghost', onclick: () => done(false) }, 'Cancel'),
        h('button', { type: 'button', class: 'btn small primary', onclick: () => done(true) }, 'Save')));
  }
  const btn = (label, glyph, f, extra = {}) => h('button', { type: 'button', class: 'msg-act', 'aria-label': label, title: label, onclick: f, ...extra }, glyph);
  const text = h('button', { type: 'button', class: 'queue-text', title: 'Edit', 'aria-label': `Edit queued message: ${it.text}` }, it.text);
  text.addEventListener('click', () => { editing = it.id; draw(); });
  return h('li', { class: `queue-item${it.steer ? ' steer' : ''}`, dataset: { id: it.id } },
    h('span', { class: 'queue-n', 'aria-hidden': 'true' }, String(i + 1)),
    text,
    it.steer ? h('span', { class: 'queue-badge' }, running ? 'after this tool round' : 'next') : null,
    h('span', { class: 'queue-acts' },
      running && !it.steer ? btn('Send now: hand it to the running answer after its current tool round', '⚡', () => op(id, { op: 'steer', id: it.id }), { class: 'msg-act send-now' }) : null,
      btn('Move up', '↑', () => op(id, { op: 'move', id: it.id, to: i - 1 }), { disabled: i === 0 }),
      btn('Move down', '↓', () => op(id, { op: 'move', id: it.id, to: i + 1 }), { disabled: i === n - 1 }),
      btn('Remove', '✕', () => op(id, { op: 'remove', id: it.id }))));
}

/** Redraw (the running state changed). */
export function refresh() { if (shown.id) draw(); }

/** A question handed to the running turn, as the transcript shows it. */
export function steeredBubble(text) {
  return h('li', { class: 'msg user steered' },
    h('span', { class: 'steered-mark' }, '↳ sent while working'),
    h('div', { class: 'bubble' }, text));
}
