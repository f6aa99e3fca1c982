// Research in the chat: the composer's Research switch (the next message
// is researched — split into sub-questions that sub-agents answer from the
// library in parallel, written up as a report in a new draft) and the
// live progress of a run inside its answer: the plan, each sub-agent's
// state and latest tool call, the writing, the draft.

import { $, h } from './dom.js';
import { workingLine } from './render.js';

let button = null;

/** Whether the next message is a research question. */
export function researchOn() {
  return !!button && button.getAttribute('aria-checked') === 'true';
}

function set(on) {
  if (!button) return;
  button.classList.toggle('on', on);
  button.setAttribute('aria-checked', String(on));
  // The placeholder says what the next message does; the one it replaced
  // (the Editor's names the open file) comes back after.
  const input = $('#input');
  if (!input) return;
  if (on && input.dataset.placeholder === undefined) {
    input.dataset.placeholder = input.placeholder;
    input.placeholder = 'Research a question in your library…';
  } else if (!on && input.dataset.placeholder !== undefined) {
    input.placeholder = input.dataset.placeholder;
    delete input.dataset.placeholder;
  }
}

/** A research question is one message: the switch goes off once sent. */
export function researchSent() {
  set(false);
}

export function initResearch() {
  button = $('#research');
  if (!button) return;
  button.addEventListener('click', () => set(!researchOn()));
}

const LABELS = {
  queued: 'waiting',
  running: 'searching…',
  empty: 'found nothing to cite',
  private: 'only private notes match — skipped under a cloud model',
  budget: 'not run: budget reached',
};

function agentLabel(ev) {
  if (ev.state === 'done') return `cites ${ev.cited} of ${ev.passages} passage${ev.passages === 1 ? '' : 's'}`;
  if (ev.state === 'failed') return `failed: ${ev.message || ''}`;
  return LABELS[ev.state] || ev.state;
}

function panel(shell) {
  if (shell.research) return shell.research;
  const list = h('ol', { class: 'research-plan' });
  const step = h('p', { class: 'research-step' }, 'Planning sub-questions…');
  const box = h('section', { class: 'research-progress', 'aria-label': 'Research progress', 'aria-live': 'polite' },
    h('h3', {}, 'Research'), step, list);
  shell.li.insertBefore(box, shell.status);
  shell.research = { box, list, step, rows: [] };
  return shell.research;
}

/** One `research` event of a live turn. */
export function onResearchEvent(shell, ev) {
  const p = panel(shell);
  switch (ev.event) {
    case 'plan':
      shell.status.replaceChildren(workingLine('Researching…'));
      p.step.textContent = `${ev.questions.length} sub-question${ev.questions.length === 1 ? '' : 's'}, answered from your library:`;
      p.rows = ev.questions.map((q) => {
        const state = h('span', { class: 'research-state' }, 'waiting');
        const tool = h('span', { class: 'research-tool' });
        const li = h('li', { 'data-state': 'queued' }, h('span', { class: 'research-q' }, q), state, tool);
        p.list.append(li);
        return { li, state, tool };
      });
      break;
    case 'agent': {
      const r = p.rows[ev.index];
      if (!r) break;
      r.li.dataset.state = ev.state;
      r.state.textContent = agentLabel(ev);
      if (ev.state !== 'running') r.tool.textContent = '';
      break;
    }
    case 'tool': {
      const r = p.rows[ev.index];
      if (r) r.tool.textContent = `${ev.name} ${ev.summary || ''}`.trim();
      break;
    }
    case 'writing':
      shell.status.replaceChildren(workingLine('Writing the report…'));
      p.step.textContent = 'Writing the report from what was found…';
      break;
    case 'report':
      p.step.textContent = ev.suggested
        ? `The report waits in the new draft “${ev.title}” as a suggested change.`
        : `The report is in the new draft “${ev.title}”.`;
      p.box.classList.add('done');
      break;
    default: break;
  }
}
