// DOM helpers. Text always goes in through textContent; the only HTML this
// page ever shows is the server's rendered Markdown, parsed inertly with
// DOMParser and copied element by element through an allowlist (never
// innerHTML of model text).

import { enhanceCode } from './code.js';

export const $ = (sel, root = document) => root.querySelector(sel);
export const $$ = (sel, root = document) => [...root.querySelectorAll(sel)];

/** h('div', {class: 'x', onclick: fn}, 'text', child) */
export function h(tag, attrs = {}, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

const TAGS = new Set([
  'p', 'br', 'hr', 'strong', 'em', 'del', 's', 'code', 'pre', 'blockquote', 'ul', 'ol', 'li', 'a',
  'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'input', 'span', 'sup', 'sub',
  // MathML Core
  'math', 'mrow', 'mi', 'mn', 'mo', 'ms', 'mtext', 'mspace', 'msub', 'msup', 'msubsup', 'mfrac', 'msqrt', 'mroot',
  'mover', 'munder', 'munderover', 'mtable', 'mtr', 'mtd', 'mstyle', 'mpadded', 'mphantom', 'menclose', 'semantics',
  'annotation', 'mmultiscripts', 'mprescripts', 'none',
]);
const ATTRS = new Set([
  'href', 'title', 'class', 'align', 'start', 'type', 'checked', 'disabled',
  // The source viewer's block anchors (a number; inert).
  'data-line',
  'display', 'mathvariant', 'stretchy', 'fence', 'separator', 'lspace', 'rspace', 'accent', 'accentunder',
  'columnalign', 'rowalign', 'columnspacing', 'rowspacing', 'displaystyle', 'scriptlevel', 'linethickness',
  'width', 'height', 'depth', 'voffset', 'encoding', 'form', 'movablelimits', 'symmetric', 'largeop', 'minsize', 'maxsize', 'notation',
]);
const MATHML = 'http://www.w3.org/1998/Math/MathML';

export function safeHref(url) {
  const u = String(url || '').trim();
  if (/^(https?:|mailto:|obsidian:)/i.test(u) || u.startsWith('#')) return u;
  return null;
}

function copyNode(src, ns) {
  if (src.nodeType === Node.TEXT_NODE) return document.createTextNode(src.textContent);
  if (src.nodeType !== Node.ELEMENT_NODE) return null;
  const tag = src.localName;
  if (!TAGS.has(tag)) {
    // Unknown element: keep its text, drop the element.
    return document.createTextNode(src.textContent);
  }
  const inMath = ns === MATHML || tag === 'math';
  const el = inMath ? document.createElementNS(MATHML, tag) : document.createElement(tag);
  for (const a of src.attributes) {
    const name = a.name.toLowerCase();
    if (!ATTRS.has(name)) continue;
    if (name === 'href') {
      const ok = safeHref(a.value);
      if (!ok || inMath) continue;
      el.setAttribute('href', ok);
      if (!ok.startsWith('#')) { el.setAttribute('target', '_blank'); el.setAttribute('rel', 'noopener noreferrer'); }
      continue;
    }
    if (tag === 'input' && name === 'type' && a.value !== 'checkbox') continue;
    el.setAttribute(name, a.value);
  }
  if (tag === 'input') el.setAttribute('disabled', '');
  for (const kid of src.childNodes) {
    const c = copyNode(kid, inMath ? MATHML : null);
    if (c) el.append(c);
  }
  return el;
}

/** Replace `container`'s children with the server-rendered Markdown `html`. */
export function renderHtml(container, html) {
  const doc = new DOMParser().parseFromString(`<body>${html}</body>`, 'text/html');
  const frag = document.createDocumentFragment();
  for (const kid of doc.body.childNodes) {
    const c = copyNode(kid, null);
    if (c) frag.append(c);
  }
  container.replaceChildren(frag);
  container.classList.add('md');
  // Code blocks get their Copy button and colours from code.js.
  enhanceCode(container);
}

let toastTimer;
/** A line-drawn icon (one path on a 24×24 grid): the page ships no emoji
 * font, and many machines have none, so icons are drawn, never typed. */
export function svgIcon(d, cls = 'ic') {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('class', cls);
  svg.setAttribute('aria-hidden', 'true');
  const p = document.createElementNS(ns, 'path');
  p.setAttribute('d', d);
  svg.append(p);
  return svg;
}

export function toast(text, bad = false, action = null) {
  const t = $('#toast');
  // An open modal sits in the top layer: show the toast inside it.
  const dlg = document.querySelector('dialog[open]');
  const host = dlg || document.body;
  if (t.parentElement !== host) host.append(t);
  t.textContent = text;
  // `action`: {label, run} — one button in the toast (an Undo after a removal).
  if (action) {
    const b = h('button', { type: 'button', class: 'btn small toast-action' }, action.label);
    b.addEventListener('click', () => { t.hidden = true; action.run(); });
    t.append(' ', b);
  }
  t.classList.toggle('bad', bad);
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { t.hidden = true; }, bad ? 6000 : action ? 9000 : 2600);
}

export function relTime(secs) {
  if (!secs) return '';
  const d = Date.now() / 1000 - secs;
  if (d < 60) return 'now';
  if (d < 3600) return `${Math.floor(d / 60)}m`;
  if (d < 86400) return `${Math.floor(d / 3600)}h`;
  if (d < 86400 * 7) return `${Math.floor(d / 86400)}d`;
  return new Date(secs * 1000).toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
}

export function debounce(fn, ms) {
  let t;
  return (...a) => { clearTimeout(t); t = setTimeout(() => fn(...a), ms); };
}

/** Open a <dialog>, wiring [data-close] buttons and backdrop clicks once. */
export function openModal(dlg) {
  if (!dlg.dataset.wired) {
    dlg.dataset.wired = '1';
    for (const b of dlg.querySelectorAll('[data-close]')) b.addEventListener('click', () => dlg.close());
    dlg.addEventListener('click', (e) => { if (e.target === dlg) dlg.close(); });
  }
  if (!dlg.open) dlg.showModal();
}
