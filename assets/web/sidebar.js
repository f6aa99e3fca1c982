// The sessions sidebar's grouping and search: pinned first, then by the
// day the conversation last moved (Today, Yesterday, Previous 7 days,
// Previous 30 days, then by month), filtered by the search box. Pure
// functions over the listing; app.js draws the rows.

const DAY = 86400000;

function startOfDay(t) {
  const d = new Date(t);
  d.setHours(0, 0, 0, 0);
  return d.getTime();
}

/** The group label of a session last updated at `when` (ms), seen `now`. */
export function dateGroup(when, now = Date.now()) {
  if (!Number.isFinite(when)) return 'Older';
  const today = startOfDay(now);
  if (when >= today) return 'Today';
  if (when >= today - DAY) return 'Yesterday';
  if (when >= today - 7 * DAY) return 'Previous 7 days';
  if (when >= today - 30 * DAY) return 'Previous 30 days';
  const d = new Date(when);
  const sameYear = d.getFullYear() === new Date(now).getFullYear();
  return d.toLocaleDateString(undefined, sameYear ? { month: 'long' } : { month: 'long', year: 'numeric' });
}

/** Whether every word of `query` is in the session's title (case and
 *  accents ignored). */
export function matches(m, query) {
  const fold = (s) => String(s || '').normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();
  const title = fold(m.title || 'Untitled');
  return fold(query).split(/\s+/).filter(Boolean).every((w) => title.includes(w));
}

/** [[label, sessions]] in display order. The listing is newest first
 *  already; pinned sessions make their own group on top. */
export function groupSessions(sessions, query = '', now = Date.now()) {
  const shown = query.trim() ? sessions.filter((m) => matches(m, query)) : sessions;
  const groups = [];
  const at = new Map();
  const put = (label, m) => {
    if (!at.has(label)) { at.set(label, []); groups.push([label, at.get(label)]); }
    at.get(label).push(m);
  };
  for (const m of shown) if (m.pinned) put('Pinned', m);
  for (const m of shown) if (!m.pinned) put(dateGroup(Date.parse(m.updated), now), m);
  return groups;
}
