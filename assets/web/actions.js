// What people expect under a message: Copy on every one; Edit on a
// question (the last one is rewritten in place and asked again, an older
// one is copied into the message box); Regenerate and Read aloud on an
// answer. Bars are added by one pass over the conversation after each
// render, so the live turn and a reloaded history get the same ones.

import { h, toast, svgIcon } from './dom.js';
import { copyText } from './code.js';
import { speakButton } from './speech.js';

let ctx = null;

/** ctx: {state, isRunning(id), resend(text), rewind(id) → question,
 *  toComposer(text)} */
export function initActions(c) { ctx = c; }

// Line icons drawn here (24×24, stroked): the system fonts have no glyph
// for some of these symbols.
const ICONS = {
  copy: 'M9 9h10v11H9zM5 15V4h10',
  edit: 'M4 20h4L19 9l-4-4L4 16zM13 7l4 4',
  regen: 'M20 12a8 8 0 1 1-2.3-5.6M20 4v5h-5',
};

export function icon(name) {
  return svgIcon(ICONS[name]);
}

function iconButton(label, name, onClick, extra = {}) {
  const b = h('button', { type: 'button', class: 'msg-act', 'aria-label': label, title: label, ...extra }, icon(name));
  b.addEventListener('click', onClick);
  return b;
}

async function copied(b, text) {
  try {
    await copyText(text);
    b.classList.add('done');
    b.title = 'Copied';
    setTimeout(() => { b.classList.remove('done'); b.title = b.getAttribute('aria-label'); }, 1600);
  } catch { toast('The browser refused the copy', true); }
}

function busy() {
  const s = ctx && ctx.state.session;
  return !s || ctx.isRunning(s.id);
}

/** Put the last exchange back and ask `text` instead. */
async function redo(text) {
  const s = ctx.state.session;
  if (!s || busy()) { toast('Wait for the answer to finish (or stop it) first', true); return; }
  try {
    await ctx.rewind(s.id);
  } catch (e) { toast(e.message, true); return; }
  ctx.resend(text);
}

function editInPlace(li, text) {
  const bubble = li.querySelector('.bubble');
  const area = h('textarea', { class: 'edit-area', 'aria-label': 'Edit your message', rows: Math.min(10, text.split('\n').length + 1) });
  area.value = text;
  const save = h('button', { type: 'button', class: 'btn small primary' }, 'Send');
  const cancel = h('button', { type: 'button', class: 'btn small ghost' }, 'Cancel');
  const box = h('div', { class: 'edit-box' }, area, h('div', { class: 'row' }, cancel, save));
  const bar = li.querySelector('.msg-actions');
  bubble.hidden = true;
  if (bar) bar.hidden = true;
  li.append(box);
  area.focus();
  area.setSelectionRange(area.value.length, area.value.length);
  const close = () => {
    box.remove();
    bubble.hidden = false;
    if (bar) bar.hidden = false;
    if (li.parentElement) decorate(li.parentElement);
  };
  cancel.addEventListener('click', close);
  const go = () => {
    const t = area.value.trim();
    if (!t) return;
    close();
    redo(t);
  };
  save.addEventListener('click', go);
  area.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); go(); }
    if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); close(); }
  });
}

function userBar(li, last) {
  const text = li.querySelector('.bubble').textContent;
  const copy = iconButton('Copy message', 'copy', () => copied(copy, text));
  const edit = last
    ? iconButton('Edit and send again', 'edit', () => editInPlace(li, text))
    : iconButton('Edit a copy in the message box', 'edit', () => ctx.toComposer(text));
  return h('div', { class: 'msg-actions', role: 'toolbar', 'aria-label': 'Message actions' }, copy, edit);
}

function assistantBar(li, last) {
  const bubble = li.querySelector('.bubble');
  const raw = li.dataset.text ?? bubble.textContent;
  const copy = iconButton('Copy answer', 'copy', () => copied(copy, raw));
  const kids = [copy];
  if (last) {
    const q = [...li.parentElement.querySelectorAll('.msg.user .bubble')].pop();
    if (q) kids.push(iconButton('Regenerate this answer', 'regen', () => redo(q.textContent), { class: 'msg-act regen' }));
  }
  const speak = speakButton(bubble);
  if (speak) kids.push(speak);
  return h('div', { class: 'msg-actions', role: 'toolbar', 'aria-label': 'Answer actions' }, kids);
}

/** Add (or refresh) the action bars of every finished message under `list`. */
export function decorate(list) {
  if (!ctx) return;
  const items = [...list.children].filter((li) => li.matches('.msg.user, .msg.assistant'));
  const users = items.filter((li) => li.matches('.msg.user:not(.steered)'));
  const answers = items.filter((li) => li.matches('.msg.assistant') && li.querySelector('.bubble.md, .bubble:not(.streaming):not([hidden])') && !li.querySelector('.bubble.streaming'));
  const lastUser = users[users.length - 1];
  const lastItem = items[items.length - 1];
  const running = busy();
  for (const li of items) {
    li.querySelector(':scope > .msg-actions')?.remove();
    if (li.querySelector('.edit-box')) continue;
    if (li.matches('.msg.user')) {
      if (li.classList.contains('steered')) continue;
      // The last question can be rewritten only once its answer is in.
      li.append(userBar(li, li === lastUser && !running && lastItem !== li));
    } else if (answers.includes(li)) {
      li.append(assistantBar(li, li === lastItem && !running));
    }
  }
}
