"""A real MCP client (the official Python SDK, PyPI `mcp`) for the Rust
integration tests in mcp.rs.

Usage: python mcp_client.py PLAN_JSON

PLAN_JSON is {"stdio": {"command": ..., "args": [...], "env": {...}}} or
{"url": "http://127.0.0.1:PORT/mcp"}, plus "calls": [{"name": ..., "args": {...}}].
It connects, initializes, lists the tools, makes each call in order, and prints
one JSON object on stdout: the negotiated protocol version, server info,
instructions, the tools (name, description, input schema, annotations) and
one result per call (is_error, text, structured).
"""

import asyncio
import json
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
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
