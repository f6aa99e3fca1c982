// The pinned-context dialog (command palette → "Pinned context…"): short
// standing lines added to every turn, and notes or papers pinned by path
// (a line starting with @). Add, edit in place, pause, remove. The server
// keeps them and decides, per turn, what fits the budget and what a cloud
// model may not see.

import { h, toast, openModal } from './dom.js';
import { get, post } from './api.js';

let dlg = null;
let items = [];
let editing = null;

const STARTERS = ['I write in British English.', 'My thesis is about …', '@path/to/a note.md'];

function build() {
  const input = h('input', { id: 'pin-new', placeholder: 'A line to keep in every turn, or @path/to/note.md', autocomplete: 'off', maxlength: 2000 });
  const form = h('form', { class: 'pin-add', autocomplete: 'off' },
    h('label', { class: 'sr-only', for: 'pin-new' }, 'New pinned line'), input,
    h('button', { type: 'submit', class: 'btn primary' }, 'Pin'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    if (await change({ op: 'add', text })) input.value = '';
    input.focus();
  });
  dlg = h('dialog', { class: 'modal pins', id: 'pins-dialog', 'aria-labelledby': 'pins-title' },
    h('header', { class: 'modal-head' }, h('h2', { id: 'pins-title' }, 'Pinned context'),
      h('button', { type: 'button', class: 'icon-btn close', 'data-close': '', 'aria-label': 'Close' }, '✕')),
    h('div', { class: 'modal-body' },
      h('p', { class: 'note' }, 'Added to every turn of every conversation, within a budget. One item per line; start a line with @ to pin a note (its path in your vault) or a paper (its source). A private note is never sent to a cloud model — the answer says it was left out.'),
      form,
      h('ul', { class: 'pin-list', id: 'pin-list', 'aria-label': 'Pinned items' }),
      h('div', { class: 'pin-empty', id: 'pin-empty' },
        h('p', { class: 'note' }, 'Nothing pinned yet. For example:'),
        h('div', { class: 'pin-starters' }, STARTERS.map((t) => {
          const b = h('button', { type: 'button', class: 'chip' }, t);
          b.addEventListener('click', () => { input.value = t.replace(' …', ' ').replace('path/to/a note.md', ''); input.focus(); });
          return b;
        })))),
    h('footer', { class: 'modal-foot' }, h('button', { type: 'button', class: 'btn', 'data-close': '' }, 'Done')));
  document.body.append(dlg);
}

async function change(body) {
  try {
    items = (await post('/pins', body)).items || [];
    editing = null;
    draw();
    return true;
  } catch (e) {
    toast(e.message, true);
    return false;
  }
}

function draw() {
  const list = dlg.querySelector('#pin-list');
  dlg.querySelector('#pin-empty').hidden = items.length > 0;
  list.replaceChildren(...items.map((p) => {
    if (editing === p.id) {
      const input = h('input', { class: 'pin-edit', value: p.text, 'aria-label': 'Edit the pinned line', maxlength: 2000 });
      const done = (save) => (save && input.value.trim() && input.value.trim() !== p.text
        ? change({ op: 'edit', id: p.id, text: input.value })
        : (editing = null, draw()));
      input.addEventListener('keydown', (e) => {
        if (e.key === 'Enter') { e.preventDefault(); done(true); }
        // Escape leaves the edit, not the dialog.
        if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); done(false); }
      });
      setTimeout(() => { input.focus(); input.select(); });
      return h('li', { class: 'pin-item editing' }, input,
        h('button', { type: 'button', class: 'btn small primary', onclick: () => done(true) }, 'Save'));
    }
    const doc = p.text.startsWith('@');
    const text = h('button', { type: 'button', class: 'pin-text', title: 'Edit', 'aria-label': `Edit: ${p.text}` },
      doc ? h('span', { class: 'pin-kind' }, 'document') : null, doc ? p.text.slice(1).trim() : p.text);
    text.addEventListener('click', () => { editing = p.id; draw(); });
    const pause = h('button', { type: 'button', class: 'pill', role: 'switch', 'aria-checked': String(!p.paused), title: p.paused ? 'Paused: not sent. Click to use it again.' : 'In use. Click to pause.' },
      h('span', { class: 'pill-dot', 'aria-hidden': 'true' }), p.paused ? 'Paused' : 'On');
    if (!p.paused) pause.classList.add('on');
    pause.addEventListener('click', () => change({ op: 'pause', id: p.id, paused: !p.paused }));
    const rm = h('button', { type: 'button', class: 'msg-act', 'aria-label': `Remove: ${p.text}`, title: 'Remove' }, '✕');
    rm.addEventListener('click', async () => {
      const before = p.text;
      if (await change({ op: 'remove', id: p.id })) toast('Unpinned', false, { label: 'Undo', run: () => change({ op: 'add', text: before }) });
    });
    return h('li', { class: `pin-item${p.paused ? ' paused' : ''}` }, text, pause, rm);
  }));
}

export async function openPins() {
  if (!dlg) build();
  editing = null;
  try { items = (await get('/pins')).items || []; } catch (e) { toast(e.message, true); return; }
  draw();
  openModal(dlg);
  dlg.querySelector('#pin-new').focus();
}
