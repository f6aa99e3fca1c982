// The Editor view's preview pane: the Markdown render in a sandboxed frame
// with scroll sync, and a build's PDF shown as pictures of its pages.
//
// Rules this file keeps:
// - The preview frame never gets the script permission. Its sandbox is set
//   per render by setSandbox() to one of the two constants below, nowhere
//   else (web_drafts.rs scans for every value).
// - A PDF is never framed: the server draws its pages as PNGs (build.js).

import { post } from './api.js';
import { E, el, hooks, isMd } from './editor-state.js';

const SANDBOX_PDF = '';
const SANDBOX_MARKDOWN = 'allow-same-origin';

/** The one place the preview frame's sandbox is set. */
export function setSandbox(kind) {
  const frame = el.frame;
  if (kind === 'pdf') frame.setAttribute('sandbox', SANDBOX_PDF);
  else frame.setAttribute('sandbox', SANDBOX_MARKDOWN);
}

// ---------- preview ----------
export function clearPreview(note = 'Open a draft to see it here.') {
  setSandbox('pdf');
  el.failed.hidden = true;
  el.frame.removeAttribute('src');
  el.frame.srcdoc = '';
  el.frame.hidden = true;
  el.pages.hidden = true;
  el.pages.replaceChildren();
  el.pdfLink.hidden = true;
  el.previewNote.textContent = note;
  el.previewNote.hidden = false;
  E.anchors = null;
}

export async function renderPreview({ saveFirst = true } = {}) {
  const t = E.current;
  if (!t || t.review || !isMd(t.filename)) return;
  if (saveFirst && !(await hooks.save(t))) return;
  let r;
  try {
    r = await post('/preview', { draft_id: t.draft_id, filename: t.filename });
  } catch (e) { clearPreview(e.message); return; }
  if (E.current !== t) return;
  setSandbox('markdown');
  el.failed.hidden = true;
  el.frame.removeAttribute('src');
  el.pages.hidden = true;
  el.pages.replaceChildren();
  el.pdfLink.hidden = true;
  const key = t.key;
  el.frame.onload = () => { measureAnchors(key); syncScroll(); };
  // The HTML is the server's escaped render: no script, no raw markup.
  el.frame.srcdoc = `<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="stylesheet" href="/static/preview.css"></head><body>${r.html}</body></html>`;
  el.frame.hidden = false;
  el.previewNote.hidden = true;
}

export function measureAnchors(key = E.anchors && E.anchors.key) {
  if (!key || !E.current || E.current.key !== key) return;
  let doc;
  try { doc = el.frame.contentDocument; } catch { doc = null; }
  if (!doc) return;
  const list = [...doc.querySelectorAll('[data-line]')]
    .map((n) => ({ line: Number(n.getAttribute('data-line')), top: n.getBoundingClientRect().top + doc.defaultView.scrollY }))
    .filter((a) => Number.isFinite(a.line))
    .sort((a, b) => a.line - b.line);
  E.anchors = { key, list };
}

/** Editor → preview: interpolate between the anchors around the top line. */
export function syncScroll() {
  const t = E.current;
  if (!t || t.review || !E.anchors || E.anchors.key !== t.key || !E.anchors.list.length) return;
  const win = el.frame.contentWindow;
  if (!win) return;
  const info = E.cm.getScrollInfo();
  const top = E.cm.lineAtHeight(info.top, 'local');
  const lineTop = E.cm.heightAtLine(top, 'local');
  const lineH = Math.max(1, E.cm.heightAtLine(top + 1, 'local') - lineTop);
  const pos = top + Math.min(1, Math.max(0, (info.top - lineTop) / lineH));
  const list = E.anchors.list;
  let a = list[0];
  let b = null;
  for (const x of list) { if (x.line <= pos) a = x; else { b = x; break; } }
  let y;
  if (pos < a.line) y = a.top * (pos / Math.max(1, a.line));
  else if (b) y = a.top + (b.top - a.top) * ((pos - a.line) / Math.max(1, b.line - a.line));
  else y = a.top;
  win.scrollTo(0, Math.max(0, y - 8));
}
