// The Library: papers (inline metadata edit, two-step removal that states
// the invariant line) and notes & records (read-only: a note is edited in
// Obsidian and re-synced). A row's title opens the source viewer. The
// filter is debounced and re-fetches; the server matches titles, authors
// and paths, and the text itself (a row found by its text shows the words
// around the match).

import { $, h, toast, debounce, openModal } from './dom.js';
import { get, post } from './api.js';
import { undoEvent } from './timeline.js';
import { openSource } from './viewer.js';

let kind = 'papers';
let seq = 0;

export const INVARIANT = 'Database entry only — files on disk are never touched by jarvis:';

export function initLibrary() {
  const dlg = $('#library-dialog');
  for (const b of dlg.querySelectorAll('[data-kind]')) {
    b.addEventListener('click', () => {
      kind = b.dataset.kind;
      for (const x of dlg.querySelectorAll('[data-kind]')) x.setAttribute('aria-selected', String(x === b));
      load();
    });
  }
  $('#library-search').addEventListener('input', debounce(load, 250));
  document.addEventListener('keydown', (e) => {
    if (e.key === '/' && dlg.open && document.activeElement !== $('#library-search')
      && !['INPUT', 'TEXTAREA'].includes(document.activeElement.tagName)) {
      e.preventDefault();
      $('#library-search').focus();
    }
  });
}

export function openLibrary() {
  openModal($('#library-dialog'));
  load();
  $('#library-search').focus();
}

async function load() {
  const my = ++seq;
  const q = $('#library-search').value.trim();
  const body = $('#library-body');
  let r;
  try {
    r = await get(`/documents?kind=${kind}&q=${encodeURIComponent(q)}`);
  } catch (e) {
    if (my === seq) body.replaceChildren(h('p', { class: 'error' }, e.message));
    return;
  }
  if (my !== seq) return; // a newer search answered first
  const docs = r.documents || [];
  $('#library-count').textContent = `${docs.length} ${kind === 'papers' ? 'paper' : 'note'}${docs.length === 1 ? '' : 's'}`;
  const problem = r.text_search ? h('p', { class: 'note' }, `Only titles and paths were searched: ${r.text_search}`) : '';
  if (!docs.length) {
    body.replaceChildren(problem, h('p', { class: 'empty' }, q ? `Nothing matches “${q}”.` : kind === 'papers'
      ? 'No papers yet. Add one with `jarvis kb add <arXiv id or PDF>` or ask the assistant.'
      : 'No notes indexed yet. Point `vault.path` at your Obsidian vault and run `jarvis kb index-vault`.'));
    return;
  }
  body.replaceChildren(problem, kind === 'papers' ? papersTable(docs) : notesTable(docs));
}

/** The title cell: a button that opens the document in the viewer, and
 *  the passage that matched a text search. */
function titleCell(d, sub, extra = []) {
  const label = d.title || d.file_path || d.source || '(untitled)';
  const open = h('button', { type: 'button', class: 'open-btn', 'aria-label': `View “${label}”` },
    h('div', { class: 't' }, label), h('div', { class: 'sub' }, sub));
  open.addEventListener('click', () => openSource({ key: d.key, kind: d.doc_type, label }, open));
  return h('td', { class: 't-cell' }, open, extra.flat(Infinity), d.found ? h('div', { class: 'found' }, `…${d.found}…`) : null);
}

function papersTable(docs) {
  const tbody = h('tbody', {}, docs.map(paperRow));
  return h('table', { class: 'lib' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Title'), h('th', {}, 'Authors'), h('th', {}, 'DOI'), h('th', {}, 'Added'), h('th', {}, h('span', { class: 'sr-only' }, 'Actions')))),
    tbody);
}

function paperRow(d) {
  const edit = h('button', { type: 'button', class: 'btn small ghost', 'aria-label': `Edit ${d.title}` }, 'Edit');
  const remove = h('button', { type: 'button', class: 'btn small ghost', 'aria-label': `Remove ${d.title}` }, 'Remove');
  const tr = h('tr', { dataset: { source: d.source } },
    titleCell(d, d.source),
    h('td', {}, d.authors || '—'),
    h('td', {}, d.doi || '—'),
    h('td', { class: 'sub' }, (d.date_added || '').slice(0, 10)),
    h('td', { class: 'acts' }, edit, ' ', remove));
  edit.addEventListener('click', () => tr.replaceWith(editRow(d)));
  remove.addEventListener('click', () => {
    if (tr.nextElementSibling && tr.nextElementSibling.classList.contains('confirm-row')) return;
    tr.after(removeRow(d, tr));
    tr.nextElementSibling.querySelector('.btn.danger').focus();
  });
  return tr;
}

function editRow(d) {
  const title = h('input', { value: d.title || '', 'aria-label': 'Title' });
  const authors = h('input', { value: d.authors || '', 'aria-label': 'Authors' });
  const doi = h('input', { value: d.doi || '', 'aria-label': 'DOI' });
  const save = h('button', { type: 'button', class: 'btn small primary' }, 'Save');
  const cancel = h('button', { type: 'button', class: 'btn small ghost' }, 'Cancel');
  const tr = h('tr', {}, h('td', { class: 't-cell' }, title, h('div', { class: 'sub' }, d.source)), h('td', {}, authors), h('td', {}, doi), h('td', {}), h('td', { class: 'acts' }, save, ' ', cancel));
  cancel.addEventListener('click', () => tr.replaceWith(paperRow(d)));
  const doSave = async () => {
    const body = { source: d.source };
    if (title.value !== (d.title || '')) body.title = title.value;
    if (authors.value !== (d.authors || '')) body.authors = authors.value;
    if (doi.value !== (d.doi || '')) body.doi = doi.value;
    if (Object.keys(body).length === 1) { tr.replaceWith(paperRow(d)); return; }
    save.disabled = true;
    try {
      const r = await post('/documents/meta', body);
      tr.replaceWith(paperRow(r.document));
      toast('Saved (metadata only; nothing was re-embedded)');
    } catch (e) { save.disabled = false; toast(e.message, true); }
  };
  save.addEventListener('click', doSave);
  tr.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') { e.preventDefault(); doSave(); }
    if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); tr.replaceWith(paperRow(d)); }
  });
  setTimeout(() => title.focus());
  return tr;
}

function removeRow(d, row) {
  const where = d.file_path || d.source;
  const ok = h('button', { type: 'button', class: 'btn small danger' }, 'Confirm removal');
  const cancel = h('button', { type: 'button', class: 'btn small ghost' }, 'Cancel');
  const tr = h('tr', { class: 'confirm-row' }, h('td', { colspan: 5 },
    h('div', { class: 'card confirm' },
      h('h3', {}, `Remove “${d.title || d.source}” from the knowledge base?`),
      h('p', { class: 'desc' }, `${d.chunks} chunk${d.chunks === 1 ? '' : 's'} will be deleted from the index.`),
      h('p', { class: 'invariant' }, `${INVARIANT} ${where}`),
      h('div', { class: 'row' }, ok, cancel))));
  cancel.addEventListener('click', () => { tr.remove(); row.querySelector('.acts button:last-child').focus(); });
  ok.addEventListener('click', async () => {
    ok.disabled = true;
    try {
      const r = await post('/documents/remove', { source: d.source });
      // The removal is an event: its Undo brings the chunks and vectors back.
      const undo = r.event ? {
        label: 'Undo',
        run: async () => {
          try { await undoEvent(r.event); load(); } catch (e) { toast(e.message, true); }
        },
      } : null;
      toast(r.message || 'Removed', false, undo);
      load();
    } catch (e) { ok.disabled = false; toast(e.message, true); }
  });
  return tr;
}

function notesTable(docs) {
  return h('table', { class: 'lib' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Note'), h('th', {}, 'Category'), h('th', {}, 'Status'), h('th', {}, 'Entity'), h('th', {}, 'Date'))),
    h('tbody', {}, docs.map((d) => h('tr', {},
      titleCell(d, d.file_path || '', [
        d.private ? h('span', { class: 'tag' }, 'private') : null,
        (d.tags || []).map((t) => h('span', { class: 'tag' }, `#${t}`))]),
      h('td', {}, d.category || '—'), h('td', {}, d.status || '—'), h('td', {}, d.entity || '—'),
      h('td', { class: 'sub' }, d.event_date || (d.date_added || '').slice(0, 10))))));
}
