// The Memory view: what the assistant remembers about the user. Proposals
// (from the agent's `remember` tool or the idle-session extraction) wait
// at the top, each with Accept / Edit / Reject — the same review feel as a
// draft's hunks; accepted facts follow, each with Edit and Forget (a
// forgetting can be undone from its toast or the Timeline). A private fact
// says so: it is never shown to a cloud model.

import { $, h, toast, openModal } from './dom.js';
import { get, post } from './api.js';

let seq = 0;
let highlight = [];

/** Open the Memory view; `ids` (facts a reply used) are marked. */
export function openMemory(ids = []) {
  highlight = ids;
  openModal($('#memory-dialog'));
  load();
}

/** Under a reply: which memory facts were in its context, and what it
 *  proposed to remember; each opens the Memory view. */
export function memoryNote(reply) {
  const used = reply.memory || [];
  const proposed = reply.remembered || [];
  if (!used.length && !proposed.length) return null;
  const bits = [];
  if (used.length) {
    const b = h('button', { type: 'button', class: 'mem-note', title: `Facts in this reply's context: ${used.map((i) => `#${i}`).join(', ')}` },
      `Used ${used.length} remembered fact${used.length === 1 ? '' : 's'}`);
    b.addEventListener('click', () => openMemory(used));
    bits.push(b);
  }
  if (proposed.length) {
    const b = h('button', { type: 'button', class: 'mem-note' },
      `Proposed ${proposed.length} fact${proposed.length === 1 ? '' : 's'} to remember — review`);
    b.addEventListener('click', () => openMemory(proposed));
    bits.push(b);
  }
  return h('div', { class: 'mem-notes' }, ...bits);
}

async function load() {
  const my = ++seq;
  const body = $('#memory-body');
  let r;
  try {
    r = await get('/memory');
  } catch (e) {
    if (my === seq) body.replaceChildren(h('p', { class: 'error' }, e.message));
    return;
  }
  if (my !== seq) return;
  const pending = r.pending || [];
  const accepted = r.accepted || [];
  $('#memory-count').textContent = `${accepted.length} remembered · ${pending.length} to review`;
  const parts = [];
  if (pending.length) {
    parts.push(h('section', { class: 'mem-sec' },
      h('h3', {}, `Waiting for your review (${pending.length})`),
      h('ul', { class: 'mem-list' }, pending.map((f) => row(f, true)))));
  }
  parts.push(h('section', { class: 'mem-sec' },
    h('h3', {}, 'What I remember about you'),
    accepted.length
      ? h('ul', { class: 'mem-list' }, accepted.map((f) => row(f, false)))
      : h('p', { class: 'empty' }, 'Nothing yet. When you tell the assistant about your work, people or preferences, it proposes facts here for you to accept.')));
  body.replaceChildren(...parts);
}

function source(f) {
  const s = f.source || {};
  const from = { remember: 'proposed in chat', extraction: 'found in a finished chat', import: 'imported', user: 'added by you' }[s.origin] || s.origin;
  const where = s.session ? ` ${s.session}${s.message != null ? `, message ${s.message + 1}` : ''}` : '';
  return `#${f.id} · ${from}${where} · ${(s.at || '').slice(0, 10)}`;
}

function row(f, pending) {
  const li = h('li', { class: `mem-row${pending ? ' pending' : ''}${highlight.includes(f.id) ? ' hl' : ''}`, dataset: { fact: f.id } });
  const show = () => {
    li.replaceChildren(
      h('div', { class: 'mem-main' },
        h('div', {}, h('span', { class: 'mem-cat' }, f.category), ' ', h('span', { class: 'mem-key' }, f.key),
          f.source && f.source.private ? h('span', { class: 'tag', title: 'Learned in a private session: never shown to a cloud model' }, 'private') : null),
        h('div', { class: 'mem-text' }, f.text),
        h('div', { class: 'sub' }, source(f))),
      h('div', { class: 'acts' }, ...(pending
        ? [btn('Accept', 'primary', () => act(`/memory/${f.id}/accept`, {}, 'Accepted: it is used from the next message')),
          btn('Edit', '', edit),
          btn('Reject', 'danger', () => act(`/memory/${f.id}/reject`, {}, 'Rejected'))]
        : [btn('Edit', '', edit), btn('Forget', 'danger', forget)])));
  };
  const edit = () => {
    const cat = h('input', { type: 'text', value: f.category, 'aria-label': 'Category', maxlength: 60 });
    const key = h('input', { type: 'text', value: f.key, 'aria-label': 'Key', maxlength: 60 });
    const text = h('textarea', { rows: 2, 'aria-label': 'Fact', maxlength: 400 }, f.text);
    const save = btn(pending ? 'Accept edited' : 'Save', 'primary', () =>
      act(`/memory/${f.id}/${pending ? 'accept' : 'edit'}`, { category: cat.value, key: key.value, text: text.value },
        pending ? 'Accepted as edited' : 'Saved'));
    li.replaceChildren(h('div', { class: 'mem-main mem-edit' }, h('div', { class: 'mem-names' }, cat, key), text),
      h('div', { class: 'acts' }, save, btn('Cancel', '', show)));
    text.focus();
  };
  const forget = async () => {
    try {
      const r = await post(`/memory/${f.id}/forget`, {});
      load();
      toast(`Forgot “${f.key}”`, false, r.event ? { label: 'Undo', run: () => undo(r.event) } : null);
    } catch (e) { toast(e.message, true); }
  };
  show();
  return li;
}

async function undo(event) {
  try {
    const r = await post('/timeline/undo', { event });
    toast(r.message || 'Undone');
    if ($('#memory-dialog').open) load();
  } catch (e) { toast(e.message, true); }
}

async function act(url, body, done) {
  try {
    await post(url, body);
    toast(done);
    load();
  } catch (e) { toast(e.message, true); }
}

function btn(label, kind, run) {
  const b = h('button', { type: 'button', class: `btn small ${kind}`.trim() }, label);
  b.addEventListener('click', async () => { b.disabled = true; try { await run(); } finally { b.disabled = false; } });
  return b;
}
