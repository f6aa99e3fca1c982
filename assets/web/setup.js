// The first-run panel (vault → model → first index → a search) and the
// set-up notices above the composer: a missing or unreadable vault, a model
// that does not answer. Until a model is chosen the composer searches the
// knowledge base instead of chatting — that needs no model at all.
// A key typed here is sent once and cleared from the page; the server never
// sends it back.

import { $, h, toast, openModal } from './dom.js';
import { get, post } from './api.js';

let ctx = null;
let status = null;          // the last GET /setup
let kind = 'ollama';        // the model step's open tab
let polling = null;

const CLI = {
  ollama: 'jarvis config set chat.provider ollama:<model>',
  server: 'jarvis config set servers.local.base_url http://127.0.0.1:8000/v1 (and servers.local.model), then chat.provider local',
  anthropic: 'jarvis config set chat.anthropic_api_key <key>; jarvis config set chat.provider anthropic',
  openrouter: 'jarvis config set openrouter.api_key <key>; jarvis config set openrouter.model <vendor/model>; jarvis config set chat.provider openrouter',
};

export function initSetup(c) {
  ctx = c;
  $('#vault-form').addEventListener('submit', (e) => { e.preventDefault(); saveVault(); });
  $('#model-setup-form').addEventListener('submit', (e) => { e.preventDefault(); saveModel(); });
  $('#index-start').addEventListener('click', startIndex);
  $('#try-form').addEventListener('submit', (e) => { e.preventDefault(); trySearch(); });
  $('#setup-done').addEventListener('click', finish);
  $('#setup-later').addEventListener('click', () => $('#setup-dialog').close());
  $('#setup-dialog').addEventListener('close', () => { refresh().then(() => ctx && ctx.refreshInfo()); });
  for (const b of document.querySelectorAll('#model-kinds [data-kind]')) {
    b.addEventListener('click', () => showKind(b.dataset.kind));
    b.addEventListener('keydown', (e) => {
      if (e.key !== 'ArrowLeft' && e.key !== 'ArrowRight') return;
      e.preventDefault();
      const all = [...document.querySelectorAll('#model-kinds [data-kind]')];
      const i = all.indexOf(b) + (e.key === 'ArrowRight' ? 1 : -1);
      const next = all[(i + all.length) % all.length];
      showKind(next.dataset.kind);
      next.focus();
    });
  }
}

/** Whether the composer should search instead of chat (no model chosen and none answers). */
export function searchInstead() {
  return !!status && !status.model.configured && status.model.state !== 'ready';
}

/** Read the set-up state, draw the notices and the composer's mode; open the panel on a first run. */
export async function refresh({ openIfFirst = false } = {}) {
  try { status = await get('/setup'); } catch (e) { return null; }
  drawNotices();
  drawComposerMode();
  if (openIfFirst && status.first_run) openSetup();
  return status;
}

let searchMode = false;
function drawComposerMode() {
  const on = searchInstead();
  if (on === searchMode) return;   // the editor may have set its own placeholder
  searchMode = on;
  $('#input').placeholder = on ? 'Search your notes (no model yet)' : 'Ask your knowledge base…';
  $('#send').textContent = on ? 'Search' : 'Send';
}

/** Text with `backticked` commands shown as code (text nodes only, never markup). */
function withCode(text) {
  return String(text).split('`').map((part, i) => (i % 2 ? h('code', {}, part) : part));
}

function notice(tone, title, text, fix, actions) {
  const body = h('div', { class: 'notice-text' },
    h('strong', {}, title), ' ', ...withCode(text),
    fix ? h('span', { class: 'notice-fix' }, ' Fix: ', ...withCode(fix), '.') : null);
  // On a phone the text is cut to three lines; a tap shows the rest.
  body.addEventListener('click', () => body.classList.toggle('expanded'));
  return h('div', { class: `notice ${tone}`, role: 'group', 'aria-label': title }, body,
    h('div', { class: 'notice-acts' }, ...actions));
}

function drawNotices() {
  const box = $('#setup-notices');
  const kids = [];
  const setupBtn = () => h('button', { type: 'button', class: 'btn small', onclick: () => openSetup() }, 'Set up…');
  const v = status.vault;
  if (v.problem && (v.configured || !status.first_run)) {
    kids.push(notice('bad', 'Vault:', `${v.problem}.`, v.fix, [setupBtn()]));
  }
  const m = status.model;
  if (m.state !== 'ready') {
    const again = h('button', { type: 'button', class: 'btn small ghost' }, 'Check again');
    again.addEventListener('click', async () => {
      again.disabled = true;
      await refresh();
      if (ctx) ctx.refreshInfo();
    });
    const title = m.configured ? 'Model:' : 'No chat model yet:';
    const text = m.configured ? `${m.message}.` : `${m.message}. Searching your notes works without one — press Enter to search.`;
    kids.push(notice(m.configured ? 'bad' : 'warn', title, text, m.fix, [setupBtn(), again]));
  }
  box.replaceChildren(...kids);
  box.hidden = kids.length === 0;
}

// ---------- the panel ----------
export async function openSetup() {
  const dlg = $('#setup-dialog');
  openModal(dlg);
  if (!status) await refresh();
  if (!status) return;
  const v = status.vault;
  const path = $('#vault-path');
  if (!path.value) path.value = v.configured ? v.path : '';
  path.placeholder = v.path || '~/vault';
  showVault(v, v.configured);
  showModelState(status.model, status.model.configured);
  showIndex(status.index);
  if (status.index.running) pollIndex();
  showKind(kind);
  (v.configured && !v.problem ? $('#model-kinds [aria-selected="true"]') : path).focus();
}

function stepDone(id, done) {
  $(id).classList.toggle('done', !!done);
}

function showVault(v, chosen) {
  const out = $('#vault-status');
  out.classList.remove('bad', 'ok');
  if (!chosen) { out.textContent = ''; stepDone('#step-vault', false); updateIndexButton(); return; }
  if (v.problem) {
    out.textContent = `${v.problem} — ${v.fix}`;
    out.classList.add('bad');
  } else {
    out.textContent = `✓ ${v.path} — ${v.notes} ${v.notes === 1 ? 'note' : 'notes'} found`;
    out.classList.add('ok');
  }
  stepDone('#step-vault', !v.problem);
  updateIndexButton();
}

async function saveVault() {
  const out = $('#vault-status');
  out.classList.remove('bad', 'ok');
  out.textContent = 'Checking…';
  try {
    const v = await post('/setup/vault', { path: $('#vault-path').value });
    if (status) status.vault = v;
    showVault(v, true);
  } catch (e) {
    out.textContent = e.message;
    out.classList.add('bad');
    stepDone('#step-vault', false);
  }
}

function field(id, label, attrs = {}) {
  return h('div', { class: 'field' },
    h('label', { for: id }, label),
    h('input', { id, spellcheck: 'false', autocomplete: 'off', ...attrs }));
}

async function showKind(k) {
  kind = k;
  for (const b of document.querySelectorAll('#model-kinds [data-kind]')) {
    const on = b.dataset.kind === k;
    b.setAttribute('aria-selected', String(on));
    b.tabIndex = on ? 0 : -1;
  }
  const form = $('#model-setup-form');
  const submit = h('button', { class: 'btn primary', type: 'submit' }, k === 'ollama' || k === 'server' ? 'Use this model' : 'Save key and use it');
  $('#model-cli').replaceChildren('Terminal: ', h('code', {}, CLI[k]));
  if (k === 'ollama') {
    const line = h('p', { class: 'step-status', id: 'ollama-offer' }, 'Looking for Ollama on this machine…');
    const again = h('button', { type: 'button', class: 'btn ghost' }, 'Check again');
    form.replaceChildren(line, h('div', { class: 'field-row', id: 'ollama-pick' }), h('div', { class: 'row' }, submit, again));
    again.addEventListener('click', () => showKind('ollama'));
    let offer;
    try { offer = await get('/setup/ollama'); } catch (e) { line.textContent = e.message; return; }
    if (kind !== 'ollama') return;
    line.textContent = offer.answers ? `✓ ${offer.message} — ${offer.models.length} installed` : offer.message;
    line.classList.toggle('ok', offer.answers && offer.models.length > 0);
    line.classList.toggle('bad', !offer.answers);
    const pick = $('#ollama-pick');
    if (offer.models.length) {
      // The model new chats would use, when Ollama has it, comes first.
      const current = status && status.model.spec.startsWith('ollama:') ? status.model.spec.slice(7) : '';
      const sel = h('select', { id: 'setup-ollama-model' }, ...offer.models.map((m) => h('option', { value: m, selected: m === current || m === `${current}:latest` }, m)));
      pick.replaceChildren(h('div', { class: 'field' }, h('label', { for: 'setup-ollama-model' }, 'Installed model'), sel));
    } else {
      pick.replaceChildren(field('setup-ollama-model', 'Model name (once pulled)', { placeholder: 'qwen3:8b' }));
    }
  } else if (k === 'server') {
    form.replaceChildren(
      h('p', { class: 'note' }, 'llama.cpp, vLLM, LM Studio or any server that speaks the OpenAI chat API. A server on this machine counts as local.'),
      h('div', { class: 'field-row' },
        field('setup-base-url', 'Base URL', { placeholder: 'http://127.0.0.1:8000/v1', inputmode: 'url' }),
        field('setup-server-model', 'Model', { placeholder: 'the name the server knows it by' })),
      h('div', { class: 'field-row' },
        field('setup-server-key', 'API key (if it needs one)', { type: 'password' }),
        field('setup-server-name', 'Name in the config', { placeholder: 'local' })),
      h('div', { class: 'row' }, submit));
  } else {
    const isA = k === 'anthropic';
    form.replaceChildren(
      h('p', { class: 'note' }, `A cloud model: your questions and public notes go to ${isA ? 'Anthropic' : 'OpenRouter'}; private notes never do. The key is stored in config.toml, readable only by you, and never shown again.`),
      h('div', { class: 'field-row' },
        field('setup-key', 'API key', { type: 'password', placeholder: isA ? 'sk-ant-…' : 'sk-or-…' }),
        field('setup-cloud-model', isA ? 'Model (optional)' : 'Model', { placeholder: isA ? 'claude-sonnet-4-6' : 'anthropic/claude-sonnet-4.5' })),
      h('div', { class: 'row' }, submit));
  }
}

const val = (id) => { const e = document.getElementById(id); return e ? e.value.trim() : ''; };

async function saveModel() {
  const body = { kind };
  if (kind === 'ollama') body.model = val('setup-ollama-model');
  if (kind === 'server') Object.assign(body, { base_url: val('setup-base-url'), model: val('setup-server-model'), api_key: val('setup-server-key'), name: val('setup-server-name') });
  if (kind === 'anthropic' || kind === 'openrouter') Object.assign(body, { api_key: val('setup-key'), model: val('setup-cloud-model') });
  const out = $('#model-status');
  out.classList.remove('bad', 'ok');
  out.textContent = 'Saving and checking…';
  try {
    const m = await post('/setup/model', body);
    if (status) status.model = m;
    showModelState(m, true);
    // The empty conversation on screen follows the choice too.
    if (ctx) await ctx.onDefaultModel(m.spec);
  } catch (e) {
    out.textContent = e.message;
    out.classList.add('bad');
  } finally {
    // A key leaves the page as soon as it was sent.
    for (const id of ['setup-key', 'setup-server-key']) { const e = document.getElementById(id); if (e) e.value = ''; }
  }
}

function showModelState(m, chosen) {
  const out = $('#model-status');
  out.classList.remove('bad', 'ok');
  if (!chosen) {
    out.textContent = m.state === 'ready' ? `Without a choice new chats use ${m.spec}, which answers.` : '';
    stepDone('#step-model', false);
    return;
  }
  const ready = m.state === 'ready';
  out.textContent = ready ? `✓ New chats use ${m.spec} — ${m.message}` : `Saved ${m.spec}, but ${m.message} — ${m.fix || ''}`;
  out.classList.add(ready ? 'ok' : 'bad');
  stepDone('#step-model', ready);
}

function updateIndexButton() {
  const ok = status && status.vault.configured && !status.vault.problem;
  const running = status && status.index.running;
  $('#index-start').disabled = !ok || running;
  $('#index-start').title = ok ? '' : 'Choose the notes folder first';
}

function showIndex(p) {
  if (status) status.index = p;
  const bar = $('#index-bar');
  const out = $('#index-status');
  out.classList.remove('bad', 'ok');
  if (p.running) {
    bar.hidden = false;
    bar.max = Math.max(p.total, 1);
    bar.value = p.done;
    out.textContent = p.total ? `Indexing… ${p.done} of ${p.total} notes` : 'Indexing… (loading the embedding model)';
  } else if (p.outcome) {
    bar.hidden = p.failed;
    bar.max = 1;
    bar.value = 1;
    out.textContent = p.failed ? p.outcome : `✓ ${p.outcome}`;
    out.classList.add(p.failed ? 'bad' : 'ok');
  } else {
    bar.hidden = true;
    out.textContent = '';
  }
  stepDone('#step-index', !p.running && p.outcome && !p.failed);
  $('#index-start').textContent = p.outcome && !p.failed ? 'Index again' : 'Index my notes';
  updateIndexButton();
}

async function startIndex() {
  try {
    showIndex(await post('/setup/index', {}));
    pollIndex();
  } catch (e) {
    $('#index-status').textContent = e.message;
    $('#index-status').classList.add('bad');
  }
}

function pollIndex() {
  if (polling) return;
  polling = setInterval(async () => {
    let p;
    try { p = await get('/setup/index'); } catch { return; }
    showIndex(p);
    if (!p.running) {
      clearInterval(polling);
      polling = null;
      if (!p.failed) $('#try-q').focus();
    }
  }, 300);
}

async function trySearch() {
  const q = val('try-q');
  if (!q) return;
  const list = $('#try-hits');
  try {
    const hits = await get(`/search?q=${encodeURIComponent(q)}&n=5`);
    list.replaceChildren(...(hits.length ? hits.map(hitItem) : [h('li', { class: 'empty-note' }, 'No matches — index your notes first, or try other words.')]));
    list.scrollIntoView({ block: 'nearest' });
  } catch (e) {
    list.replaceChildren(h('li', { class: 'error' }, e.message));
  }
}

function hitItem(x) {
  return h('li', { class: 'hit' },
    h('div', { class: 'hit-head' },
      h('span', { class: 'hit-title' }, x.title || x.key),
      x.section ? h('span', { class: 'hit-section' }, `› ${x.section}`) : null,
      x.private ? h('span', { class: 'badge private' }, 'Private') : null),
    h('div', { class: 'hit-key' }, x.key),
    h('p', { class: 'hit-snippet' }, x.snippet));
}

async function finish() {
  try {
    await post('/setup/finish', {});
    $('#setup-dialog').close();
    toast('Set-up saved. The menu’s “Set-up…” opens it again.');
  } catch (e) { toast(e.message, true); }
}

/** The composer's search mode: the question and its hits as a card, not saved to any conversation. */
export async function searchInline(text, messages) {
  const li = h('li', { class: 'msg assistant' });
  messages.append(h('li', { class: 'msg user' }, h('div', { class: 'bubble' }, text)), li);
  li.append(h('div', { class: 'working' }, h('span', { class: 'busy-dot' }), 'Searching…'));
  try {
    const hits = await get(`/search?q=${encodeURIComponent(text)}&n=8`);
    li.replaceChildren(h('div', { class: 'card search-card', role: 'group', 'aria-label': 'Search results' },
      h('h3', {}, hits.length ? `${hits.length} ${hits.length === 1 ? 'passage' : 'passages'} from your knowledge base` : 'Nothing in your knowledge base matches'),
      hits.length ? h('ol', { class: 'search-hits' }, ...hits.map(hitItem)) : h('p', { class: 'note' }, 'Index your notes (Set up…) or try other words.'),
      h('p', { class: 'meta-line' }, 'A search only: no model was asked, and nothing was saved.')));
  } catch (e) {
    li.replaceChildren(h('div', { class: 'card error' }, h('h3', {}, 'The search failed'), h('p', { class: 'desc' }, e.message)));
  }
}
