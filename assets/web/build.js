// The Editor view's builds: Compile (.tex, latexmk) and Export (.md,
// pandoc) with elapsed seconds on the button, the PDF shown as pictures of
// its pages, and a failed build's log shown in the preview pane.
//
// Rules this file keeps:
// - A PDF is never framed (Chromium shows none in a frame sandboxed to
//   nothing, and it is active content built from text a model may have
//   written): the server draws its pages as PNGs; the file itself is the
//   Download link.
// - Pages are drawn as wide as the pane × devicePixelRatio, in steps of
//   PAGE_STEP device pixels, and drawn again when the pane's width moves to
//   another step — once the resize has settled, not on every frame of a
//   drag.
// - A failed build never throws away the last good one: the log replaces the
//   pages until "Back to the last good preview".

import { h, toast } from './dom.js';
import { get } from './api.js';
import { E, el, hooks, isMd, isTex } from './editor-state.js';
import { setSandbox, clearPreview, renderPreview } from './preview.js';

/** Page pictures come in steps of this many device pixels. */
const PAGE_STEP = 200;
/** The server's bounds (drafts_pages.rs). */
const PAGE_MIN = 200;
const PAGE_MAX = 2400;
/** A page is shown at most this wide, in CSS pixels (editor.css). */
const PAGE_CSS_MAX = 900;
/** A resize must settle this long before pages are drawn again. */
const RESIZE_SETTLE_MS = 250;

/** The picture width to ask for at the pane's current size. */
export function pageWidth() {
  const pane = el.pages.parentElement.getBoundingClientRect().width - 24;
  const css = Math.max(0, Math.min(PAGE_CSS_MAX, pane));
  const px = css * (window.devicePixelRatio || 1);
  return Math.min(PAGE_MAX, Math.max(PAGE_MIN, Math.ceil(px / PAGE_STEP) * PAGE_STEP));
}

/** Redraw the pages at a new width when the preview pane's size settles. */
export function watchPaneWidth() {
  let timer = null;
  const settle = () => {
    timer = null;
    const t = E.current;
    if (!t || t.review || t.failed || !t.build || el.pages.hidden) return;
    if (t.build.info && t.build.info.width_asked === pageWidth()) return;
    showPages(t, t.build, { keepScroll: true });
  };
  const ro = new ResizeObserver(() => {
    clearTimeout(timer);
    timer = setTimeout(settle, RESIZE_SETTLE_MS);
  });
  ro.observe(el.pages.parentElement);
  // A zoom or a move to another screen changes the ratio, not the size.
  const watchRatio = () => {
    matchMedia(`(resolution: ${window.devicePixelRatio}dppx)`).addEventListener('change', () => { settle(); watchRatio(); }, { once: true });
  };
  watchRatio();
  el.failedBack.addEventListener('click', backToPreview);
  el.failedGoto.addEventListener('click', () => {
    const t = E.current;
    const line = t && t.failed && t.failed.error && t.failed.error.line;
    if (!line || t.review) return;
    E.cm.setCursor({ line: line - 1, ch: 0 });
    E.cm.scrollIntoView(null, 80);
    E.cm.focus();
  });
}

export async function build(path, button, verb) {
  const t = E.current;
  if (!t || t.review) return;
  if (!(await hooks.save(t))) return;
  const label = button.textContent;
  const started = Date.now();
  button.disabled = true;
  // Neither latexmk nor pandoc says how far along it is: the seconds are
  // the honest measure. Past 20 s, the usual reason a build is slow.
  const tick = () => {
    const s = Math.floor((Date.now() - started) / 1000);
    button.textContent = `${verb}… ${s} s`;
    button.title = s >= 20 ? 'A first build can take minutes while TeX makes its fonts and caches; later ones are quick.' : '';
  };
  tick();
  const timer = setInterval(tick, 250);
  try {
    const resp = await fetch(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ draft_id: t.draft_id, filename: t.filename }) });
    const secs = ((Date.now() - started) / 1000).toFixed(1);
    if (!resp.ok) {
      let data = null;
      try { data = await resp.json(); } catch { data = null; }
      const msg = (data && data.error) || `${resp.status} ${resp.statusText}`;
      const log = (data && data.log) || '';
      t.failed = { verb, secs, message: msg, log, error: firstError(log) };
      toast(`${verb} failed after ${secs} s — the log is in the preview`, true);
      if (E.current === t) showFailed(t);
      return;
    }
    const blob = await resp.blob();
    if (t.build) URL.revokeObjectURL(t.build.url);
    t.build = { id: resp.headers.get('x-build-id'), url: URL.createObjectURL(blob), size: blob.size, secs, info: null };
    t.failed = null;
    toast(`${verb === 'Compiling' ? 'Compiled' : 'Exported'} in ${secs} s`);
    if (E.current === t) await showPages(t, t.build);
  } catch (e) {
    toast(e.message, true);
  } finally {
    clearInterval(timer);
    button.textContent = label;
    button.title = '';
    button.disabled = false;
  }
}

/** Pictures of the build's pages, drawn by the server, loaded lazily. */
export async function showPages(t, b, { keepScroll = false } = {}) {
  setSandbox('pdf');
  el.failed.hidden = true;
  el.frame.removeAttribute('srcdoc');
  el.frame.removeAttribute('src');
  el.frame.onload = null;
  el.frame.hidden = true;
  E.anchors = null;
  el.pdfLink.href = b.url;
  el.pdfLink.download = t.filename.replace(/\.[^.]+$/, '.pdf');
  el.pdfLink.hidden = false;
  const kb = Math.max(1, Math.round(b.size / 1024));
  el.previewNote.hidden = false;
  // The same place in the document after a redraw at another width.
  const sc = el.pages;
  const where = keepScroll && sc.scrollHeight > sc.clientHeight ? sc.scrollTop / sc.scrollHeight : 0;
  const width = pageWidth();
  const q = (extra) => `/drafts/${encodeURIComponent(t.draft_id)}/${extra}name=${encodeURIComponent(t.filename)}&build=${encodeURIComponent(b.id || '')}&width=${width}`;
  if (!b.info || b.info.width_asked !== width) {
    el.previewNote.textContent = `PDF built in ${b.secs} s (${kb} KB) — drawing its pages…`;
    try {
      b.info = await get(q('pages?'));
      b.info.width_asked = width;
    } catch (e) {
      if (E.current !== t) return;
      el.pages.hidden = true;
      el.previewNote.textContent = `PDF built in ${b.secs} s (${kb} KB), but its pages cannot be shown here: ${e.message} Use Download PDF.`;
      return;
    }
  }
  if (E.current !== t || t.build !== b || t.failed) return;
  const info = b.info;
  el.previewNote.textContent = `PDF built in ${b.secs} s · ${info.pages} page${info.pages === 1 ? '' : 's'} · ${kb} KB`;
  const imgs = [];
  for (let n = 1; n <= info.drawable; n += 1) {
    imgs.push(h('img', {
      src: `${q(`page?n=${n}&`)}`,
      alt: `Page ${n} of ${info.pages}`,
      width: String(info.width),
      height: String(info.height),
      loading: n === 1 ? 'eager' : 'lazy',
      decoding: 'async',
      dataset: { page: String(n), width: String(info.width) },
    }));
  }
  if (info.pages > info.drawable) {
    imgs.push(h('p', { class: 'page-more' }, `Pages ${info.drawable + 1}–${info.pages} are not drawn here; use Download PDF.`));
  }
  el.pages.replaceChildren(...imgs);
  el.pages.dataset.width = String(info.width);
  el.pages.hidden = false;
  if (where) sc.scrollTop = where * sc.scrollHeight;
}

/**
 * The first error TeX reports in a log: `! message` up to its `l.<n>`
 * line (TeX's own format; pandoc passes it on), or a `file.tex:<n>:`
 * line (-file-line-error). Null when the log names none.
 */
export function firstError(log) {
  const lines = log.split('\n');
  const bang = lines.findIndex((l) => l.startsWith('! '));
  if (bang >= 0) {
    const excerpt = [lines[bang]];
    let line = null;
    for (let k = bang + 1; k < Math.min(lines.length, bang + 10); k += 1) {
      excerpt.push(lines[k]);
      const m = /^l\.(\d+)/.exec(lines[k]);
      if (m) {
        line = Number(m[1]);
        if (k + 1 < lines.length && lines[k + 1].trim()) excerpt.push(lines[k + 1]);
        break;
      }
    }
    return { index: bang, text: lines[bang].slice(2), line, excerpt: excerpt.join('\n') };
  }
  const fle = lines.findIndex((l) => /^[^\s:]+\.tex:\d+: /.test(l));
  if (fle >= 0) {
    const m = /\.tex:(\d+): (.*)$/.exec(lines[fle]);
    return { index: fle, text: m[2], line: Number(m[1]), excerpt: lines[fle] };
  }
  return null;
}

/** The failed build's log in the preview pane, its first error on top. */
export function showFailed(t) {
  const f = t.failed;
  setSandbox('pdf');
  el.frame.removeAttribute('srcdoc');
  el.frame.onload = null;
  el.frame.hidden = true;
  el.pages.hidden = true;
  E.anchors = null;
  el.pdfLink.hidden = true;
  el.previewNote.hidden = true;
  const err = f.error;
  el.failedTitle.textContent = `${f.verb === 'Compiling' ? 'Compile' : 'Export'} failed after ${f.secs} s`;
  el.failedMessage.textContent = f.message;
  el.failedError.hidden = !err;
  el.failedError.textContent = err ? err.excerpt : '';
  el.failedGoto.hidden = !(err && err.line && isTex(t.filename));
  el.failedGoto.textContent = err && err.line ? `Go to line ${err.line}` : 'Go to line';
  const good = t.build ? 'Back to the last good PDF' : isMd(t.filename) ? 'Back to the preview' : 'Close the log';
  el.failedBack.textContent = good;
  // The log as text nodes; the first error's line marked, and scrolled to.
  const lines = (f.log || '(the build wrote no log)').split('\n');
  const kids = [];
  let mark = null;
  if (err) {
    kids.push(lines.slice(0, err.index).join('\n') + (err.index ? '\n' : ''));
    mark = h('mark', { class: 'log-error', id: 'build-log-error' }, lines[err.index]);
    kids.push(mark, '\n' + lines.slice(err.index + 1).join('\n'));
  } else kids.push(lines.join('\n'));
  el.failedLog.replaceChildren(...kids);
  el.failed.hidden = false;
  el.failedLog.scrollTop = mark ? Math.max(0, mark.offsetTop - el.failedLog.offsetTop - 24) : el.failedLog.scrollHeight;
}

/** Leave the log: the last good PDF, else the Markdown preview. */
function backToPreview() {
  const t = E.current;
  if (!t || !t.failed) return;
  t.failed = null;
  el.failed.hidden = true;
  if (t.build) showPages(t, t.build);
  else if (isMd(t.filename)) renderPreview({ saveFirst: false });
  else clearPreview(isTex(t.filename) ? 'Compile to see the PDF.' : 'No preview for this file type.');
}
