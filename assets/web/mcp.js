// Other MCP servers (`[mcp_servers.NAME]` in config.toml): each with how it
// is reached, whether it is local or remote, its state (not started yet,
// connected with its tools, or why it failed) and an on/off switch. A
// switched-off server's tools are not offered to the model.

import { $, h, toast, openModal } from './dom.js';
import { get, post } from './api.js';

function dialog() {
  let dlg = $('#mcp-dialog');
  if (dlg) return dlg;
  dlg = h('dialog', { class: 'modal wide', id: 'mcp-dialog', 'aria-labelledby': 'mcp-title' },
    h('header', { class: 'modal-head' }, h('h2', { id: 'mcp-title' }, 'MCP servers'),
      h('button', { type: 'button', class: 'icon-btn close', 'data-close': '', 'aria-label': 'Close' }, '✕')),
    h('div', { class: 'modal-body', id: 'mcp-body' }));
  document.body.append(dlg);
  return dlg;
}

export function openMcpServers() {
  openModal(dialog());
  load();
}

function state(s) {
  switch (s.status.state) {
    case 'connected': {
      const n = s.status.tools.length;
      return h('p', { class: 'mcp-state ok' }, `Connected · ${n} tool${n === 1 ? '' : 's'}: `,
        h('span', { class: 'mcp-tools' }, s.status.tools.map((t) => `${s.name}__${t}`).join(', ') || 'none'));
    }
    case 'failed': return h('p', { class: 'mcp-state error' }, `Failed: ${s.status.error}`);
    case 'off': return h('p', { class: 'mcp-state' }, 'Off — its tools are not offered.');
    default: return h('p', { class: 'mcp-state' }, 'Not started — it starts when a chat first needs its tools.');
  }
}

function row(s) {
  const sw = h('input', { type: 'checkbox', role: 'switch', checked: s.enabled || null, 'aria-label': `Offer the tools of ${s.name}` });
  sw.addEventListener('change', async () => {
    sw.disabled = true;
    try {
      const r = await post('/mcp-servers/switch', { name: s.name, enabled: sw.checked });
      render(r.servers);
      toast(`${s.name} is ${sw.checked ? 'on' : 'off'} from the next message`);
    } catch (e) { toast(e.message, true); sw.checked = !sw.checked; sw.disabled = false; }
  });
  return h('li', { class: 'mcp-server', 'data-name': s.name },
    h('div', { class: 'mcp-head' },
      h('strong', { class: 'mcp-name' }, s.name),
      h('span', { class: 'loc' }, s.transport),
      h('span', { class: `loc${s.local ? ' local' : ''}`, title: s.local ? 'Runs on this machine' : 'Not on this machine: a call from a session that read private notes asks you first' }, s.local ? 'local' : 'remote'),
      h('label', { class: 'mcp-switch' }, sw, h('span', { class: 'mcp-switch-text' }, s.enabled ? 'On' : 'Off'))),
    h('p', { class: 'mcp-target', title: s.target }, s.target),
    state(s));
}

function render(servers) {
  const body = $('#mcp-body');
  if (!servers.length) {
    body.replaceChildren(h('p', { class: 'note' }, 'No MCP servers are configured. Add one to config.toml, for example:'),
      h('pre', { class: 'mcp-example' }, '[mcp_servers.files]\ncommand = "npx"\nargs = ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/papers"]\n\n[mcp_servers.docs]\nurl = "https://docs.example.com/mcp"\nheaders = { Authorization = "Bearer …" }'));
    return;
  }
  body.replaceChildren(
    h('p', { class: 'note' }, 'Tools of these servers are offered to the model as SERVER__tool. A remote server is asked nothing from a conversation that has read private notes unless you confirm the call.'),
    h('ul', { class: 'mcp-list' }, servers.map(row)));
}

async function load() {
  const body = $('#mcp-body');
  try { render((await get('/mcp-servers')).servers); } catch (e) { body.replaceChildren(h('p', { class: 'error' }, e.message)); }
}
