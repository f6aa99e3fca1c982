// Rendering conversation pieces: messages, tool boxes, source chips,
// confirmation cards and error cards. Pure DOM building; no requests except
// through the callbacks handed in.

import { h, renderHtml, svgIcon } from './dom.js';
import { memoryNote } from './memory.js';

export function userBubble(text) {
  return h('li', { class: 'msg user' }, h('div', { class: 'bubble' }, text));
}

export function workingLine(label = 'Working…') {
  return h('div', { class: 'working', role: 'status' }, h('span', { class: 'busy-dot', 'aria-hidden': 'true' }), label);
}

/** The assistant half of a turn, filled as events arrive. */
export function assistantShell() {
  const tools = h('details', { class: 'tools-box', open: true, hidden: true },
    h('summary', {}, h('span', { class: 'tools-label' }, 'Tools')), h('ul', {}));
  const status = h('div', { class: 'status-slot' }, workingLine());
  const bubble = h('div', { class: 'bubble streaming', hidden: true });
  const after = h('div', { class: 'after' });
  const li = h('li', { class: 'msg assistant' }, tools, status, bubble, after);
  return { li, tools, status, bubble, after, toolRows: new Map(), text: '' };
}

/** The model's reasoning: folded and dimmed, apart from the answer. */
function thinkingBox(text) {
  return h('details', { class: 'thinking-box' },
    h('summary', {}, h('span', { class: 'thinking-label' }, 'Thinking…')),
    h('div', { class: 'thinking-text' }, text || ''));
}

function thinkingLabel(box, done) {
  const words = (box.querySelector('.thinking-text').textContent.match(/\S+/g) || []).length;
  box.querySelector('.thinking-label').textContent = done ? `Reasoning · ${words} word${words === 1 ? '' : 's'}` : 'Thinking…';
}

/** A piece of reasoning as it streams: the box appears above the tools on
 *  the first piece and stays folded unless the reader opens it. */
export function thinkingDelta(shell, text) {
  if (!shell.thinking) {
    shell.thinking = thinkingBox('');
    shell.li.prepend(shell.thinking);
  }
  shell.thinking.querySelector('.thinking-text').append(text);
}

/** The planning phase's numbered plan, as a card above the answer: open
 *  while the turn runs, folded once it is answered (and when reloaded). */
export function planCard(plan, open) {
  const steps = String(plan || '').split('\n').map((l) => l.trim()).filter(Boolean)
    .map((l) => h('li', {}, l.replace(/^\d+[.)]\s*/, '')));
  return h('details', { class: 'plan-card', open: !!open },
    h('summary', {}, planIcon(), h('span', {}, `Plan · ${steps.length} step${steps.length === 1 ? '' : 's'}`)),
    h('ol', {}, steps));
}

/** A route with three stops (no emoji: the page ships no emoji font). */
function planIcon() {
  return svgIcon('M6 5a2 2 0 1 0 0 .1M18 12a2 2 0 1 0 0 .1M6 19a2 2 0 1 0 0 .1M8 5h6a3.5 3.5 0 0 1 0 7h-4a3.5 3.5 0 0 0 0 7h6', 'ic plan-icon');
}

export function planReady(shell, plan) {
  if (shell.plan) shell.plan.remove();
  shell.plan = planCard(plan, true);
  shell.li.prepend(shell.plan);
}

/** A line in the answer's shell saying the profile changed mid-turn. */
export function profileSwitched(shell, name) {
  shell.after.before(h('span', { class: 'status-badge profile-note', role: 'note' }, `Switched to the ${name} profile`));
}

function toolLabel(box) {
  const n = box.querySelectorAll('li').length;
  const running = box.querySelectorAll('li:not(.done):not(.failed)').length;
  return running ? `Using tools… (${n})` : `Used ${n} tool${n === 1 ? '' : 's'}`;
}

export function toolStarted(shell, ev) {
  shell.tools.hidden = false;
  const row = h('li', { class: 'tool' },
    h('span', { class: 'st', 'aria-hidden': 'true' }), h('span', { class: 'nm' }, ev.name),
    h('span', { class: 'arg', title: ev.summary || '' }, ev.summary || ''), h('span', { class: 'ms' }, ''));
  shell.toolRows.set(ev.id || `${ev.name}-${shell.toolRows.size}`, row);
  shell.tools.querySelector('ul').append(row);
  shell.tools.querySelector('.tools-label').textContent = toolLabel(shell.tools);
  if (ev.name === 'use_own_knowledge') {
    shell.after.before(h('span', { class: 'status-badge' }, 'Answering from the model’s own knowledge'));
  }
}

export function toolFinished(shell, ev) {
  let row = shell.toolRows.get(ev.id);
  if (!row) { toolStarted(shell, ev); row = shell.toolRows.get(ev.id || `${ev.name}-${shell.toolRows.size - 1}`); }
  if (!row) return;
  row.classList.add(ev.is_error ? 'failed' : 'done');
  row.querySelector('.ms').textContent = ev.duration_ms != null ? `${ev.duration_ms} ms` : '';
  shell.tools.querySelector('.tools-label').textContent = toolLabel(shell.tools);
}

/** Static tool log of a saved reply. */
export function toolLog(tools) {
  if (!tools || !tools.length) return null;
  const ul = h('ul', {}, tools.map((t) => h('li', { class: `tool ${t.is_error ? 'failed' : 'done'}` },
    h('span', { class: 'st', 'aria-hidden': 'true' }), h('span', { class: 'nm' }, t.name),
    h('span', { class: 'arg', title: t.summary || '' }, t.summary || ''),
    h('span', { class: 'ms' }, t.duration_ms != null ? `${t.duration_ms} ms` : ''))));
  return h('details', { class: 'tools-box' },
    h('summary', {}, h('span', { class: 'tools-label' }, `Used ${tools.length} tool${tools.length === 1 ? '' : 's'}`)), ul);
}

/** Chips for the sources under a reply: one per document (the server
 *  groups them). A chip with a document key opens the source viewer on
 *  it, with the passages the answer cites from it; a chip without one
 *  (an old session) keeps its link. */
export function sourceChips(sources, citations) {
  if (!sources || !sources.length) return null;
  return h('div', { class: 'sources', role: 'list', 'aria-label': 'Sources' }, sources.map((s, i) => {
    const kind = s.kind === 'paper' ? 'Paper' : s.kind === 'chat' ? 'Chat' : s.kind === 'digest' ? 'Digest' : 'Note';
    const label = s.label || s.title || s.source || s.file_path || 'source';
    const where = s.where || '';
    const attrs = { class: 'chip', role: 'listitem', title: [label, ...(s.sections && s.sections.length > 1 ? s.sections : [where])].filter(Boolean).join(' — ') };
    const kids = [h('span', { class: 'k' }, kind), h('span', { class: 't' }, label), where ? h('span', { class: 's' }, where) : null];
    if (s.key) {
      const passages = (citations || []).filter((c) => c.chip === i);
      const b = h('button', { type: 'button', ...attrs, role: null, 'aria-label': `Open ${kind.toLowerCase()} “${label}”${where ? `, ${where}` : ''}` }, kids);
      b.addEventListener('click', () => b.dispatchEvent(new CustomEvent('cite-open', {
        bubbles: true, cancelable: true,
        detail: { key: s.key, kind: s.kind, label, passages, n: passages.length ? passages[0].n : null },
      })));
      return h('span', { role: 'listitem', class: 'chip-item' }, b);
    }
    if (s.href) return h('a', { ...attrs, href: s.href, target: s.href.startsWith('obsidian:') ? null : '_blank', rel: 'noopener noreferrer' }, kids);
    return h('span', attrs, kids);
  }));
}

export function metaLine(reply) {
  const bits = [];
  if (reply.served_model) bits.push(`answered by ${reply.served_model}`);
  if (reply.turn_cost_usd) bits.push(`$${reply.turn_cost_usd.toFixed(4)}`);
  const gone = reply.unsupported_citations || 0;
  if (gone) bits.push(`${gone} citation${gone === 1 ? '' : 's'} named no source and ${gone === 1 ? 'was' : 'were'} removed`);
  return bits.length ? h('div', { class: 'meta-line' }, bits.join(' · ')) : null;
}

/** The label of an answer that cites nothing from the library — or
 *  cites it but also says things in paragraphs that cite nothing. */
function notFromLibrary(reply) {
  if (reply.not_from_library) {
    return h('span', { class: 'status-badge not-library', role: 'note', title: 'This answer cites nothing from your notes or papers' }, 'Not from your library');
  }
  const n = reply.uncited_paragraphs || 0;
  if (!n) return null;
  return h('span', { class: 'status-badge not-library partly', role: 'note', title: `${n} paragraph${n === 1 ? '' : 's'} of this answer cite${n === 1 ? 's' : ''} nothing from your notes or papers` }, 'Partly not from your library');
}

/** Show where citation `c` points: flash its source chip, and open the
 *  source viewer (the `cite-open` listener) on its document with every
 *  passage the answer cites from it. */
function openCitation(link, after, c, citations) {
  const passages = (citations || []).filter((x) => x.key === c.key);
  link.dispatchEvent(new CustomEvent('cite-open', {
    bubbles: true, cancelable: true,
    detail: { key: c.key, kind: c.kind, label: c.label, passages, n: c.n },
  }));
  const chip = c.chip != null ? after.querySelectorAll('.sources .chip')[c.chip] : null;
  if (!chip) return;
  chip.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
  chip.classList.remove('flash');
  void chip.offsetWidth; // restart the animation on a second click
  chip.classList.add('flash');
}

/** Tie the answer's `[n]` links (written by the server's renderer, only
 *  for numbers that name a passage) to their citations, and number the
 *  chips they point at. */
function wireCitations(shell, citations) {
  const byN = new Map((citations || []).map((c) => [String(c.n), c]));
  for (const a of shell.bubble.querySelectorAll('a.cite')) {
    const n = (a.getAttribute('href') || '').replace(/^#cite-/, '');
    const c = byN.get(n);
    if (!c) { a.replaceWith(document.createTextNode(`[${n}]`)); continue; }
    a.title = [`[${n}]`, c.label, c.where].filter(Boolean).join(' — ');
    a.dataset.cite = n;
    a.addEventListener('click', (ev) => { ev.preventDefault(); openCitation(a, shell.after, c, citations); });
  }
  const chips = shell.after.querySelectorAll('.sources .chip');
  const nums = new Map();
  for (const c of citations || []) {
    if (c.chip == null || !chips[c.chip]) continue;
    if (!nums.has(c.chip)) nums.set(c.chip, []);
    nums.get(c.chip).push(c.n);
  }
  for (const [i, ns] of nums) chips[i].prepend(h('span', { class: 'n', 'aria-label': `cited as ${ns.join(', ')}` }, ns.join(' ')));
}

/** Fill a finished assistant message (live or from history). */
export function fillReply(shell, reply) {
  shell.status.replaceChildren();
  shell.bubble.hidden = false;
  shell.bubble.classList.remove('streaming');
  if (reply.html) renderHtml(shell.bubble, reply.html);
  else shell.bubble.textContent = reply.text || '';
  // The Markdown as written, for the answer's Copy button.
  shell.li.dataset.text = reply.text || '';
  if (reply.error) shell.li.classList.add('error');
  if (shell.thinking) thinkingLabel(shell.thinking, true);
  if (shell.plan) shell.plan.open = false;
  if (shell.tools && !shell.tools.hidden) {
    shell.tools.open = false;
    shell.tools.querySelector('.tools-label').textContent = toolLabel(shell.tools);
  }
  const notices = (reply.notices || []).map((n) => h('p', { class: 'turn-notice', role: 'note' }, n));
  shell.after.replaceChildren(...[notFromLibrary(reply), sourceChips(reply.sources, reply.citations), memoryNote(reply), metaLine(reply), ...notices].filter(Boolean));
  wireCitations(shell, reply.citations);
}

export function savedAssistant(entry) {
  const shell = assistantShell();
  const log = toolLog(entry.tools);
  if (log) shell.tools.replaceWith(log);
  shell.tools = null;
  if (entry.plan) {
    shell.plan = planCard(entry.plan, false);
    shell.li.prepend(shell.plan);
  }
  if (entry.thinking) {
    shell.thinking = thinkingBox(entry.thinking);
    shell.li.prepend(shell.thinking);
  }
  fillReply(shell, entry);
  return shell.li;
}

/** The Confirm/Cancel card of one pending removal or local-file add (its
 *  own token). */
export function confirmCard(ev, onAnswer, { waiting = false } = {}) {
  const adding = ev.action === 'add';
  if (ev.action === 'mcp_call') return mcpConfirmCard(ev, onAnswer, { waiting });
  const lines = String(ev.description || '').split('\n');
  const inv = lines.filter((l) => l.startsWith('Database entry only'));
  const rest = lines.filter((l) => !l.startsWith('Database entry only')).join('\n').trim();
  const outcome = h('p', { class: 'outcome', role: 'status', hidden: true });
  const ok = adding
    ? h('button', { type: 'button', class: 'btn primary small' }, 'Add this file')
    : h('button', { type: 'button', class: 'btn danger small' }, 'Confirm removal');
  const cancel = h('button', { type: 'button', class: 'btn ghost small' }, adding ? "Don't add" : 'Cancel');
  const card = h('div', { class: 'card confirm', role: 'group', 'aria-label': adding ? 'Confirm adding a file' : 'Confirm removal' },
    h('h3', {}, adding ? 'Add a local file to the knowledge base?' : 'Remove from the knowledge base?'),
    h('p', { class: 'desc' }, rest),
    inv.map((l) => h('p', { class: 'invariant' }, l)),
    h('div', { class: 'row' }, ok, cancel), outcome);
  const answer = async (confirmed) => {
    ok.disabled = true; cancel.disabled = true;
    if (adding && confirmed) {
      outcome.textContent = 'Adding… reading, converting and embedding the file can take a minute.';
      outcome.hidden = false;
    }
    try {
      const r = await onAnswer(ev.token, confirmed);
      outcome.textContent = r; outcome.hidden = false;
      ok.remove(); cancel.remove();
    } catch (e) {
      outcome.textContent = e.message; outcome.hidden = false; outcome.classList.add('error');
      ok.remove(); cancel.remove();
    }
  };
  ok.addEventListener('click', () => answer(true));
  cancel.addEventListener('click', () => answer(false));
  // The agent records the request when its turn is saved: until then the
  // buttons wait (a stopped turn takes its requests with it).
  const note = h('p', { class: 'note' }, 'You can answer as soon as the reply finishes.');
  card.enable = () => { ok.disabled = false; cancel.disabled = false; note.remove(); };
  if (waiting) { ok.disabled = true; cancel.disabled = true; card.append(note); }
  return card;
}

/** The Send/Don't send card of a call to a remote MCP server from a
 *  conversation that read private notes: the server and the arguments are
 *  shown exactly as they would be sent. */
function mcpConfirmCard(ev, onAnswer, { waiting }) {
  const outcome = h('pre', { class: 'outcome mcp-outcome', role: 'status', hidden: true });
  const ok = h('button', { type: 'button', class: 'btn primary small' }, 'Send');
  const cancel = h('button', { type: 'button', class: 'btn ghost small' }, "Don't send");
  const card = h('div', { class: 'card confirm', role: 'group', 'aria-label': 'Confirm a call to a remote MCP server' },
    h('h3', {}, 'Send this to a remote MCP server?'),
    h('pre', { class: 'desc mcp-call' }, String(ev.description || '')),
    h('div', { class: 'row' }, ok, cancel), outcome);
  const answer = async (confirmed) => {
    ok.disabled = true; cancel.disabled = true;
    try {
      outcome.textContent = await onAnswer(ev.token, confirmed);
    } catch (e) {
      outcome.textContent = e.message; outcome.classList.add('error');
    }
    outcome.hidden = false;
    ok.remove(); cancel.remove();
  };
  ok.addEventListener('click', () => answer(true));
  cancel.addEventListener('click', () => answer(false));
  const note = h('p', { class: 'note' }, 'You can answer as soon as the reply finishes.');
  card.enable = () => { ok.disabled = false; cancel.disabled = false; note.remove(); };
  if (waiting) { ok.disabled = true; cancel.disabled = true; card.append(note); }
  return card;
}

/** A failed turn: what went wrong, with Retry and Switch model. */
export function errorCard(message, { onRetry, onSwitch }) {
  const note = h('p', { class: 'note', hidden: true }, 'Asked again below.');
  const retry = onRetry ? h('button', { type: 'button', class: 'btn small primary' }, 'Retry') : null;
  const sw = onSwitch ? h('button', { type: 'button', class: 'btn small', onclick: onSwitch }, 'Switch model') : null;
  const card = h('div', { class: 'card error', role: 'alert' },
    h('h3', {}, 'This turn failed'),
    h('p', { class: 'desc' }, message),
    h('div', { class: 'row' }, retry, sw), note);
  if (retry) {
    // One retry per failure: the card says where the new attempt went.
    retry.addEventListener('click', (ev) => {
      retry.disabled = true;
      if (sw) sw.disabled = true;
      note.hidden = false;
      onRetry(ev);
    });
  }
  return card;
}
