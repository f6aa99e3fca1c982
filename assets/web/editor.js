// The Editor view: drafts list | source | preview, the composer docked
// below. One CodeMirror instance; each open file is a tab holding its own
// CodeMirror Doc (text, undo history, cursor), shown with swapDoc.
//
// Rules this file keeps:
// - Dirty is asked of the Doc (isClean against the generation of the last
//   successful save), never kept in a flag beside it.
// - Saving is explicit (Ctrl/⌘+S, the Save button, and implicitly before a
//   preview or build). Every save carries the hash the text was loaded at;
//   a refused save leaves the tab dirty and says why. No idle autosave.
// - A review lives in a Doc of its own (review.js, editor-review.js); saves
//   read tab.doc only.
// The preview pane is preview.js; shared state is editor-state.js; the
// citation completion is cite.js.

import { $, h, toast, relTime } from './dom.js';
import { get, post, del, ApiError } from './api.js';
import { withMenu } from './filemenu.js';
import { showHistory } from './history.js';
import { E, el, hooks, modeFor, isMd, isTex, keyOf, isDirty, proposalFor, isWide } from './editor-state.js';
import { clearPreview, renderPreview, measureAnchors, syncScroll } from './preview.js';
import { build, showPages, showFailed, watchPaneWidth } from './build.js';
import { openReview, answerAll, discardReview } from './editor-review.js';
import { attachCitations } from './cite.js';
import { ask } from './ask.js';

// ---------- lifecycle ----------
export function initEditor() {
  Object.assign(hooks, { save, showTab, refreshDrafts, reloadFromDisk });
  el.root = $('#editor');
  el.list = $('#draft-list');
  el.tabs = $('#editor-tabs');
  el.host = $('#cm-host');
  el.frame = $('#preview-frame');
  el.previewNote = $('#preview-note');
  el.status = $('#editor-status');
  el.reviewBar = $('#review-bar');
  el.save = $('#ed-save');
  el.preview = $('#ed-preview');
  el.compile = $('#ed-compile');
  el.export = $('#ed-export');
  el.history = $('#ed-history');
  el.empty = $('#editor-empty');
  el.pdfLink = $('#preview-download');
  el.pages = $('#preview-pages');
  el.failed = $('#build-failed');
  el.failedTitle = $('#build-failed-title');
  el.failedMessage = $('#build-failed-message');
  el.failedError = $('#build-error');
  el.failedLog = $('#build-log');
  el.failedBack = $('#build-back');
  el.failedGoto = $('#build-goto');
  watchPaneWidth();
  $('#ed-new').addEventListener('click', newDraft);
  el.save.addEventListener('click', () => saveAndRefresh());
  el.preview.addEventListener('click', () => renderPreview());
  el.compile.addEventListener('click', () => build('/compile', el.compile, 'Compiling'));
  el.export.addEventListener('click', () => build('/export', el.export, 'Exporting'));
  el.history.addEventListener('click', openHistory);
  $('#rv-accept-all').addEventListener('click', () => answerAll(true));
  $('#rv-reject-all').addEventListener('click', () => answerAll(false));
  $('#rv-discard').addEventListener('click', discardReview);
  document.addEventListener('keydown', (e) => {
    if (!E.started || el.root.hidden) return;
    if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 's') { e.preventDefault(); saveAndRefresh(); }
  });
  window.addEventListener('resize', () => {
    const wide = isWide();
    if (wide !== E.wide && E.current && E.current.review) showTab(E.current);
    E.wide = wide;
    measureAnchors();
  });
  // Leaving with unsaved text asks first (the browser's own prompt).
  window.addEventListener('beforeunload', (e) => {
    if (E.tabs.some(isDirty)) { e.preventDefault(); e.returnValue = ''; }
  });
}

function ensureCm() {
  if (E.cm) return;
  // eslint-disable-next-line no-undef
  E.cm = CodeMirror(el.host, {
    value: '',
    lineNumbers: true,
    lineWrapping: true,
    matchBrackets: true,
    styleActiveLine: true,
    indentUnit: 2,
    tabSize: 2,
    screenReaderLabel: 'Draft source',
    extraKeys: {
      'Ctrl-S': () => saveAndRefresh(),
      'Cmd-S': () => saveAndRefresh(),
      Enter: 'newlineAndIndentContinueMarkdownList',
      Tab: false,
      'Shift-Tab': false,
    },
  });
  E.cm.on('changes', () => { renderTabs(); updateStatus(); });
  E.cm.on('scroll', syncScroll);
  // \cite{ in a .tex, [@ in a .md: the library's keys as you type.
  attachCitations(E.cm, {
    isTex: () => !!E.current && !E.current.review && isTex(E.current.filename),
    isMd: () => !!E.current && !E.current.review && isMd(E.current.filename),
  });
}

/** Called when the Editor view is shown. */
export async function showEditor() {
  E.started = true;
  ensureCm();
  await refreshDrafts();
  E.cm.refresh();
  if (E.current) E.cm.focus();
}

export async function refreshDrafts() {
  try {
    const [d, p] = await Promise.all([get('/drafts'), get('/proposals')]);
    E.drafts = d.drafts || [];
    E.tools = { latex: !!d.latex, pandoc: !!d.pandoc };
    E.proposals = p.proposals || [];
  } catch (e) { toast(e.message, true); }
  renderList();
  renderTabs();
  updateToolbar();
}

/** A suggestion arrived in a chat turn (the `edit_proposal` event). */
export function onProposal(ev) {
  if (!E.proposals.some((p) => p.token === ev.token)) E.proposals.push(ev);
  if (!E.started) return;
  refreshDrafts().then(() => {
    const t = E.tabs.find((x) => x.draft_id === ev.draft_id && x.filename === ev.filename);
    // In the Editor view the suggestion opens for review at once; a file
    // with unsaved edits is not taken off screen (its ✎ says one waits).
    if (t && t === E.current) showTab(t);
    else if (!el.root.hidden && !(E.current && isDirty(E.current))) openFile(ev.draft_id, ev.filename);
  });
}

/** Open a file and show it (from the chat's "Review in editor" too). */
export async function openFile(draftId, filename) {
  ensureCm();
  const key = keyOf(draftId, filename);
  let t = E.tabs.find((x) => x.key === key);
  if (!t) {
    let f;
    try {
      f = await get(`/drafts/${encodeURIComponent(draftId)}/file?name=${encodeURIComponent(filename)}`);
    } catch (e) { toast(e.message, true); return; }
    // eslint-disable-next-line no-undef
    const doc = CodeMirror.Doc(f.text, modeFor(filename));
    t = { key, draft_id: draftId, filename, doc, hash: f.hash, cleanGen: doc.changeGeneration(true), status: '', versions: f.versions || [], review: null };
    E.tabs.push(t);
  }
  await showTab(t);
}

// ---------- the drafts list ----------
function renderList() {
  const kids = [];
  for (const d of E.drafts) {
    const files = d.files && d.files.length ? d.files : [d.main_file];
    const items = files.map((f) => {
      const pending = E.proposals.some((p) => p.draft_id === d.id && p.filename === f);
      const active = E.current && E.current.key === keyOf(d.id, f);
      const b = h('button', { type: 'button', class: `draft-file${active ? ' active' : ''}`, 'aria-current': active ? 'true' : null, dataset: { draft: d.id, file: f } },
        h('span', { class: 'file-name' }, f),
        pending ? h('span', { class: 'pending-mark', title: 'A suggested change waits for review', 'aria-label': 'suggestion waiting' }, '✎') : null);
      b.addEventListener('click', () => openFile(d.id, f));
      withMenu(b, () => fileMenu(d, f));
      return h('li', {}, b);
    });
    const add = h('button', { type: 'button', class: 'btn ghost small add-file', 'aria-label': `Add a file to ${d.title || d.id}` }, '+ file');
    add.addEventListener('click', () => addFile(d));
    kids.push(h('li', { class: 'draft' },
      h('div', { class: 'draft-head' },
        h('span', { class: 'draft-title', title: d.id }, d.title || d.id),
        d.visibility === 'private' ? h('span', { class: 'private-mark', title: 'Private', 'aria-label': 'private' }, '●') : null,
        d.keep ? h('span', { class: 'keep-mark', title: 'Kept: exempt from the retention sweep' }, 'kept') : null,
        h('span', { class: 'draft-when' }, relTime(Date.parse(d.updated) / 1000)),
        add),
      h('ul', { class: 'draft-files', role: 'list' }, items)));
  }
  el.list.replaceChildren(...kids);
  $('#drafts-empty').hidden = E.drafts.length > 0;
}

async function newDraft() {
  const a = await ask({
    title: 'New draft',
    note: 'A draft is a folder of its own under Jarvis’s drafts; the assistant can read it and suggest changes you review.',
    fields: [
      { name: 'filename', label: 'File name', value: 'draft.md', required: true, hint: 'Markdown (.md) or LaTeX (.tex), e.g. notes.md or paper.tex.' },
      { name: 'title', label: 'Title', placeholder: 'optional — the file name without its extension' },
    ],
    ok: 'Create',
  });
  if (!a) return;
  const filename = a.filename;
  const title = a.title || filename.replace(/\.[^.]+$/, '');
  try {
    const r = await post('/drafts/new', { filename, title });
    await refreshDrafts();
    await openFile(r.draft_id, r.filename);
  } catch (e) { toast(e.message, true); }
}

async function addFile(d) {
  const a = await ask({
    title: `New file in “${d.title || d.id}”`,
    fields: [{ name: 'filename', label: 'File name', placeholder: 'e.g. chapter2.tex or refs.bib', required: true }],
    ok: 'Create',
  });
  if (!a) return;
  const filename = a.filename;
  try {
    const r = await post('/drafts/new', { draft_id: d.id, filename: filename.trim() });
    await refreshDrafts();
    await openFile(d.id, r.filename);
  } catch (e) { toast(e.message, true); }
}

// ---------- the file menu (right-click, context-menu key, Shift+F10) ----------
function fileMenu(d, f) {
  const p = E.proposals.find((x) => x.draft_id === d.id && x.filename === f);
  const name = d.title || d.id;
  return [
    { label: `Open ${f}`, run: () => openFile(d.id, f) },
    p ? { label: 'Review the suggested change', run: () => openFile(d.id, f) } : false,
    p ? { label: 'Discard the suggested change', run: () => discardProposal(p), danger: true } : false,
    null,
    { label: `New file in “${name}”…`, run: () => addFile(d) },
    { label: 'History…', run: async () => { await openFile(d.id, f); openHistory(); } },
    { label: d.keep ? 'Stop keeping (clean up when stale)' : 'Keep (never cleaned up)', run: () => setKeep(d, !d.keep) },
    { label: 'Show in file manager', run: () => reveal(d.id, f) },
    null,
    { label: `Delete draft “${name}”…`, run: () => deleteDraft(d), danger: true },
  ].filter((x) => x !== false); // null is a separator
}

/** Drop a waiting suggestion; the file is untouched. */
async function discardProposal(p) {
  try { await post('/discard-edit', { token: p.token }); } catch (e) { toast(e.message, true); return; }
  E.proposals = E.proposals.filter((x) => x.token !== p.token);
  const t = E.tabs.find((x) => x.draft_id === p.draft_id && x.filename === p.filename);
  if (t && t.review && t.review.token === p.token) t.review = null;
  await refreshDrafts();
  if (t && E.current === t) await showTab(t);
  toast(`Suggestion for ${p.filename} discarded; the file is unchanged`);
}

/** ⋮ → Discard pending suggestions: every waiting suggestion, no file touched. */
export async function discardAllProposals() {
  let n = 0;
  try { n = ((await get('/proposals')).proposals || []).length; } catch (e) { toast(e.message, true); return; }
  if (!n) { toast('No suggestions are waiting'); return; }
  if (!confirm(`Discard ${n} waiting suggestion${n === 1 ? '' : 's'}? No file is changed.`)) return;
  try {
    const r = await post('/proposals/discard-all', {});
    toast(`Discarded ${r.discarded} suggestion${r.discarded === 1 ? '' : 's'}; no file was changed`);
  } catch (e) { toast(e.message, true); return; }
  E.proposals = [];
  for (const t of E.tabs) t.review = null;
  if (E.started) {
    await refreshDrafts();
    if (E.current) await showTab(E.current);
  }
}

async function setKeep(d, keep) {
  try {
    await post('/drafts/keep', { draft_id: d.id, keep });
    toast(keep ? `“${d.title || d.id}” is kept: the retention sweep skips it` : `“${d.title || d.id}” is swept again once stale`);
  } catch (e) { toast(e.message, true); }
  await refreshDrafts();
}

async function reveal(id, f) {
  try {
    const r = await post('/reveal', { draft_id: id, filename: f });
    toast(`Shown in the file manager: ${r.path || id}`);
  } catch (e) { toast(e.message, true); }
}

async function deleteDraft(d) {
  const tabs = E.tabs.filter((t) => t.draft_id === d.id);
  const dirty = tabs.some(isDirty) ? ' It has unsaved changes open.' : '';
  if (!confirm(`Delete the draft “${d.title || d.id}” and every file and saved version in it? This cannot be undone.${dirty}`)) return;
  try { await del(`/drafts/${encodeURIComponent(d.id)}`); } catch (e) { toast(e.message, true); return; }
  for (const t of tabs) {
    E.tabs.splice(E.tabs.indexOf(t), 1);
    if (E.current === t) E.current = null;
  }
  E.proposals = E.proposals.filter((p) => p.draft_id !== d.id);
  await refreshDrafts();
  if (!E.current && E.tabs.length) await showTab(E.tabs[0]);
  else if (!E.current) { clearPreview(); renderTabs(); updateToolbar(); updateComposerContext(); }
  toast(`Deleted “${d.title || d.id}”`);
}

// ---------- tabs ----------
function renderTabs() {
  const kids = E.tabs.map((t) => {
    const active = t === E.current;
    const dirty = isDirty(t);
    const pending = !!proposalFor(t);
    const name = h('button', { type: 'button', role: 'tab', class: 'tab-open', 'aria-selected': String(active), title: `${t.draft_id} / ${t.filename}`, tabindex: active ? '0' : '-1' },
      pending ? h('span', { class: 'pending-mark', 'aria-label': 'suggestion waiting', title: 'A suggested change waits for review' }, '✎ ') : null,
      t.filename);
    name.addEventListener('click', () => showTab(t));
    withMenu(name, () => {
      const d = E.drafts.find((x) => x.id === t.draft_id) || { id: t.draft_id, title: t.draft_id };
      return [...fileMenu(d, t.filename), null, { label: 'Close tab', run: () => closeTab(t) }];
    });
    name.addEventListener('keydown', (e) => {
      const i = E.tabs.indexOf(t);
      if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') {
        e.preventDefault();
        const n = E.tabs[(i + (e.key === 'ArrowRight' ? 1 : E.tabs.length - 1)) % E.tabs.length];
        showTab(n).then(() => el.tabs.querySelector('[aria-selected="true"]')?.focus());
      }
    });
    const close = h('button', { type: 'button', class: `tab-close${dirty ? ' dirty' : ''}`, 'aria-label': dirty ? `Save and close ${t.filename} (unsaved changes)` : `Close ${t.filename}`, title: dirty ? 'Unsaved — click to save and close' : 'Close' }, dirty ? '●' : '×');
    close.addEventListener('click', () => closeTab(t));
    return h('div', { class: `tab${active ? ' active' : ''}${dirty ? ' is-dirty' : ''}`, dataset: { key: t.key } }, name, close);
  });
  el.tabs.replaceChildren(...kids);
  el.empty.hidden = E.tabs.length > 0;
  el.host.hidden = E.tabs.length === 0;
}

async function closeTab(t) {
  if (isDirty(t) && !(await save(t))) return;
  const i = E.tabs.indexOf(t);
  E.tabs.splice(i, 1);
  if (E.current === t) {
    E.current = null;
    const next = E.tabs[Math.min(i, E.tabs.length - 1)];
    if (next) await showTab(next);
    else { clearPreview(); renderTabs(); updateToolbar(); renderList(); updateComposerContext(); }
  } else renderTabs();
}

async function showTab(t) {
  ensureCm();
  if (E.current && E.current !== t) E.current.scroll = E.cm.getScrollInfo();
  E.current = t;
  const p = proposalFor(t);
  // The review takes the preview's room (it has no preview), so the class
  // goes on before the review measures its width.
  el.root.classList.toggle('reviewing', !!p);
  if (p) await openReview(t, p);
  if (!p || !t.review) {
    t.review = null;
    E.cm.swapDoc(t.doc);
    E.cm.setOption('readOnly', false);
    E.cm.setOption('viewportMargin', 10);
  }
  el.reviewBar.hidden = !t.review;
  el.root.classList.toggle('reviewing', !!t.review);
  renderTabs();
  renderList();
  updateToolbar();
  updateStatus();
  updateComposerContext();
  E.cm.refresh();
  if (!t.review && t.failed) showFailed(t);
  else if (!t.review && isMd(t.filename)) renderPreview({ saveFirst: false });
  else if (!t.review && t.build) showPages(t, t.build);
  else if (!t.review) clearPreview(isTex(t.filename) ? 'Compile to see the PDF.' : 'No preview for this file type.');
  else clearPreview('The preview returns once the review is answered.');
}

// ---------- status and toolbar ----------
function updateStatus() {
  const t = E.current;
  if (!t) { el.status.textContent = ''; return; }
  if (t.review) { el.status.textContent = 'Reviewing a suggested change — read-only'; return; }
  el.status.textContent = t.status || (isDirty(t) ? 'Unsaved changes' : 'Saved');
  el.status.classList.toggle('bad', !!t.status);
  if (t.conflict) {
    // The way out of a refused save: take the file as it is on disk; this
    // tab's text stays one undo away (the reload goes through the Doc).
    const b = h('button', { type: 'button', class: 'btn small', id: 'ed-reload' }, 'Reload from disk');
    b.addEventListener('click', async () => {
      await reloadFromDisk(t);
      t.conflict = false;
      renderTabs();
      updateStatus();
      if (isMd(t.filename)) renderPreview({ saveFirst: false });
    });
    el.status.append(' ', b);
  }
}

function updateToolbar() {
  const t = E.current;
  const none = !t;
  for (const b of [el.save, el.preview, el.history]) b.disabled = none;
  // A missing toolchain hides the button (no dead control); the file type
  // decides which build applies.
  const reviewing = !none && !!t.review;
  el.compile.hidden = none || reviewing || !E.tools.latex || !isTex(t.filename);
  el.export.hidden = none || reviewing || !E.tools.pandoc || !isMd(t.filename);
  el.preview.hidden = none || reviewing || !isMd(t.filename);
  el.history.disabled = none || reviewing;
  el.save.disabled = none || !!t.review;
}

// ---------- saving ----------
/** Save `t` (the file's own Doc). Resolves true when the server took it. */
async function save(t = E.current) {
  if (!t) return false;
  if (!isDirty(t)) return true;
  const gen = t.doc.changeGeneration(true);
  const text = t.doc.getValue();
  try {
    const r = await post('/drafts/save', { draft_id: t.draft_id, filename: t.filename, text, expect_hash: t.hash });
    t.hash = r.hash;
    t.cleanGen = gen;
    t.status = '';
    t.conflict = false;
    renderTabs();
    updateStatus();
    return true;
  } catch (e) {
    // Refused (409: changed elsewhere) or failed: the Doc is untouched, so
    // the tab stays dirty; say so where the user is looking.
    t.conflict = e instanceof ApiError && e.status === 409;
    t.status = t.conflict
      ? 'Not saved — the file changed elsewhere (another tab?). Reload it from disk (your text stays one Ctrl+Z away), then save again.'
      : `Not saved — ${e.message}`;
    toast(t.status, true);
    renderTabs();
    updateStatus();
    return false;
  }
}

async function saveAndRefresh() {
  const t = E.current;
  if (!t || t.review) return;
  if (await save(t)) {
    if (isMd(t.filename)) renderPreview({ saveFirst: false });
  }
}

async function reloadFromDisk(t) {
  let f;
  try {
    f = await get(`/drafts/${encodeURIComponent(t.draft_id)}/file?name=${encodeURIComponent(t.filename)}`);
  } catch (e) { toast(e.message, true); return; }
  const wasDirty = isDirty(t);
  if (f.text !== t.doc.getValue()) {
    // Through the Doc, so the previous text stays one undo away.
    t.doc.setValue(f.text);
  }
  t.hash = f.hash;
  t.versions = f.versions || [];
  if (!wasDirty || f.text === t.doc.getValue()) t.cleanGen = t.doc.changeGeneration(true);
  t.status = wasDirty ? 'Reloaded from disk; your unsaved text is one undo (Ctrl+Z) away.' : '';
  t.conflict = false;
}

// ---------- history ----------
function openHistory() {
  const t = E.current;
  if (t) showHistory(t, { isDirty, reloadFromDisk, reshow: async () => { if (E.current === t) await showTab(t); } });
}

/** The open file, for the composer ("ask about this file"). */
export function currentFile() {
  return E.current ? { draft_id: E.current.draft_id, filename: E.current.filename } : null;
}

/** What a message sent now is about: the file on screen in the Editor view. */
export function openFileForChat() {
  return E.started && !el.root.hidden ? currentFile() : null;
}

/** The composer says which file a question is about. */
export function updateComposerContext() {
  const input = $('#input');
  if (!input) return;
  const f = openFileForChat();
  input.placeholder = f ? `Ask about ${f.filename}…` : 'Ask your knowledge base…';
}

export const editorState = E;
