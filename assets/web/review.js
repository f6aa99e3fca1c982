// A suggested edit, reviewed inside the editor. The review is a CodeMirror
// Doc of its own, built from the file's text at the proposal's base and the
// hunks — never laid over the file's Doc, so a save (which reads tab.doc)
// cannot reach the two-versions-at-once text on screen, and the file keeps
// any unsaved edits while a review is open.
//
// Layout per hunk: a control block above it (accept / reject, its state);
// context lines as they are; an add or remove inline, only the side that
// changes, tinted; a replace as a two-column Current | Suggested widget when
// the pane is at least 720 px wide (the widget adds no lines), otherwise the
// removed lines then the added ones.

import { h } from './dom.js';

export const WIDE = 720;

/**
 * Split one hunk into runs: {ctx: [line]} or {del: [line], add: [line]}.
 * The spans mark which lines change on each side; between changes both
 * sides hold the same context lines in step, so a walk over both recovers
 * the alignment without diffing again.
 */
export function runs(hunk) {
  const inSpan = (spans, i) => spans.some(([a, b]) => i >= a && i < b);
  const out = [];
  let i = 0;
  let j = 0;
  const ol = hunk.old_lines;
  const nl = hunk.new_lines;
  while (i < ol.length || j < nl.length) {
    const oc = i < ol.length && inSpan(hunk.old_spans, i);
    const nc = j < nl.length && inSpan(hunk.new_spans, j);
    if (!oc && !nc) {
      const last = out[out.length - 1];
      const line = i < ol.length ? ol[i] : nl[j];
      if (last && last.ctx) last.ctx.push(line); else out.push({ ctx: [line] });
      i += 1; j += 1;
      continue;
    }
    const del = [];
    const add = [];
    while (i < ol.length && inSpan(hunk.old_spans, i)) { del.push(ol[i]); i += 1; }
    while (j < nl.length && inSpan(hunk.new_spans, j)) { add.push(nl[j]); j += 1; }
    out.push({ del, add });
  }
  return out;
}

/**
 * Build the review Doc for `base` (the file's text the proposal was made
 * against) and `proposal` ({token, hunks}). `answers` maps hunk index →
 * true (accept) / false (reject). `onAnswer(index, accepted)` is called by
 * the controls. Returns {doc, attach(cm)}: line classes are set on the Doc
 * now; widgets need the editor, so attach adds them after swapDoc.
 */
export function buildReview(base, proposal, answers, { wide, onAnswer, mode }) {
  const baseLines = base.split('\n');
  // A trailing newline gives split an empty last element that is not a line.
  if (baseLines.length && baseLines[baseLines.length - 1] === '') baseLines.pop();
  const lines = [];
  const classes = [];           // [lineNo, className]
  const widgets = [];           // {line, above, node}
  let pendingAbove = [];
  const texts = [];             // [lineNo, className]: the side not taken
  const push = (text, cls, textCls) => {
    const n = lines.length;
    lines.push(text);
    if (cls) classes.push([n, cls]);
    if (textCls) texts.push([n, textCls]);
    for (const w of pendingAbove) widgets.push({ line: n, above: true, node: w });
    pendingAbove = [];
  };
  const widget = (node) => {
    // Below the previous line when there is one, else above the next.
    if (lines.length) widgets.push({ line: lines.length - 1, above: false, node });
    else pendingAbove.push(node);
  };
  let cursor = 0;
  const total = proposal.hunks.length;
  for (const hk of proposal.hunks) {
    for (; cursor < hk.old_start; cursor += 1) push(baseLines[cursor] ?? '');
    const state = answers.has(hk.index) ? (answers.get(hk.index) ? 'accepted' : 'rejected') : 'open';
    let placed = false;
    for (const r of runs(hk)) {
      if (r.ctx) { for (const l of r.ctx) push(l, 'rv-ctx'); continue; }
      // The controls sit right above the first change, not above the
      // context that leads into it.
      if (!placed) { widget(controls(hk, total, answers, onAnswer)); placed = true; }
      if (wide && hk.kind === 'replace' && r.del.length && r.add.length) {
        widget(columns(r.del, r.add, state));
        continue;
      }
      for (const l of r.del) push(l, `rv-del rv-${state}`, state === 'accepted' ? 'rv-gone' : '');
      for (const l of r.add) push(l, `rv-add rv-${state}`, state === 'rejected' ? 'rv-gone' : '');
    }
    cursor = hk.old_start + hk.old_len;
  }
  for (; cursor < baseLines.length; cursor += 1) push(baseLines[cursor]);
  if (pendingAbove.length) {
    if (!lines.length) lines.push('');
    for (const w of pendingAbove) widgets.push({ line: lines.length - 1, above: false, node: w });
  }
  // eslint-disable-next-line no-undef
  const doc = CodeMirror.Doc(lines.join('\n'), mode);
  for (const [n, c] of classes) doc.addLineClass(n, 'background', c);
  for (const [n, c] of texts) doc.addLineClass(n, 'text', c);
  return {
    doc,
    attach() {
      for (const w of widgets) doc.addLineWidget(w.line, w.node, { above: w.above, coverGutter: false, noHScroll: true });
    },
  };
}

function controls(hk, total, answers, onAnswer) {
  const ans = answers.get(hk.index);
  const label = `Change ${hk.index + 1} of ${total}`;
  const what = { add: 'adds lines', remove: 'removes lines', replace: 'replaces lines' }[hk.kind] || hk.kind;
  const accept = h('button', {
    type: 'button', class: `btn small rv-accept${ans === true ? ' chosen' : ''}`, 'aria-pressed': String(ans === true),
    'aria-label': `Accept ${label.toLowerCase()}`, dataset: { hunk: String(hk.index), answer: 'accept' },
  }, '✓ Accept');
  const reject = h('button', {
    type: 'button', class: `btn small rv-reject${ans === false ? ' chosen' : ''}`, 'aria-pressed': String(ans === false),
    'aria-label': `Reject ${label.toLowerCase()}`, dataset: { hunk: String(hk.index), answer: 'reject' },
  }, '✕ Reject');
  accept.addEventListener('click', () => onAnswer(hk.index, true));
  reject.addEventListener('click', () => onAnswer(hk.index, false));
  const state = ans === undefined ? '' : ans ? 'accepted' : 'rejected';
  return h('div', { class: `rv-controls${state ? ` rv-${state}` : ''}`, role: 'group', 'aria-label': label, dataset: { hunk: String(hk.index) } },
    h('span', { class: 'rv-label' }, label, h('span', { class: 'rv-kind' }, ` · ${what}`)),
    state ? h('span', { class: 'rv-state' }, state === 'accepted' ? 'Accepted' : 'Rejected') : null,
    h('span', { class: 'rv-buttons' }, accept, reject));
}

function columns(del, add, state) {
  const col = (title, ls, cls) => h('div', { class: `rv-col ${cls}` },
    h('div', { class: 'rv-col-head' }, title),
    h('pre', { class: 'rv-col-body' }, ls.join('\n')));
  return h('div', { class: `rv-columns rv-${state}`, role: 'group', 'aria-label': 'Current and suggested text side by side' },
    col('Current', del, 'rv-col-old'), col('Suggested', add, 'rv-col-new'));
}
