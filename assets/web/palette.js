// The command palette (Ctrl/⌘+K): new chat, switch session, switch model,
// open the Library and the other dialogs. Arrow keys move, Enter runs.

import { $, h, openModal } from './dom.js';

let ctx = null;
let items = [];
let sel = 0;

export function initPalette(c) {
  ctx = c;
  const input = $('#palette-input');
  input.addEventListener('input', render);
  input.addEventListener('keydown', (e) => {
    if (e.key === 'ArrowDown') { e.preventDefault(); sel = Math.min(sel + 1, items.length - 1); mark(); }
    if (e.key === 'ArrowUp') { e.preventDefault(); sel = Math.max(sel - 1, 0); mark(); }
    if (e.key === 'Enter') { e.preventDefault(); run(items[sel]); }
  });
}

function commands() {
  const base = [
    { label: 'New chat', hint: 'command', run: ctx.newChat },
    { label: 'Switch model…', hint: 'command', run: ctx.openModelPicker },
    { label: 'Open Library', hint: 'command', run: ctx.openLibrary },
    { label: 'Rate the digest', hint: 'command', run: ctx.openDigest },
    { label: 'Set response style…', hint: 'command', run: ctx.openStyle },
    { label: 'Edit prompts…', hint: 'command', run: ctx.openPrompts },
    { label: 'Custom commands…', hint: 'command', run: ctx.openCommands },
    { label: 'Show configuration', hint: 'command', run: ctx.openConfig },
    { label: 'MCP servers…', hint: 'command', run: ctx.openMcpServers },
    { label: 'Set-up (notes folder, model, first index)…', hint: 'command', run: ctx.openSetup },
    { label: 'Pinned context…', hint: 'command', run: ctx.openPins },
    { label: 'Read-aloud voice…', hint: 'command', run: ctx.openVoices },
  ];
  const sessions = ctx.state.sessions.map((m) => ({
    label: m.title || 'Untitled', hint: m.pinned ? 'pinned conversation' : 'conversation', run: () => ctx.resumeSession(m.id),
  }));
  return base.concat(sessions);
}

function render() {
  const q = $('#palette-input').value.trim().toLowerCase();
  items = commands().filter((c) => !q || c.label.toLowerCase().includes(q) || c.hint.includes(q)).slice(0, 40);
  sel = 0;
  $('#palette-list').replaceChildren(...items.map((c, i) => {
    const li = h('li', { role: 'option', id: `pal-${i}` }, h('span', {}, c.label), h('span', { class: 'k' }, c.hint));
    li.addEventListener('click', () => run(c));
    li.addEventListener('mousemove', () => { sel = i; mark(); });
    return li;
  }));
  mark();
}

function mark() {
  [...$('#palette-list').children].forEach((li, i) => li.setAttribute('aria-selected', String(i === sel)));
  const cur = $('#palette-list').children[sel];
  if (cur) { cur.scrollIntoView({ block: 'nearest' }); $('#palette-input').setAttribute('aria-activedescendant', cur.id); }
}

function run(c) {
  if (!c) return;
  $('#palette').close();
  c.run();
}

export function openPalette() {
  const dlg = $('#palette');
  $('#palette-input').value = '';
  render();
  openModal(dlg);
  $('#palette-input').focus();
}
