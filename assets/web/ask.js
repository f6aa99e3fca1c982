// A small in-app form dialog in place of the browser's prompt(): labelled
// fields, Enter to accept, Escape or Cancel to decline. Resolves to the
// fields' values, or null when declined.

import { h, openModal } from './dom.js';

/** ask({title, note, fields: [{name, label, value, placeholder, hint}], ok}) */
export function ask({ title, note = '', fields, ok = 'OK' }) {
  return new Promise((resolve) => {
    const inputs = fields.map((f, i) => h('input', {
      id: `ask-${i}`, name: f.name, value: f.value || '', placeholder: f.placeholder || '', spellcheck: 'false', autocomplete: 'off',
    }));
    const err = h('p', { class: 'error', role: 'alert', hidden: true });
    const form = h('form', { method: 'dialog' },
      h('header', { class: 'modal-head' }, h('h2', { id: 'ask-title' }, title),
        h('button', { type: 'button', class: 'icon-btn close', 'data-close': '', 'aria-label': 'Close' }, '✕')),
      h('div', { class: 'modal-body ask-body' },
        note ? h('p', { class: 'note' }, note) : null,
        fields.map((f, i) => h('div', { class: 'ask-field' },
          h('label', { for: `ask-${i}` }, f.label), inputs[i], f.hint ? h('p', { class: 'note' }, f.hint) : null)),
        err),
      h('footer', { class: 'modal-foot' },
        h('button', { type: 'button', class: 'btn ghost', 'data-close': '' }, 'Cancel'),
        h('button', { type: 'submit', class: 'btn primary' }, ok)));
    const dlg = h('dialog', { class: 'modal ask', 'aria-labelledby': 'ask-title' }, form);
    let answer = null;
    form.addEventListener('submit', (e) => {
      const values = Object.fromEntries(fields.map((f, i) => [f.name, inputs[i].value.trim()]));
      const missing = fields.find((f, i) => f.required && !inputs[i].value.trim());
      if (missing) { e.preventDefault(); err.textContent = `${missing.label} is needed.`; err.hidden = false; return; }
      answer = values;
    });
    dlg.addEventListener('close', () => { dlg.remove(); resolve(answer); });
    document.body.append(dlg);
    openModal(dlg);
    inputs[0].focus();
    inputs[0].select();
  });
}
