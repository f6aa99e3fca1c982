// Talking to the server: JSON calls and the SSE stream of a chat turn. All
// requests go to this page's own origin (the server refuses anything else).

export class ApiError extends Error {
  constructor(status, message, kind, body) {
    super(message);
    this.status = status;
    this.kind = kind;
    this.body = body;
  }
}

export async function api(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, 'The Jarvis server is not answering — is `jarvis serve` still running?', 'unavailable');
  }
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!resp.ok) {
    throw new ApiError(resp.status, (data && data.error) || `${resp.status} ${resp.statusText}`, data && data.kind, data);
  }
  // A change made but missing from the history: never silent (app.js shows it).
  const warning = data && data.history && data.history.history_warning;
  if (warning) window.dispatchEvent(new CustomEvent('jarvis:history-warning', { detail: warning }));
  return data;
}

export const get = (p) => api('GET', p);
export const post = (p, b = {}) => api('POST', p, b);
export const del = (p) => api('DELETE', p);

/**
 * POST `body` to `path` and call `onEvent(obj)` for every SSE `data:` line
 * as it arrives (fetch + ReadableStream: EventSource cannot POST). Resolves
 * when the server ends the stream. Throws ApiError on a non-2xx answer.
 */
export async function stream(path, body, onEvent) {
  let resp;
  try {
    resp = await fetch(path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify(body),
    });
  } catch (e) {
    throw new ApiError(0, 'The Jarvis server is not answering — is `jarvis serve` still running?', 'unavailable');
  }
  if (!resp.ok) {
    let data = null;
    try { data = await resp.json(); } catch { data = null; }
    throw new ApiError(resp.status, (data && data.error) || `${resp.status} ${resp.statusText}`, data && data.kind, data);
  }
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const frame = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const data = frame.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n');
      if (!data) continue;
      let ev;
      try { ev = JSON.parse(data); } catch { continue; }
      onEvent(ev);
    }
  }
}
