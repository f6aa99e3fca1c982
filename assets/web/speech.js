// Read aloud: the browser's own speech synthesis (no audio leaves the
// machine). What is read is the answer's words: code blocks, maths,
// citation markers and link addresses are skipped. One answer speaks at a
// time; its button stops it. The voice is chosen in a small dialog (per
// browser, kept in localStorage); without voices the button is not shown.

import { h, toast, openModal, svgIcon } from './dom.js';

const KEY = 'jarvis.voice';
const synth = () => window.speechSynthesis;
let speaking = null; // the button of the answer being read

// Only voices the machine itself speaks: a browser's "online" voices send
// the text to its vendor, and nothing of an answer leaves the machine.
function voices() {
  try { return synth() ? synth().getVoices().filter((v) => v.localService !== false) : []; } catch { return []; }
}

export function available() { return voices().length > 0; }

function chosenVoice() {
  let name = null;
  try { name = localStorage.getItem(KEY); } catch { /* private mode */ }
  const all = voices();
  return all.find((v) => v.name === name)
    || all.find((v) => v.default)
    || all.find((v) => (v.lang || '').startsWith((navigator.language || 'en').slice(0, 2)))
    || all[0];
}

/** The words of a rendered answer worth hearing. */
export function speakable(bubble) {
  const c = bubble.cloneNode(true);
  for (const x of c.querySelectorAll('pre, math, a.cite, .copy-code, .msg-actions, sup, table')) x.remove();
  for (const a of c.querySelectorAll('a')) if (a.textContent.trim() === a.getAttribute('href')) a.remove();
  // Blocks become sentences, so the voice pauses between them.
  for (const b of c.querySelectorAll('p, li, h1, h2, h3, h4, h5, h6, blockquote')) b.append('. ');
  return c.textContent
    .replace(/https?:\/\/\S+/g, '')
    .replace(/\[\d+\]/g, '')
    .replace(/[*_`#>|~]+/g, ' ')
    .replace(/(\.\s*){2,}/g, '. ')
    .replace(/\s+/g, ' ')
    .trim();
}

export function stop() {
  if (synth()) synth().cancel();
  if (speaking) { mark(speaking, false); speaking = null; }
}

function mark(b, on) {
  b.classList.toggle('on', on);
  b.setAttribute('aria-pressed', String(on));
  b.setAttribute('aria-label', on ? 'Stop reading aloud' : 'Read aloud');
  b.title = b.getAttribute('aria-label');
}

function speak(b, bubble) {
  const was = speaking;
  stop();
  if (was === b) return;
  const text = speakable(bubble);
  if (!text) { toast('Nothing to read in this answer'); return; }
  const u = new SpeechSynthesisUtterance(text);
  const v = chosenVoice();
  if (v) { u.voice = v; u.lang = v.lang; }
  u.onend = () => { if (speaking === b) { mark(b, false); speaking = null; } };
  u.onerror = u.onend;
  speaking = b;
  mark(b, true);
  synth().speak(u);
}

function speakerIcon() {
  return svgIcon('M4 9h4l5-4v14l-5-4H4zM16 9a4 4 0 0 1 0 6M18.5 6.5a7.5 7.5 0 0 1 0 11');
}

/** A speaker button for `bubble`, or null where the browser has no voices. */
export function speakButton(bubble) {
  if (!available()) return null;
  const b = h('button', { type: 'button', class: 'msg-act speak', 'aria-pressed': 'false' }, speakerIcon());
  mark(b, false);
  b.addEventListener('click', () => speak(b, bubble));
  return b;
}

/** Voices often arrive after the page: call `f` when they change. */
export function onVoices(f) {
  if (synth() && synth().addEventListener) synth().addEventListener('voiceschanged', f);
}

/** The voice dialog (built once; reachable from the palette and ⋮). */
export function openVoices() {
  let dlg = document.getElementById('voice-dialog');
  if (!dlg) {
    dlg = h('dialog', { class: 'modal', id: 'voice-dialog', 'aria-labelledby': 'voice-title' },
      h('header', { class: 'modal-head' }, h('h2', { id: 'voice-title' }, 'Read-aloud voice'),
        h('button', { type: 'button', class: 'icon-btn close', 'data-close': '', 'aria-label': 'Close' }, '✕')),
      h('div', { class: 'modal-body' },
        h('p', { class: 'note', id: 'voice-note' }),
        h('label', { for: 'voice-select' }, 'Voice'),
        h('select', { id: 'voice-select' }),
        h('div', { class: 'row' }, h('button', { type: 'button', class: 'btn small', id: 'voice-test' }, 'Try it'))),
      h('footer', { class: 'modal-foot' }, h('button', { type: 'button', class: 'btn primary', 'data-close': '' }, 'Done')));
    document.body.append(dlg);
    dlg.querySelector('#voice-select').addEventListener('change', (e) => {
      try { localStorage.setItem(KEY, e.target.value); } catch { /* private mode */ }
    });
    dlg.querySelector('#voice-test').addEventListener('click', () => {
      stop();
      const u = new SpeechSynthesisUtterance('This is how answers will sound.');
      const v = chosenVoice();
      if (v) { u.voice = v; u.lang = v.lang; }
      synth().speak(u);
    });
  }
  const all = voices();
  const sel = dlg.querySelector('#voice-select');
  const cur = chosenVoice();
  sel.replaceChildren(...all.map((v) => h('option', { value: v.name, selected: cur && v.name === cur.name }, `${v.name} (${v.lang})`)));
  sel.disabled = !all.length;
  dlg.querySelector('#voice-test').disabled = !all.length;
  dlg.querySelector('#voice-note').textContent = all.length
    ? 'The speaker button under an answer reads it with this voice, spoken by this machine (voices that would send the text to an online service are not offered).'
    : 'This browser offers no voices of its own on this machine, so answers have no speaker button.';
  openModal(dlg);
  sel.focus();
}
