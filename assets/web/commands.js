// Custom commands in the composer: the slash menu (built-ins first, then
// the user's commands with what to type after them), the built-ins the
// page runs itself (/new, /model, /commands), and the dialog that creates,
// edits — with a live preview of the expansion —, duplicates and deletes
// the command files. A custom command line is sent as typed: the server
// expands it (the same code `jarvis ask` runs).

import { $, h, toast, openModal } from './dom.js';
import { get, post } from './api.js';

let ctx = null;
let list = { commands: [], builtins: [] };
let menuItems = [];
let sel = 0;

export async function loadCommands() {
  try { list = await get('/commands'); } catch (e) { toast(e.message, true); }
  return list;
}

export function initCommands(c) {
  ctx = c;
  const input = ctx.input;
  const menu = h('ul', { class: 'slash-menu', id: 'slash-menu', role: 'listbox', 'aria-label': 'Commands', hidden: true });
  ctx.form.prepend(menu);
  input.setAttribute('aria-controls', 'slash-menu');
  input.addEventListener('input', renderMenu);
  input.addEventListener('blur', () => setTimeout(closeMenu, 150));
  // Capture: the menu's keys win over the composer's own Enter and Esc.
  input.addEventListener('keydown', onKey, true);
  loadCommands();
}

function query() {
  const m = /^\/([a-z0-9_-]*)$/.exec(ctx.input.value);
  return m ? m[1] : null;
}

function renderMenu() {
  const q = query();
  if (q === null) { closeMenu(); return; }
  const builtins = list.builtins.filter((b) => b.name.startsWith(q))
    .map((b) => ({ name: b.name, hint: b.name === 'model' ? 'provider:model' : '', description: b.description, builtin: true }));
  const mine = list.commands.filter((c) => !c.shadowed && c.name.startsWith(q));
  menuItems = [...builtins, ...mine, { manage: true }];
  sel = 0;
  const menu = $('#slash-menu');
  menu.replaceChildren(
    ...menuItems.map((it, i) => {
      const li = it.manage
        ? h('li', { role: 'option', id: `slash-${i}`, class: 'slash-manage' }, 'Manage your commands…')
        : h('li', { role: 'option', id: `slash-${i}`, dataset: { name: it.name } },
          h('span', { class: 'sl-name' }, `/${it.name}`),
          h('span', { class: 'sl-hint' }, it.hint || ''),
          h('span', { class: 'sl-desc' }, it.description || ''),
          h('span', { class: 'sl-kind' }, it.builtin ? 'built-in' : ''));
      li.addEventListener('mousedown', (e) => { e.preventDefault(); pick(it, false); });
      li.addEventListener('mousemove', () => { sel = i; mark(); });
      return li;
    }));
  menu.hidden = false;
  ctx.input.setAttribute('aria-expanded', 'true');
  mark();
}

function mark() {
  const menu = $('#slash-menu');
  [...menu.children].forEach((li, i) => li.setAttribute('aria-selected', String(i === sel)));
  const cur = menu.children[sel];
  if (cur) { cur.scrollIntoView({ block: 'nearest' }); ctx.input.setAttribute('aria-activedescendant', cur.id); }
}

function closeMenu() {
  const menu = $('#slash-menu');
  if (!menu || menu.hidden) return;
  menu.hidden = true;
  ctx.input.setAttribute('aria-expanded', 'false');
  ctx.input.removeAttribute('aria-activedescendant');
}

function fill(text) {
  ctx.input.value = text;
  ctx.input.dispatchEvent(new Event('input'));
  ctx.input.focus();
}

/** Run or complete a menu row. `tab` only completes. */
function pick(it, tab) {
  closeMenu();
  if (it.manage) { fill(''); openCommands(); return; }
  if (tab || it.hint || it.name === 'research') { fill(`/${it.name} `); return; }
  if (it.builtin) { fill(''); runBuiltin(it.name, ''); return; }
  ctx.send(`/${it.name}`);
  fill('');
}

/** A built-in typed in full: the page runs it. Returns whether it did. */
function runBuiltin(name, args) {
  switch (name) {
    case 'new': ctx.newChat(); return true;
    case 'commands': openCommands(); return true;
    case 'model':
      if (!args) { ctx.openModelPicker(); return true; }
      ctx.switchModel(args);
      return true;
    default: return false; // /research …: the message goes as typed
  }
}

function onKey(e) {
  const menu = $('#slash-menu');
  const open = menu && !menu.hidden;
  if (open && (e.key === 'ArrowDown' || e.key === 'ArrowUp')) {
    e.preventDefault(); e.stopImmediatePropagation();
    sel = e.key === 'ArrowDown' ? Math.min(sel + 1, menuItems.length - 1) : Math.max(sel - 1, 0);
    mark();
    return;
  }
  if (open && e.key === 'Escape') { e.preventDefault(); e.stopImmediatePropagation(); closeMenu(); return; }
  if (open && (e.key === 'Tab' || (e.key === 'Enter' && !e.shiftKey && !e.isComposing)) && menuItems[sel]) {
    e.preventDefault(); e.stopImmediatePropagation();
    pick(menuItems[sel], e.key === 'Tab');
    return;
  }
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    const m = /^\/([a-z0-9_-]+)(?:\s+([\s\S]*))?$/.exec(ctx.input.value.trim());
    if (m && list.builtins.some((b) => b.name === m[1]) && runBuiltin(m[1], (m[2] || '').trim())) {
      e.preventDefault(); e.stopImmediatePropagation();
      fill('');
    }
  }
}

// ---------- the dialog ----------
let dlg = null;
let editing = null; // the name being edited; null for a new command
let previewTimer = 0;

function field(label, input, note) {
  return h('label', { class: 'cmd-field' }, h('span', {}, label), input, note ? h('span', { class: 'note' }, note) : null);
}

function buildDialog() {
  dlg = h('dialog', { class: 'modal wide', id: 'commands-dialog', 'aria-labelledby': 'commands-title' },
    h('header', { class: 'modal-head' }, h('h2', { id: 'commands-title' }, 'Custom commands'),
      h('button', { type: 'button', class: 'icon-btn close', 'data-close': true, 'aria-label': 'Close' }, '✕')),
    h('div', { class: 'cmd-body' },
      h('div', { class: 'cmd-side' },
        h('button', { type: 'button', class: 'btn small primary', id: 'cmd-new' }, '+ New command'),
        h('ul', { class: 'cmd-list', id: 'cmd-list', role: 'list' })),
      h('form', { class: 'cmd-edit', id: 'cmd-form', autocomplete: 'off' },
        h('div', { class: 'cmd-row' },
          field('Name', h('input', { id: 'cmd-name', required: true, pattern: '[a-z0-9_-]{1,40}', spellcheck: 'false', placeholder: 'summarize' }), 'Run it as /name'),
          field('Arguments hint', h('input', { id: 'cmd-hint', placeholder: 'from the placeholders', spellcheck: 'false' }))),
        field('Description', h('input', { id: 'cmd-desc', maxlength: 200, placeholder: 'What it does, for the slash menu' })),
        h('div', { class: 'cmd-row' },
          field('Model (optional)', h('input', { id: 'cmd-model', placeholder: 'provider:model', spellcheck: 'false' })),
          field('Profile (optional)', h('select', { id: 'cmd-profile' }, h('option', { value: '' }, '— the conversation’s own —')))),
        field('Template', h('textarea', { id: 'cmd-template', rows: 4, spellcheck: 'false', placeholder: 'Summarise what my notes say about $1…' }),
          '$ARGUMENTS is everything typed after the name; $1…$9 one argument each ("quoted words" count as one). Arguments no placeholder asks for are added at the end.'),
        field('Try it with', h('input', { id: 'cmd-args', placeholder: 'foo bar', spellcheck: 'false' })),
        h('div', { class: 'cmd-preview-head' }, 'The model is sent'),
        h('pre', { class: 'cmd-preview', id: 'cmd-preview', 'aria-live': 'polite' }),
        h('p', { class: 'error', id: 'cmd-error', role: 'alert', hidden: true }),
        h('div', { class: 'modal-foot' },
          h('button', { type: 'button', class: 'btn ghost danger-text', id: 'cmd-delete' }, 'Delete'),
          h('button', { type: 'button', class: 'btn ghost', id: 'cmd-duplicate' }, 'Duplicate'),
          h('button', { type: 'submit', class: 'btn primary' }, 'Save')))));
  document.body.append(dlg);
  $('#cmd-new', dlg).addEventListener('click', () => edit(null));
  $('#cmd-duplicate', dlg).addEventListener('click', duplicate);
  $('#cmd-delete', dlg).addEventListener('click', remove);
  $('#cmd-form', dlg).addEventListener('submit', (e) => { e.preventDefault(); save(); });
  for (const id of ['#cmd-template', '#cmd-args']) $(id, dlg).addEventListener('input', schedulePreview);
}

function current() {
  return {
    name: $('#cmd-name', dlg).value.trim(),
    description: $('#cmd-desc', dlg).value.trim(),
    hint: $('#cmd-hint', dlg).value.trim(),
    model: $('#cmd-model', dlg).value.trim(),
    profile: $('#cmd-profile', dlg).value,
    template: $('#cmd-template', dlg).value,
  };
}

function schedulePreview() {
  clearTimeout(previewTimer);
  previewTimer = setTimeout(async () => {
    try {
      const r = await post('/commands/preview', { template: $('#cmd-template', dlg).value, args: $('#cmd-args', dlg).value });
      $('#cmd-preview', dlg).textContent = r.prompt;
    } catch (e) { $('#cmd-preview', dlg).textContent = e.message; }
  }, 120);
}

function renderList() {
  const rows = list.commands.map((c) => {
    const b = h('button', { type: 'button', class: `cmd-item${editing === c.name ? ' on' : ''}`, 'aria-current': editing === c.name ? 'true' : null },
      h('span', { class: 'sl-name' }, `/${c.name}`), h('span', { class: 'sl-desc' }, c.shadowed ? 'shadowed by the built-in' : c.description));
    b.addEventListener('click', () => edit(c));
    return h('li', {}, b);
  });
  const builtins = list.builtins.map((b) => h('li', { class: 'cmd-builtin' },
    h('span', { class: 'sl-name' }, `/${b.name}`), h('span', { class: 'sl-desc' }, b.description)));
  $('#cmd-list', dlg).replaceChildren(...rows, h('li', { class: 'cmd-group', 'aria-hidden': 'true' }, 'Built-in'), ...builtins);
}

function edit(c) {
  editing = c ? c.name : null;
  $('#cmd-name', dlg).value = c ? c.name : '';
  $('#cmd-desc', dlg).value = c ? c.description : '';
  $('#cmd-hint', dlg).value = c ? c.hint : '';
  $('#cmd-model', dlg).value = c ? c.model : '';
  $('#cmd-profile', dlg).value = c ? c.profile : '';
  $('#cmd-template', dlg).value = c ? c.template : '';
  $('#cmd-args', dlg).value = '';
  $('#cmd-error', dlg).hidden = true;
  $('#cmd-delete', dlg).disabled = !c;
  $('#cmd-duplicate', dlg).disabled = !c;
  renderList();
  schedulePreview();
  $('#cmd-name', dlg).focus();
}

async function save() {
  const err = $('#cmd-error', dlg);
  err.hidden = true;
  try {
    const saved = await post('/commands/save', { command: current(), previous: editing });
    await loadCommands();
    toast(`Saved /${saved.name}`);
    edit(list.commands.find((c) => c.name === saved.name) || saved);
  } catch (e) { err.textContent = e.message; err.hidden = false; }
}

async function duplicate() {
  const c = current();
  let name = `${c.name}-copy`;
  for (let n = 2; list.commands.some((x) => x.name === name); n++) name = `${c.name}-copy-${n}`;
  try {
    const saved = await post('/commands/save', { command: { ...c, name } });
    await loadCommands();
    edit(list.commands.find((x) => x.name === saved.name) || saved);
  } catch (e) { const err = $('#cmd-error', dlg); err.textContent = e.message; err.hidden = false; }
}

async function remove() {
  if (!editing || !confirm(`Delete /${editing}? Its file in the commands folder goes.`)) return;
  try {
    await post('/commands/delete', { name: editing });
    await loadCommands();
    toast('Command deleted');
    edit(list.commands[0] || null);
  } catch (e) { toast(e.message, true); }
}

export async function openCommands() {
  if (!dlg) buildDialog();
  await loadCommands();
  try {
    const p = await get('/profiles');
    $('#cmd-profile', dlg).replaceChildren(h('option', { value: '' }, '— the conversation’s own —'),
      ...p.profiles.map((x) => h('option', { value: x.id }, x.name)));
  } catch { /* the select keeps "none" */ }
  openModal(dlg);
  edit(list.commands[0] || null);
}
