// The Editor view's shared state: the open tabs, the drafts list, the
// elements it draws into, and the few calls the view's modules make into
// each other (hooks, filled in by editor.js at start) — kept here so the
// modules import one place instead of each other.

import { WIDE } from './review.js';

export const E = {
  tabs: [],              // {key, draft_id, filename, doc, hash, cleanGen, status, review, scroll, build}
  current: null,         // the tab on screen
  drafts: [],            // GET /drafts
  tools: { latex: false, pandoc: false },
  proposals: [],         // GET /proposals, plus live edit_proposal events
  cm: null,
  anchors: null,         // {key, list: [{line, top}]} measured in the preview
  started: false,
  wide: null,
};

/** The view's elements, found once by initEditor. */
export const el = {};

/** save(t), showTab(t), refreshDrafts(), reloadFromDisk(t): set by editor.js. */
export const hooks = {};

export function modeFor(name) {
  const ext = name.toLowerCase().split('.').pop();
  return {
    md: 'markdown', tex: 'stex', bib: 'stex', yaml: 'yaml', yml: 'yaml',
    json: { name: 'javascript', json: true },
  }[ext] || null;
}

export const isMd = (name) => name.toLowerCase().endsWith('.md');
export const isTex = (name) => name.toLowerCase().endsWith('.tex');
export const keyOf = (id, name) => `${id}/${name}`;
export const isDirty = (t) => !t.doc.isClean(t.cleanGen);
export const proposalFor = (t) => E.proposals.find((p) => p.draft_id === t.draft_id && p.filename === t.filename);

export function isWide() {
  // The source pane, not the editor host: the host is hidden until a first
  // tab exists, and a review can be what opens that tab.
  return el.host.parentElement.getBoundingClientRect().width >= WIDE;
}
