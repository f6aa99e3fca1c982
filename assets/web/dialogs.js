// The model picker, the response-style modal, the prompts editor and the
// configuration view.

import { $, h, toast, openModal } from './dom.js';
import { get, post } from './api.js';

let ctx = null;

export function initDialogs(c) {
  ctx = c;
  $('#model-form').addEventListener('submit', (e) => { e.preventDefault(); switchTo($('#model-spec').value.trim()); });
  $('#style-form').addEventListener('submit', saveStyle);
  $('#prompt-save').addEventListener('click', savePrompt);
  $('#prompt-revert').addEventListener('click', revertPrompt);
  $('#prompt-text').addEventListener('input', () => { $('#prompt-save').disabled = false; });
}

// ---------- model picker ----------
export async function openModelPicker() {
  const dlg = $('#model-dialog');
  const err = $('#model-error');
  err.hidden = true;
  openModal(dlg);
  const sid = ctx.state.session && ctx.state.session.id;
  let r;
  try { r = await get(`/models?session_id=${encodeURIComponent(sid || '')}`); } catch (e) { err.textContent = e.message; err.hidden = false; return; }
  $('#model-note').textContent = r.private
    ? 'This conversation has seen private notes, so it can only continue on a local model.'
    : 'The switch applies from your next message. Local models keep everything on this machine.';
  const list = $('#model-list');
  list.replaceChildren(...r.models.map((m) => {
    const refused = r.private && !m.local;
    const why = refused ? 'Private conversation: cloud models are refused' : !m.credentials ? 'No API key configured for this provider' : '';
    const b = h('button', { type: 'button', role: 'option', 'aria-selected': String(!!m.current), disabled: refused || null, title: why || m.spec },
      h('span', { class: 'spec' }, m.spec),
      h('span', { class: `loc${m.local ? ' local' : ''}` }, m.local ? 'local' : 'cloud'),
      why ? h('span', { class: 'why' }, why) : null);
    b.addEventListener('click', () => switchTo(m.spec));
    return h('li', {}, b);
  }));
  $('#model-spec').value = '';
  (list.querySelector('[aria-selected="true"]') || $('#model-spec')).focus();
}

async function switchTo(spec) {
  const err = $('#model-error');
  err.hidden = true;
  if (!spec || !ctx.state.session) return;
  try {
    const r = await post('/model', { session_id: ctx.state.session.id, spec });
    $('#model-dialog').close();
    toast(`Switched to ${r.spec} from the next message`);
    ctx.onModelChanged(r.spec);
  } catch (e) {
    err.textContent = e.message;
    err.hidden = false;
  }
}

// ---------- response style ----------
export async function openStyle() {
  const dlg = $('#style-dialog');
  $('#style-error').hidden = true;
  try { $('#style-input').value = (await get('/settings')).response_style || ''; } catch (e) { toast(e.message, true); return; }
  openModal(dlg);
  $('#style-input').focus();
}

async function saveStyle(e) {
  e.preventDefault();
  try {
    await post('/settings', { response_style: $('#style-input').value });
    $('#style-dialog').close();
    toast('Response style saved — it applies from the next message');
  } catch (err) {
    $('#style-error').textContent = err.message;
    $('#style-error').hidden = false;
  }
}

// ---------- prompts ----------
let current = null;

export async function openPrompts() {
  openModal($('#prompts-dialog'));
  await listPrompts();
}

async function listPrompts() {
  let r;
  try { r = await get('/prompts'); } catch (e) { toast(e.message, true); return; }
  $('#prompt-list').replaceChildren(...r.prompts.map((p) => {
    const b = h('button', { type: 'button', 'aria-current': current === p.name ? 'true' : null },
      h('span', {}, p.title), p.differs ? h('span', { class: 'd' }, 'edited') : null);
    b.addEventListener('click', () => showPrompt(p));
    return h('li', {}, b);
  }));
  if (!current && r.prompts.length) showPrompt(r.prompts[0]);
}

async function showPrompt(p) {
  current = p.name;
  for (const b of $('#prompt-list').querySelectorAll('button')) b.removeAttribute('aria-current');
  const idx = [...$('#prompt-list').children].findIndex((li) => li.textContent.startsWith(p.title));
  if (idx >= 0) $('#prompt-list').children[idx].querySelector('button').setAttribute('aria-current', 'true');
  $('#prompt-name').textContent = p.title;
  $('#prompt-desc').textContent = p.description || '';
  $('#prompt-error').hidden = true;
  try {
    const r = await get(`/prompts/${encodeURIComponent(p.name)}`);
    $('#prompt-text').value = r.text;
    $('#prompt-text').disabled = false;
    $('#prompt-differs').hidden = !r.differs;
    $('#prompt-revert').disabled = !r.differs;
    $('#prompt-save').disabled = true;
  } catch (e) { $('#prompt-error').textContent = e.message; $('#prompt-error').hidden = false; }
}

async function savePrompt() {
  if (!current) return;
  try {
    const r = await post(`/prompts/${encodeURIComponent(current)}`, { text: $('#prompt-text').value });
    $('#prompt-differs').hidden = !r.differs;
    $('#prompt-revert').disabled = !r.differs;
    $('#prompt-save').disabled = true;
    $('#prompt-error').hidden = true;
    toast('Prompt saved — it applies from the next call');
    listPrompts();
  } catch (e) { $('#prompt-error').textContent = e.message; $('#prompt-error').hidden = false; }
}

async function revertPrompt() {
  if (!current) return;
  try {
    const r = await post(`/prompts/${encodeURIComponent(current)}/reset`, {});
    $('#prompt-text').value = r.text;
    $('#prompt-differs').hidden = true;
    $('#prompt-revert').disabled = true;
    $('#prompt-save').disabled = true;
    toast('Back to the shipped default');
    listPrompts();
  } catch (e) { $('#prompt-error').textContent = e.message; $('#prompt-error').hidden = false; }
}

// ---------- configuration ----------
export async function openConfig() {
  openModal($('#config-dialog'));
  const body = $('#config-body');
  let r;
  try { r = await get('/config/summary'); } catch (e) { body.replaceChildren(h('p', { class: 'error' }, e.message)); return; }
  const show = (v) => (v === null ? '—' : typeof v === 'string' ? v : JSON.stringify(v));
  body.replaceChildren(
    h('p', { class: 'note' }, `Resolved from defaults, ${r.file} and the environment. Edit with \`jarvis config set\`; this view re-reads on open.`),
    ...r.sections.map((s) => h('section', { class: 'cfg-section' }, h('h3', {}, `[${s.section}]`),
      h('table', { class: 'cfg' }, h('tbody', {}, s.settings.map((x) => h('tr', {},
        h('td', { title: x.help }, x.key), h('td', {}, show(x.value)), h('td', { class: 'o' }, x.origin))))))));
}
