// Profiles: the picker on a new chat's welcome screen (how Jarvis works in
// this conversation — chosen before the first message) and the header
// badge naming the profile of the conversation on screen. The profiles are
// the shipped ones and the user's TOML files; the server lists them.

import { $, h, toast } from './dom.js';
import { get, post } from './api.js';

let ctx = null;
let catalogue = null;

export function initProfiles(c) {
  ctx = c;
  $('#profile-badge').addEventListener('click', () => {
    const s = ctx.state.session;
    if (s && !document.querySelector('#messages').children.length) $('#profile-picker').querySelector('button')?.focus();
  });
}

async function profiles() {
  if (!catalogue) {
    try { catalogue = await get('/profiles'); } catch (e) { toast(e.message, true); catalogue = { profiles: [], problems: [] }; }
  }
  return catalogue;
}

function nameOf(id) {
  const p = catalogue && catalogue.profiles.find((x) => x.id === id);
  return p ? p.name : id;
}

/** The badge in the header for the session on screen. */
function badge(id) {
  const b = $('#profile-badge');
  b.hidden = !id;
  b.textContent = id ? nameOf(id) : '';
  b.title = id ? `Profile: ${nameOf(id)} — its tools, prompt and planning apply to this conversation` : '';
}

/** The session on screen changed (or its profile did): badge and picker. */
export async function showProfile(session) {
  await profiles();
  if (!ctx || !session || ctx.state.session !== session) return;
  badge(session.profile || '');
  renderPicker(session);
}

/** `profile_switched` from a running turn. */
export function profileSwitched(sessionId, id) {
  const s = ctx && ctx.state.session;
  if (s && s.id === sessionId) {
    s.profile = id;
    badge(id);
  }
}

function card(session, p) {
  const id = p ? p.id : '';
  const on = (session.profile || '') === id;
  const chips = [];
  if (p && p.planning) chips.push('plans first');
  if (p && p.tools) chips.push(`${p.tools.length} tools`);
  if (!p) chips.push('all tools');
  if (p && p.model) chips.push(p.model);
  const b = h('button', { type: 'button', class: `profile-card${on ? ' on' : ''}`, role: 'radio', 'aria-checked': String(on), dataset: { profile: id } },
    h('span', { class: 'pc-name' }, p ? p.name : 'Default'),
    h('span', { class: 'pc-desc' }, p ? p.description : 'Jarvis as configured: every tool, no extra instructions.'),
    h('span', { class: 'pc-chips' }, chips.map((c) => h('span', { class: 'pc-chip' }, c))));
  b.addEventListener('click', () => choose(session, id));
  return b;
}

function renderPicker(session) {
  const box = $('#profile-picker');
  const list = (catalogue && catalogue.profiles) || [];
  if (!list.length) { box.hidden = true; return; }
  box.hidden = false;
  box.replaceChildren(
    h('p', { class: 'pp-label', id: 'pp-label' }, 'How should Jarvis work in this chat?'),
    h('div', { class: 'pp-cards', role: 'radiogroup', 'aria-labelledby': 'pp-label' }, card(session, null), list.map((p) => card(session, p))));
}

async function choose(session, id) {
  try {
    const dto = await post(`/sessions/${session.id}/profile`, { profile: id });
    session.profile = dto.profile;
    session.model = dto.model;
    if (ctx.state.session === session) {
      badge(dto.profile);
      renderPicker(session);
      ctx.refreshInfo();
    }
  } catch (e) { toast(e.message, true); }
}
