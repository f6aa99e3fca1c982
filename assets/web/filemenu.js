// A context menu for the editor's file rows and tabs: right-click, or the
// context-menu key / Shift+F10 on the focused row. One menu at a time; it
// takes focus, moves with the arrow keys (Home/End too), runs an item on
// Enter or Space, and closes on Escape, Tab, a click outside or a scroll,
// handing focus back to the row it was opened from.

import { h } from './dom.js';

let open = null; // {menu, anchor, cleanup}

export function closeMenu({ focus = true } = {}) {
  if (!open) return;
  const { menu, anchor, cleanup } = open;
  open = null;
  cleanup();
  menu.remove();
  if (focus && anchor && anchor.isConnected) anchor.focus();
}

/**
 * Open a menu of `items` ({label, run, danger?} or null for a separator)
 * for `anchor`, at the pointer (x, y) or, from the keyboard, under it.
 */
export function openMenu(anchor, items, x = null, y = null) {
  closeMenu({ focus: false });
  const buttons = [];
  const kids = [];
  for (const it of items) {
    if (!it) { if (kids.length) kids.push(h('div', { class: 'ctx-sep', role: 'separator' })); continue; }
    const b = h('button', { type: 'button', role: 'menuitem', class: it.danger ? 'danger' : null, tabindex: '-1' }, it.label);
    b.addEventListener('click', () => { closeMenu(); it.run(); });
    buttons.push(b);
    kids.push(b);
  }
  const menu = h('div', { class: 'menu ctx-menu', role: 'menu', 'aria-label': anchor.getAttribute('aria-label') || anchor.textContent.trim() }, ...kids);
  document.body.append(menu);
  // Place it, kept inside the window.
  const r = anchor.getBoundingClientRect();
  const px = x ?? r.left + 8;
  const py = y ?? r.bottom + 2;
  const m = menu.getBoundingClientRect();
  menu.style.left = `${Math.max(4, Math.min(px, window.innerWidth - m.width - 4))}px`;
  menu.style.top = `${Math.max(4, Math.min(py, window.innerHeight - m.height - 4))}px`;

  const move = (i) => buttons[(i + buttons.length) % buttons.length]?.focus();
  const onKey = (e) => {
    const i = buttons.indexOf(document.activeElement);
    if (e.key === 'ArrowDown') { e.preventDefault(); move(i + 1); }
    else if (e.key === 'ArrowUp') { e.preventDefault(); move(i < 0 ? -1 : i - 1); }
    else if (e.key === 'Home') { e.preventDefault(); move(0); }
    else if (e.key === 'End') { e.preventDefault(); move(-1); }
    else if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); closeMenu(); }
    else if (e.key === 'Tab') { e.preventDefault(); closeMenu(); }
  };
  const onDown = (e) => { if (!menu.contains(e.target)) closeMenu({ focus: false }); };
  const onScroll = (e) => { if (!menu.contains(e.target)) closeMenu({ focus: false }); };
  menu.addEventListener('keydown', onKey);
  document.addEventListener('pointerdown', onDown, true);
  document.addEventListener('scroll', onScroll, true);
  window.addEventListener('resize', onScroll);
  open = {
    menu,
    anchor,
    cleanup: () => {
      document.removeEventListener('pointerdown', onDown, true);
      document.removeEventListener('scroll', onScroll, true);
      window.removeEventListener('resize', onScroll);
    },
  };
  move(0);
}

/**
 * Give `el` a context menu built by `items()` when it opens: right-click,
 * the context-menu key, or Shift+F10.
 */
export function withMenu(el, items) {
  el.setAttribute('aria-haspopup', 'menu');
  el.addEventListener('contextmenu', (e) => {
    e.preventDefault();
    // A keyboard-raised contextmenu event has no pointer position.
    const keyboard = e.button !== 2 && e.clientX === 0 && e.clientY === 0;
    openMenu(el, items(), keyboard ? null : e.clientX, keyboard ? null : e.clientY);
  });
  el.addEventListener('keydown', (e) => {
    if ((e.key === 'F10' && e.shiftKey) || e.key === 'ContextMenu') {
      e.preventDefault();
      openMenu(el, items());
    }
  });
}
