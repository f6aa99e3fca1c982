"""A real MCP client (the official Python SDK, PyPI `mcp`) for the Rust
integration tests in mcp.rs.

Usage: python mcp_client.py PLAN_JSON

PLAN_JSON is {"stdio": {"command": ..., "args": [...], "env": {...}}} or
{"url": "http://127.0.0.1:PORT/mcp"}, plus "calls": [{"name": ..., "args": {...}}]
and optionally "then": [{"sleep": seconds, "argv": [...]}], commands run after
the calls while the session is still open.
It connects, initializes, lists the tools, makes each call in order, and prints
one JSON object on stdout: the negotiated protocol version, server info,
instructions, the tools (name, description, input schema, annotations) and
one result per call (is_error, text, structured).
"""

import asyncio
import json
import subprocess
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters


def dump(model):
    if model is None:
        return None
    if hasattr(model, "model_dump"):
        return model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return model


async def main(plan):
    if "url" in plan:
        server = plan["url"]
    else:
        s = plan["stdio"]
        server = StdioServerParameters(command=s["command"], args=s.get("args", []), env=s.get("env"))
    out = {"results": []}
    async with Client(server, mode=plan.get("mode", "auto")) as client:
        out["protocol_version"] = client.protocol_version
        info = client.server_info
        out["server_name"] = info.name if info else None
        out["instructions"] = client.instructions
        listed = await client.list_tools()
        out["tools"] = [dump(t) for t in listed.tools]
        for call in plan.get("calls", []):
            r = await client.call_tool(call["name"], call.get("args", {}))
            texts = [c.text for c in (r.content or []) if getattr(c, "type", None) == "text"]
            out["results"].append(
                {
                    "name": call["name"],
                    "is_error": bool(r.is_error),
                    "text": "\n".join(texts),
                    "structured": r.structured_content,
                }
            )
        # Commands run while the session is still open (e.g. whether the
        # server holds the knowledge base): {"sleep": seconds, "argv": [...]}.
        out["then"] = []
        for step in plan.get("then", []):
            await asyncio.sleep(step.get("sleep", 0))
            p = subprocess.run(step["argv"], capture_output=True, text=True, timeout=120)
            out["then"].append({"code": p.returncode, "stdout": p.stdout, "stderr": p.stderr})
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
