// Citation completion in the editor. After `\cite{` (or `\citep{`,
// `\citet{`, `\parencite{` — any command whose name holds "cite") in a .tex
// file, or `[@` (and `; @` inside the same brackets) in a .md file, a list
// of the library's papers opens under the cursor and narrows as you type:
// the words match the key, title, authors, year or venue
// (GET /library/cite). ↑/↓ move, Enter or Tab inserts the key, Esc
// closes; a click picks too. Rows are built with h(): library text goes in
// as text, never as markup.

import { h } from './dom.js';
import { get } from './api.js';

// Text before the cursor, on its line, that puts it inside a citation.
// TeX: the command, a star, up to two [options], `{`, the keys so far.
const TEX = /\\[A-Za-z]*cite[A-Za-z]*\*?\s*(?:\[[^\]\n]*\]\s*){0,2}\{([^{}\n]*)$/;
// Markdown: inside [ … ], an @ at the start, after `;`, a space or `-`.
const MD = /\[(?:[^\]\n]*[;\s])?-?@([^\s\];,@]*)$/;

const S = {
  cm: null,
  isTex: () => false,
  isMd: () => false,
  box: null,      // the list element (one, reused)
  items: [],      // the rows on screen
  index: 0,
  range: null,    // {from, to}: the partial key the pick replaces
  query: null,
  seq: 0,         // answers to older queries are dropped
  timer: null,
  keys: null,     // the key map while open
};

/** What the cursor is typing, if it is a citation key: {query, from, to}. */
function context() {
  const cm = S.cm;
  if (!cm || cm.getOption('readOnly') || cm.somethingSelected()) return null;
  const cur = cm.getCursor();
  const before = cm.getLine(cur.line).slice(0, cur.ch);
  if (S.isTex()) {
    const m = TEX.exec(before);
    if (!m) return null;
    const part = m[1].slice(m[1].lastIndexOf(',') + 1);
    const lead = part.length - part.trimStart().length;
    return { query: part.trim(), from: { line: cur.line, ch: cur.ch - part.length + lead }, to: cur };
  }
  if (S.isMd()) {
    const m = MD.exec(before);
    if (!m) return null;
    return { query: m[1], from: { line: cur.line, ch: cur.ch - m[1].length }, to: cur };
  }
  return null;
}

function close() {
  clearTimeout(S.timer);
  S.seq += 1;
  S.query = null;
  S.range = null;
  S.items = [];
  if (S.keys) { S.cm.removeKeyMap(S.keys); S.keys = null; }
  if (S.box) S.box.hidden = true;
  const input = S.cm && S.cm.getInputField();
  if (input) { input.removeAttribute('aria-activedescendant'); input.setAttribute('aria-expanded', 'false'); }
}

function ensureBox() {
  if (S.box) return S.box;
  S.box = h('div', { class: 'cite-pop', id: 'cite-pop', role: 'listbox', 'aria-label': 'Papers in your library', hidden: true });
  // A click must not take the focus from the editor.
  S.box.addEventListener('mousedown', (e) => e.preventDefault());
  document.body.append(S.box);
  return S.box;
}

function place() {
  const box = ensureBox();
  const at = S.cm.cursorCoords(S.range.from, 'window');
  box.style.left = `${Math.max(8, Math.min(at.left - 12, window.innerWidth - box.offsetWidth - 8))}px`;
  const below = at.bottom + 4;
  const room = window.innerHeight - below - 8;
  box.style.top = room >= Math.min(box.offsetHeight, 220) ? `${below}px` : `${Math.max(8, at.top - box.offsetHeight - 4)}px`;
}

function render(entries) {
  const box = ensureBox();
  S.items = entries;
  S.index = 0;
  const input = S.cm.getInputField();
  input.setAttribute('aria-controls', 'cite-pop');
  input.setAttribute('aria-expanded', 'true');
  const rows = entries.map((e, i) => {
    const byline = [e.authors, e.year, e.venue].filter((x) => x !== null && x !== undefined && x !== '').join(' · ');
    const row = h('div', { class: 'cite-item', role: 'option', id: `cite-opt-${i}`, 'aria-selected': 'false' },
      h('span', { class: 'cite-key' }, e.key),
      h('span', { class: 'cite-by' }, byline),
      h('span', { class: 'cite-title' }, e.title || '(untitled)'));
    row.addEventListener('click', () => { S.index = i; pick(); });
    row.addEventListener('mousemove', () => { if (S.index !== i) { S.index = i; mark(); } });
    return row;
  });
  const head = h('div', { class: 'cite-head' },
    h('span', {}, S.query ? `Library papers matching “${S.query}”` : 'Cite a paper from your library'),
    h('span', { class: 'cite-hint' }, entries.length ? '↑↓ Enter · Esc' : 'Esc'));
  const empty = entries.length ? null : h('div', { class: 'cite-empty' },
    S.query ? 'No paper in the library matches. Keep typing a key of your own, or add the paper first.' : 'The library has no papers yet — add one with `jarvis kb add`.');
  box.replaceChildren(head, ...rows, ...(empty ? [empty] : []));
  box.hidden = false;
  mark();
  place();
  if (!S.keys) {
    S.keys = {
      Up: () => move(-1),
      Down: () => move(1),
      PageUp: () => move(-5),
      PageDown: () => move(5),
      Enter: () => (S.items.length ? pick() : close()),
      Tab: () => (S.items.length ? pick() : close()),
      Esc: () => close(),
    };
    S.cm.addKeyMap(S.keys);
  }
}

function mark() {
  const rows = S.box.querySelectorAll('.cite-item');
  rows.forEach((r, i) => r.setAttribute('aria-selected', String(i === S.index)));
  const on = rows[S.index];
  if (on) {
    on.scrollIntoView({ block: 'nearest' });
    S.cm.getInputField().setAttribute('aria-activedescendant', on.id);
  }
}

function move(by) {
  if (!S.items.length) return;
  S.index = (S.index + by + S.items.length * 5) % S.items.length;
  mark();
}

function pick() {
  const e = S.items[S.index];
  const range = S.range;
  close();
  if (!e || !range) return;
  S.cm.replaceRange(e.key, range.from, range.to, '+cite');
  S.cm.focus();
}

async function lookup(query) {
  const seq = ++S.seq;
  let r;
  try { r = await get(`/library/cite?q=${encodeURIComponent(query)}&n=12`); } catch { return; }
  // The cursor moved on, or a newer query is out.
  if (seq !== S.seq || S.query !== query) return;
  render(r.entries || []);
}

function update() {
  const c = context();
  if (!c) { if (S.query !== null) close(); return; }
  S.range = { from: c.from, to: c.to };
  if (c.query === S.query && S.box && !S.box.hidden) { place(); return; }
  S.query = c.query;
  clearTimeout(S.timer);
  // A short pause, so a fast typist sends one request, not one per key.
  S.timer = setTimeout(() => lookup(c.query), 90);
}

/**
 * Watch `cm` for citations. `isTex()` / `isMd()` say what the file on
 * screen is.
 */
export function attachCitations(cm, { isTex, isMd }) {
  Object.assign(S, { cm, isTex, isMd });
  cm.on('cursorActivity', update);
  cm.on('blur', () => setTimeout(() => { if (!S.cm.hasFocus()) close(); }, 150));
  cm.on('swapDoc', close);
  cm.on('scroll', () => { if (S.box && !S.box.hidden && S.range) place(); });
}
