// Code blocks in rendered Markdown: a Copy button on each, and syntax
// colours from the CodeMirror we already vendor (its runmode addon and a
// mode per language), loaded from this origin the first time a block in
// that language is shown — a chat page without code pays nothing.
// Tokens become <span class="tok-…"> built as text nodes: the code is never
// parsed as markup.

import { h } from './dom.js';

const BASE = '/static/vendor/codemirror/';

// Fence label → [mode file(s) to load, CodeMirror mode spec].
const LANGS = {
  python: [['python'], 'python'], py: [['python'], 'python'],
  rust: [['simple', 'rust'], 'rust'], rs: [['simple', 'rust'], 'rust'],
  javascript: [['javascript'], 'javascript'], js: [['javascript'], 'javascript'],
  typescript: [['javascript'], { name: 'javascript', typescript: true }], ts: [['javascript'], { name: 'javascript', typescript: true }],
  json: [['javascript'], { name: 'javascript', json: true }],
  bash: [['shell'], 'shell'], sh: [['shell'], 'shell'], shell: [['shell'], 'shell'], zsh: [['shell'], 'shell'], console: [['shell'], 'shell'],
  sql: [['sql'], 'text/x-sql'],
  c: [['clike'], 'text/x-csrc'], h: [['clike'], 'text/x-csrc'], cpp: [['clike'], 'text/x-c++src'], 'c++': [['clike'], 'text/x-c++src'],
  java: [['clike'], 'text/x-java'], kotlin: [['clike'], 'text/x-kotlin'], scala: [['clike'], 'text/x-scala'], csharp: [['clike'], 'text/x-csharp'], cs: [['clike'], 'text/x-csharp'],
  go: [['go'], 'go'], r: [['r'], 'r'], julia: [['julia'], 'julia'], toml: [['toml'], 'toml'], diff: [['diff'], 'diff'], patch: [['diff'], 'diff'],
  css: [['css'], 'css'], yaml: [['yaml'], 'yaml'], yml: [['yaml'], 'yaml'],
  xml: [['xml'], 'xml'], html: [['xml'], { name: 'xml', htmlMode: true }],
  latex: [['stex'], 'stex'], tex: [['stex'], 'stex'], markdown: [['xml', 'markdown'], 'markdown'], md: [['xml', 'markdown'], 'markdown'],
};

const loaded = new Map(); // script path → Promise

function script(path) {
  if (!loaded.has(path)) {
    loaded.set(path, new Promise((resolve, reject) => {
      const s = document.createElement('script');
      s.src = `${BASE}${path}.js`;
      s.onload = resolve;
      s.onerror = () => { loaded.delete(path); reject(new Error(`could not load ${path}`)); };
      document.head.append(s);
    }));
  }
  return loaded.get(path);
}

/** The core (already on the page, deferred) and the addons a mode needs. */
async function ready(files) {
  if (!window.CodeMirror) return false;
  await script('addon/runmode');
  for (const f of files) {
    // Modes the editor preloads are there already; the rest load in order
    // (rust needs the simple-mode addon first).
    const path = f === 'simple' ? 'addon/simple' : `mode/${f}`;
    if (f !== 'simple' && window.CodeMirror.modes[f]) continue;
    await script(path);
  }
  return true;
}

function langOf(code) {
  const m = /(?:^|\s)language-([\w+#-]+)/.exec(code.className || '');
  return m ? m[1].toLowerCase() : null;
}

/** Colour one `<pre><code class="language-x">` (no-op for an unknown
 *  language or when the scripts cannot load). */
export async function highlight(code) {
  const lang = langOf(code);
  const spec = lang && LANGS[lang];
  if (!spec) return;
  try {
    if (!(await ready(spec[0]))) return;
  } catch { return; }
  const text = code.textContent;
  const frag = document.createDocumentFragment();
  window.CodeMirror.runMode(text, spec[1], (tok, style) => {
    if (!style) { frag.append(document.createTextNode(tok)); return; }
    const span = document.createElement('span');
    span.className = style.split(/\s+/).map((s) => `tok-${s}`).join(' ');
    span.textContent = tok;
    frag.append(span);
  });
  // The text must come back unchanged; anything else keeps the plain code.
  if (frag.textContent === text) {
    code.replaceChildren(frag);
    code.classList.add('hl');
  }
}

/** Copy button and colours for every code block under `root`. */
export function enhanceCode(root) {
  for (const pre of root.querySelectorAll('pre')) {
    if (pre.querySelector('.copy-code')) continue;
    const code = pre.querySelector('code') || pre;
    const btn = h('button', { type: 'button', class: 'copy-code', 'aria-label': 'Copy code', title: 'Copy code' }, 'Copy');
    btn.addEventListener('click', async () => {
      try {
        await copyText(code.textContent);
        btn.textContent = 'Copied';
      } catch {
        btn.textContent = 'Copy failed';
      }
      setTimeout(() => { btn.textContent = 'Copy'; }, 1600);
    });
    pre.append(btn);
    if (code !== pre) highlight(code);
  }
}

/** The clipboard, with the old selection trick where the async API is
 *  missing (a page on plain http other than localhost). */
export async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const ta = h('textarea', { class: 'sr-only', 'aria-hidden': 'true' });
  ta.value = text;
  document.body.append(ta);
  ta.select();
  const ok = document.execCommand('copy');
  ta.remove();
  if (!ok) throw new Error('copy refused');
}
