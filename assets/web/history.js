// The History panel over a draft file's .versions/: every snapshot taken
// before a save, a restore or an accepted suggestion; one can be viewed and
// restored (the restore snapshots the current text first, so it is itself
// undoable).

import { $, h, toast, openModal } from './dom.js';
import { get, post } from './api.js';

/** The History dialog of tab `t`: its saved versions, one to view and restore. */
export async function showHistory(t, { isDirty, reloadFromDisk, reshow }) {
  let f;
  try {
    f = await get(`/drafts/${encodeURIComponent(t.draft_id)}/file?name=${encodeURIComponent(t.filename)}`);
  } catch (e) { toast(e.message, true); return; }
  const dlg = $('#history-dialog');
  $('#history-title').textContent = `History of ${t.filename}`;
  const list = $('#history-list');
  const view = $('#history-view');
  const restoreBtn = $('#history-restore');
  view.textContent = 'Choose a version to see it.';
  restoreBtn.disabled = true;
  let chosen = null;
  const versions = [...(f.versions || [])].sort((a, b) => b.saved_ms - a.saved_ms);
  list.replaceChildren(...versions.map((v) => {
    const b = h('button', { type: 'button', role: 'option', 'aria-selected': 'false', class: 'version' },
      new Date(v.saved_ms).toLocaleString(), h('span', { class: 'muted' }, ` · ${v.bytes} bytes`));
    b.addEventListener('click', async () => {
      for (const x of list.querySelectorAll('[role="option"]')) x.setAttribute('aria-selected', String(x === b));
      try {
        const r = await get(`/drafts/${encodeURIComponent(t.draft_id)}/version?name=${encodeURIComponent(t.filename)}&version=${encodeURIComponent(v.version)}`);
        view.textContent = r.text;
        chosen = v.version;
        restoreBtn.disabled = false;
      } catch (e) { toast(e.message, true); }
    });
    return h('li', {}, b);
  }));
  if (!versions.length) list.replaceChildren(h('li', { class: 'muted' }, 'No saved versions yet: one is taken before every save, restore and accepted suggestion.'));
  restoreBtn.onclick = async () => {
    if (!chosen) return;
    if (isDirty(t) && !confirm('This tab has unsaved changes. Restore anyway? (They stay one undo away.)')) return;
    try {
      await post('/drafts/restore', { draft_id: t.draft_id, filename: t.filename, version: chosen });
      await reloadFromDisk(t);
      dlg.close();
      toast('Restored; the text it replaced was saved as a version first');
      await reshow();
    } catch (e) { toast(e.message, true); }
  };
  openModal(dlg);
}

