// The source viewer: a side pane (full screen on a phone) that shows what
// a citation, a source chip or a Library row names — a note rendered
// safely, scrolled to the cited heading with the passage marked; a PDF as
// the picture of the cited page with the passage beside it; a chat
// passage as its exchange. It is a modal <dialog>: Escape closes it, focus
// goes back to what opened it, and it sits above the Library dialog when
// opened from there.
//
// Every bit of text goes in through textContent; the only HTML is the
// server's rendered Markdown, copied through dom.js's allowlist.

import { $, h, renderHtml } from './dom.js';
import { get } from './api.js';

let seq = 0;
let opener = null;

const KIND = { note: 'Note', paper: 'Paper', chat: 'Chat', digest: 'Digest' };

export function initViewer() {
  const dlg = $('#viewer');
  dlg.addEventListener('close', () => {
    seq++;
    const back = opener;
    opener = null;
    if (back && back.isConnected) back.focus();
  });
  dlg.addEventListener('click', (e) => { if (e.target === dlg) dlg.close(); });
  $('#viewer-close').addEventListener('click', () => dlg.close());
  // A citation or chip anywhere in the page opens here.
  document.addEventListener('cite-open', (e) => {
    const d = e.detail || {};
    if (!d.key) return;
    e.preventDefault();
    openSource({ key: d.key, kind: d.kind, label: d.label, passages: d.passages || [], pick: d.n }, e.target);
  });
}

/** Open the viewer on document `src.key`; `src.passages` are the cited
 *  passages of that document (`{n, chunk_id, section, page}`), `src.pick`
 *  the number to show first. */
export function openSource(src, from) {
  const dlg = $('#viewer');
  if (!dlg.open) {
    opener = from instanceof HTMLElement ? from : document.activeElement;
    dlg.showModal();
  }
  $('#viewer-kind').textContent = KIND[src.kind] || 'Source';
  $('#viewer-title').textContent = src.label || src.key;
  $('#viewer-where').textContent = '';
  $('#viewer-open').hidden = true;
  const list = $('#viewer-passages');
  const passages = (src.passages || []).filter((p) => p.chunk_id != null || p.n != null);
  list.replaceChildren();
  list.hidden = passages.length < 2;
  const first = passages.find((p) => p.n === src.pick) || passages[0] || null;
  const buttons = passages.map((p) => {
    const b = h('button', { type: 'button', class: 'vp', 'aria-pressed': String(p === first) },
      p.n != null ? h('span', { class: 'n' }, String(p.n)) : null,
      h('span', { class: 't' }, p.where || p.section || (p.page ? `p. ${p.page}` : 'Passage')));
    b.addEventListener('click', () => {
      for (const x of buttons) x.setAttribute('aria-pressed', String(x === b));
      show(src, p);
    });
    return b;
  });
  if (passages.length > 1) list.append(h('span', { class: 'vp-label' }, `${passages.length} passages`), ...buttons);
  show(src, first);
  $('#viewer-close').focus();
}

async function show(src, passage) {
  const my = ++seq;
  const body = $('#viewer-body');
  body.replaceChildren(h('p', { class: 'viewer-wait' }, 'Opening…'));
  const chunk = passage && passage.chunk_id != null ? `&chunk=${encodeURIComponent(passage.chunk_id)}` : '';
  let v;
  try {
    v = await get(`/source?key=${encodeURIComponent(src.key)}${chunk}`);
  } catch (e) {
    if (my !== seq) return;
    // The document may be gone from the index (or the note from the
    // vault): the passage the answer quoted is still worth showing.
    body.replaceChildren(h('p', { class: 'error' }, e.message), passage && passage.text ? quote(passage.text) : null);
    return;
  }
  if (my !== seq) return;
  $('#viewer-title').textContent = v.title || src.label || v.key;
  $('#viewer-kind').textContent = KIND[v.doc_type] || KIND[src.kind] || 'Source';
  const p = v.passage;
  $('#viewer-where').textContent = [p && p.section, p && p.page ? `p. ${p.page}` : '', v.private ? 'private' : ''].filter(Boolean).join(' · ');
  const open = $('#viewer-open');
  open.hidden = !v.href;
  if (v.href) {
    open.href = v.href;
    open.textContent = v.href.startsWith('obsidian:') ? 'Open in Obsidian' : 'Open original';
    if (v.href.startsWith('obsidian:')) open.removeAttribute('target'); else open.target = '_blank';
  }
  body.dataset.view = v.view;
  if (v.view === 'note') showNote(body, v);
  else if (v.view === 'pdf') showPdf(body, v, my);
  else if (v.view === 'chat') showChat(body, v);
  else body.replaceChildren(p ? quote(p.text, p.annotation) : h('p', { class: 'viewer-wait' }, 'This document has no text to show here.'));
}

function quote(text, annotation) {
  return h('figure', { class: 'passage-text' },
    h('figcaption', {}, annotation ? `The ${annotation} cited` : 'The passage cited'),
    h('blockquote', {}, text));
}

function showNote(body, v) {
  const doc = h('article', { class: 'viewer-note', 'aria-label': 'The note' });
  renderHtml(doc, v.note.html);
  body.replaceChildren(doc);
  if (v.note.cut) body.prepend(h('p', { class: 'note' }, 'This note is long; only its beginning is shown.'));
  const blocks = [...doc.querySelectorAll(':scope > [data-line]')];
  const lineOf = (el) => Number(el.dataset.line);
  const range = v.note.passage_lines;
  let target = null;
  if (range) {
    const [a, b] = range;
    blocks.forEach((el, i) => {
      const start = lineOf(el);
      const end = i + 1 < blocks.length ? lineOf(blocks[i + 1]) - 1 : Infinity;
      if (start <= b && end >= a) {
        el.classList.add('passage');
        if (!target) target = el;
      }
    });
  } else if (v.passage) {
    body.prepend(h('p', { class: 'note' }, 'The note has changed since it was indexed; the passage as it was:'), quote(v.passage.text));
  }
  const heading = v.note.heading_line != null ? blocks.find((el) => lineOf(el) === v.note.heading_line) : null;
  if (heading) heading.classList.add('cited-heading');
  const scrollTo = heading || target;
  if (scrollTo) requestAnimationFrame(() => scrollTo.scrollIntoView({ block: 'start' }));
}

function showPdf(body, v, my) {
  const key = v.key;
  let page = v.pdf.page;
  let pages = null;
  const img = h('img', { class: 'pdf-page', alt: '' });
  const status = h('span', { class: 'pg', 'aria-live': 'polite' }, '');
  const prev = h('button', { type: 'button', class: 'btn small ghost', 'aria-label': 'Previous page' }, '‹');
  const next = h('button', { type: 'button', class: 'btn small ghost', 'aria-label': 'Next page' }, '›');
  // An annotation passage's boxes, outlined on its own page only (the
  // boxes are fractions of the page, so any drawing size fits).
  const p = v.passage;
  const rects = (p && p.rects) || [];
  // Placed through the CSSOM: the page's CSP refuses inline style attributes.
  const marks = rects.map(([l, t, r, b]) => {
    const m = h('div', { class: 'pdf-mark', 'aria-hidden': 'true' });
    Object.assign(m.style, { left: `${l * 100}%`, top: `${t * 100}%`, width: `${(r - l) * 100}%`, height: `${(b - t) * 100}%` });
    return m;
  });
  const frame = h('div', { class: 'pdf-frame' }, img, ...marks);
  const showMarks = () => {
    const here = p && p.page === page && img.complete;
    for (const m of marks) m.hidden = !here;
    if (here && marks.length) marks[0].scrollIntoView({ block: 'center' });
  };
  for (const m of marks) m.hidden = true;
  img.addEventListener('load', () => { if (my === seq) showMarks(); });
  const width = Math.min(1400, Math.round((body.clientWidth || 600) * (window.devicePixelRatio || 1)));
  const draw = async () => {
    status.textContent = `Drawing page ${page}…`;
    prev.disabled = true; next.disabled = true;
    const url = `/source/page?key=${encodeURIComponent(key)}&n=${page}&width=${width}`;
    try {
      // Fetched once for the page count and a readable error; the picture
      // then loads from the same URL (the page's CSP allows images from
      // this origin only, no blob:), which the HTTP cache answers.
      const r = await fetch(url);
      if (!r.ok) {
        let msg = `${r.status}`;
        try { msg = (await r.json()).error || msg; } catch { /* keep the status */ }
        throw new Error(msg);
      }
      pages = Number(r.headers.get('x-pages')) || pages;
      await r.blob();
      if (my !== seq) return;
      for (const m of marks) m.hidden = true;
      img.src = url;
      img.alt = `Page ${page} of “${v.title}”`;
      status.textContent = pages ? `Page ${page} of ${pages}` : `Page ${page}`;
    } catch (e) {
      if (my !== seq) return;
      status.textContent = `Page ${page} could not be drawn: ${e.message}`;
    }
    prev.disabled = page <= 1;
    next.disabled = pages != null && page >= pages;
  };
  prev.addEventListener('click', () => { if (page > 1) { page--; draw(); } });
  next.addEventListener('click', () => { page++; draw(); });
  body.replaceChildren(h('div', { class: 'pdf-view' },
    h('div', { class: 'pdf-col' }, h('div', { class: 'pdf-nav' }, prev, status, next), frame),
    p ? quote(p.text, p.annotation) : null));
  if (marks.length) frame.dataset.marked = String(marks.length);
  draw();
}

function showChat(body, v) {
  const c = v.chat;
  const list = h('ol', { class: 'viewer-chat', 'aria-label': c.title || 'Conversation' });
  for (const e of c.entries || []) {
    const bubble = h('div', { class: 'bubble' });
    if (e.role === 'assistant' && e.html) {
      renderHtml(bubble, e.html);
      // That answer's own markers name passages of its turn, not of this
      // one: shown as numbers, not links.
      for (const a of bubble.querySelectorAll('a.cite')) a.replaceWith(h('sup', { class: 'cite-n' }, a.textContent));
    } else bubble.textContent = e.text;
    list.append(h('li', { class: `vmsg ${e.role}` }, h('span', { class: 'who' }, e.role === 'user' ? 'You' : 'Jarvis'), bubble));
  }
  const head = h('p', { class: 'note' }, c.exchange != null ? `Exchange ${c.exchange + 1} of “${c.title}”` : `“${c.title}”`);
  body.replaceChildren(head, list.children.length ? list : quote(v.passage ? v.passage.text : ''));
}
