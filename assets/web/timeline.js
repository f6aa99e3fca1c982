// The Timeline: every change to the knowledge base (and to drafts, prompts,
// settings and chats, which live in files beside it), newest first, grouped
// by day, filterable by who made it and what it did, each with its Undo
// where the server says one is possible (and why not where it is not).
// An undo is itself an event: the list reloads and shows it on top.

import { $, h, toast, openModal } from './dom.js';
import { get, post } from './api.js';

let seq = 0;

// Every event kind: its label on a row, and its word in the "What" filter.
const KIND = {
  added: ['Added', 'added'], replaced: ['Replaced', 'replaced'], removed: ['Removed', 'removed'],
  metadata_set: ['Metadata set', 'metadata set'], present: ['Present when the log began', null],
  memory_accepted: ['Memory fact accepted', 'memory accepted'], memory_edited: ['Memory fact edited', 'memory edited'],
  memory_forgotten: ['Memory fact forgotten', 'memory forgotten'],
  draft_edit_applied: ['Suggested edit applied to draft', 'draft edits applied'],
  draft_restored: ['Draft version restored', 'draft versions restored'], draft_deleted: ['Draft deleted', 'drafts deleted'],
  prompt_edited: ['Prompt edited', 'prompts edited'], setting_edited: ['Setting changed', 'settings changed'],
  session_created: ['Chat created', 'chats created'], session_renamed: ['Chat renamed', 'chats renamed'],
  session_deleted: ['Chat deleted', 'chats deleted'], session_private: ['Chat made private', 'chats made private'],
};
const label = (k) => (KIND[k] || [k])[0];

export function initTimeline() {
  const kind = $('#timeline-kind');
  kind.replaceChildren(h('option', { value: '' }, 'everything'),
    ...Object.entries(KIND).filter(([, [, word]]) => word).map(([k, [, word]]) => h('option', { value: k }, word)),
    h('option', { value: 'undo' }, 'undos'));
  for (const id of ['#timeline-actor', '#timeline-kind']) $(id).addEventListener('change', load);
}

export function openTimeline() {
  openModal($('#timeline-dialog'));
  load();
}

/** Undo one event (or the user's newest undoable change); reloads an open Timeline. */
export async function undoEvent(id) {
  const r = await post('/timeline/undo', id ? { event: id } : {});
  toast(r.message || 'Undone');
  if ($('#timeline-dialog').open) load();
  return r;
}

async function load() {
  const my = ++seq;
  const actor = $('#timeline-actor').value;
  const kind = $('#timeline-kind').value;
  const body = $('#timeline-body');
  let r;
  try {
    r = await get(`/timeline?actor=${encodeURIComponent(actor)}&kind=${encodeURIComponent(kind)}`);
  } catch (e) {
    if (my === seq) body.replaceChildren(h('p', { class: 'error' }, e.message));
    return;
  }
  if (my !== seq) return;
  const events = r.events || [];
  $('#timeline-count').textContent = `${events.length} event${events.length === 1 ? '' : 's'}`;
  if (!events.length) {
    body.replaceChildren(h('p', { class: 'empty' }, actor || kind ? 'No event matches these filters.' : 'No changes yet.'));
    return;
  }
  const days = [];
  for (const e of events) {
    const day = (e.at || '').slice(0, 10);
    if (!days.length || days[days.length - 1].day !== day) days.push({ day, rows: [] });
    days[days.length - 1].rows.push(e);
  }
  body.replaceChildren(...days.map(({ day, rows }) => h('section', { class: 'tl-day' },
    h('h3', {}, day), h('ul', { class: 'tl' }, rows.map(row)))));
}

function row(e) {
  const what = e.undo_of ? `Undo of #${e.undo_of} · ${label(e.kind)}` : label(e.kind);
  const fields = e.kind === 'metadata_set' && e.fields ? ` (${Object.keys(e.fields).join(', ')})` : '';
  const detail = e.record && e.record.detail ? ` · ${e.record.detail}` : '';
  const li = h('li', { class: `tl-row by-${e.actor.by}`, dataset: { event: e.id } },
    h('span', { class: 'tl-time' }, (e.at || '').slice(11, 16)),
    h('div', { class: 'tl-main' },
      h('div', {}, h('span', { class: `tl-kind k-${e.kind}` }, what + fields), ' ',
        h('span', { class: 't' }, e.title || e.key),
        e.private ? h('span', { class: 'tag' }, 'private') : null),
      h('div', { class: 'sub' }, `#${e.id} · ${e.key}${detail} · by `, h('span', { class: 'tl-actor' }, e.actor_label))));
  if (e.undoable) {
    const b = h('button', { type: 'button', class: 'btn small', 'aria-label': `Undo event ${e.id}` }, 'Undo');
    b.addEventListener('click', async () => {
      b.disabled = true;
      try { await undoEvent(e.id); } catch (err) { b.disabled = false; toast(err.message, true); }
    });
    li.append(h('div', { class: 'acts' }, b));
  } else if (e.why_not && e.kind !== 'present') {
    li.append(h('div', { class: 'acts why', title: e.why_not }, 'Not undoable'));
  }
  return li;
}
