// The Digest view: recent weekly digests as cards (score, track, why, the
// abstract behind a disclosure), each with Like / Not for me and "Add to
// library".
// A vote teaches the next digest (the gate leans towards liked and added
// papers, away from disliked ones, and the scoring prompt sees a few recent
// titles); pressing the same vote again takes it back. A digest file's
// "Rate in Jarvis" link opens this view at its paper (#digest=KEY).

import { $, h, toast, openModal, svgIcon } from './dom.js';
import { get, post } from './api.js';

let seq = 0;

const TIER = { must_read: 'Must read', worth_reading: 'Worth reading', skim: 'Skim' };

export function openDigest(focusKey = null) {
  openModal($('#digest-dialog'));
  load(focusKey);
}

/** Opens the view when the page was loaded from a digest file's link. */
export function digestFromHash() {
  const m = /^#digest(?:=(.+))?$/.exec(location.hash);
  if (!m) return;
  history.replaceState(null, '', location.pathname);
  openDigest(m[1] ? decodeURIComponent(m[1]) : null);
}

async function load(focusKey) {
  const my = ++seq;
  const body = $('#digest-body');
  let r;
  try {
    r = await get('/digest');
  } catch (e) {
    if (my === seq) body.replaceChildren(h('p', { class: 'error' }, e.message));
    return;
  }
  if (my !== seq) return;
  const runs = r.runs || [];
  const papers = runs.reduce((n, x) => n + x.papers.length, 0);
  $('#digest-count').textContent = runs.length ? `${runs.length} digest${runs.length === 1 ? '' : 's'} · ${papers} papers` : '';
  if (!runs.length) {
    body.replaceChildren(h('p', { class: 'empty' },
      'No digest yet. Turn the weekly digest on in Configuration (digest.enabled) or run `jarvis run-digest`; its papers appear here to rate.'));
    return;
  }
  body.replaceChildren(...runs.map((run) => h('section', { class: 'dg-run' },
    h('h3', {}, `Digest ${run.date}`),
    h('ul', { class: 'dg-cards' }, run.papers.map(card)))));
  if (focusKey) {
    const el = body.querySelector(`[data-key="${CSS.escape(focusKey)}"]`);
    if (el) { el.scrollIntoView({ block: 'center' }); el.classList.add('focus'); el.querySelector('button')?.focus(); }
  }
}

function card(p) {
  const li = h('li', { class: `dg-card tier-${p.tier}`, dataset: { key: p.key } });
  const title = p.link && /^https?:\/\//.test(p.link)
    ? h('a', { href: p.link, target: '_blank', rel: 'noopener noreferrer' }, p.title)
    : h('span', {}, p.title);
  const up = voteButton(p, 'up', THUMB, 'Like', 'More like this');
  const down = voteButton(p, 'down', THUMB, 'Not for me', 'Fewer like this', true);
  const add = h('button', { type: 'button', class: 'btn small', disabled: p.vote === 'added' },
    p.vote === 'added' ? 'In your library' : 'Add to library');
  add.addEventListener('click', async () => {
    add.disabled = true;
    add.textContent = 'Adding…';
    try {
      const r = await post('/digest/add', { key: p.key });
      p.vote = r.vote;
      toast(r.message);
      li.replaceWith(card(p));
    } catch (e) {
      add.disabled = false;
      add.textContent = 'Add to library';
      toast(e.message, true);
    }
  });
  li.append(
    h('div', { class: 'dg-head' },
      h('span', { class: 'dg-score', title: 'Score from the digest model' }, `${p.score}/10`),
      h('span', { class: 'dg-title' }, title)),
    h('div', { class: 'sub' }, [TIER[p.tier] || p.tier, p.track, p.authors].filter(Boolean).join(' · ')),
    p.why ? h('p', { class: 'dg-why' }, p.why) : null,
    p.summary ? h('p', { class: 'dg-summary' }, p.summary) : null,
    p.abstract ? h('details', { class: 'dg-abstract' }, h('summary', {}, 'Abstract'), h('p', {}, p.abstract)) : null,
    h('div', { class: 'acts' }, up, down, add));
  return li;
}

// A thumb (drawn, not an emoji: a machine without an emoji font shows
// boxes); the "not for me" one is the same shape turned over.
const THUMB = 'M7 10v11H3V10zm2 11h8.3a2 2 0 0 0 2-1.6l1.4-7A2 2 0 0 0 18.7 10H14l.8-4.2a1.6 1.6 0 0 0-2.9-1.2L9 10z';

function voteButton(p, vote, path, text, label, flipped = false) {
  const on = p.vote === vote;
  const icon = svgIcon(path, flipped ? 'flip' : '');
  const b = h('button', {
    type: 'button', class: `btn small vote${on ? ' on' : ''}`, 'aria-pressed': String(on),
    'aria-label': `${label}: ${p.title}`, title: on ? `${label} (press again to take it back)` : label,
    disabled: p.vote === 'added',
  }, icon, h('span', {}, text));
  b.addEventListener('click', async () => {
    b.disabled = true;
    try {
      const r = await post('/digest/vote', { key: p.key, vote: on ? 'clear' : vote });
      p.vote = r.vote;
      toast(r.message);
      const li = b.closest('li');
      const fresh = card(p);
      li.replaceWith(fresh);
      fresh.querySelector(`.vote[aria-label^="${label}"]`)?.focus();
    } catch (e) {
      b.disabled = false;
      toast(e.message, true);
    }
  });
  return b;
}
