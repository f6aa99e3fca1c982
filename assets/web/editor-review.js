// The Editor view's review of a suggested change: the review Doc on screen
// (read-only, built by review.js), each hunk's answer, Accept all / Reject
// all, and — once every hunk is answered — the accepted indices sent to
// /apply-edit with the token, then the file reloaded from disk.

import { $, toast } from './dom.js';
import { get, post } from './api.js';
import { buildReview } from './review.js';
import { E, hooks, isWide, modeFor } from './editor-state.js';

export async function openReview(t, p) {
  if (!t.review || t.review.token !== p.token || t.review.wide !== isWide()) {
    let f;
    try {
      f = await get(`/drafts/${encodeURIComponent(t.draft_id)}/file?name=${encodeURIComponent(t.filename)}`);
    } catch (e) { toast(e.message, true); return; }
    if (f.hash !== p.base_hash) {
      toast('This suggestion was made against an older version of the file; it can only be discarded. Ask for a fresh one.', true);
    }
    const answers = t.review && t.review.token === p.token ? t.review.answers : new Map();
    t.review = { token: p.token, proposal: p, base: f.text, answers, wide: isWide(), stale: f.hash !== p.base_hash };
  }
  buildReviewDoc(t);
}

function buildReviewDoc(t) {
  const r = t.review;
  const scroll = r.doc ? E.cm.getScrollInfo() : null;
  r.wide = isWide();
  const built = buildReview(r.base, r.proposal, r.answers, {
    wide: r.wide,
    mode: modeFor(t.filename),
    onAnswer: (i, yes) => answer(t, i, yes),
  });
  r.doc = built.doc;
  E.cm.swapDoc(built.doc);
  E.cm.setOption('readOnly', true);
  // The whole review is in the page (every control reachable by Tab and
  // by find-in-page), not only the lines in view.
  E.cm.setOption('viewportMargin', Infinity);
  built.attach(E.cm);
  if (scroll) E.cm.scrollTo(scroll.left, scroll.top);
  updateProgress(t);
}

function updateProgress(t) {
  const r = t.review;
  const n = r.proposal.hunks.length;
  const done = r.answers.size;
  const acc = [...r.answers.values()].filter(Boolean).length;
  $('#rv-progress').textContent = `${done} of ${n} answered · ${acc} accepted`;
  $('#rv-file').textContent = `Suggested change to ${t.filename}`;
  $('#rv-accept-all').disabled = r.stale;
}

function answer(t, index, yes) {
  const r = t.review;
  if (!r || r.busy || (r.stale && yes)) return;
  r.answers.set(index, yes);
  buildReviewDoc(t);
  maybeFinish(t);
}

export function answerAll(yes) {
  const t = E.current;
  if (!t || !t.review || (t.review.stale && yes)) return;
  for (const hk of t.review.proposal.hunks) t.review.answers.set(hk.index, yes);
  buildReviewDoc(t);
  maybeFinish(t);
}

async function maybeFinish(t) {
  const r = t.review;
  if (r.answers.size < r.proposal.hunks.length || r.busy) return;
  r.busy = true;
  const indices = [...r.answers.entries()].filter(([, yes]) => yes).map(([i]) => i).sort((a, b) => a - b);
  try {
    const res = await post('/apply-edit', { token: r.token, indices });
    toast(indices.length ? `Applied ${indices.length} of ${r.proposal.hunks.length} changes` : 'Suggestion rejected; the file is unchanged');
    void res;
  } catch (e) {
    toast(e.message, true);
  }
  await finishReview(t);
}

export async function discardReview() {
  const t = E.current;
  if (!t || !t.review) return;
  try { await post('/discard-edit', { token: t.review.token }); } catch (e) { toast(e.message, true); }
  await finishReview(t);
}

/** Drop the review and reload the file's Doc from disk. */
async function finishReview(t) {
  E.proposals = E.proposals.filter((p) => p.token !== t.review.token);
  t.review = null;
  await hooks.reloadFromDisk(t);
  await hooks.refreshDrafts();
  if (E.current === t) await hooks.showTab(t);
}
