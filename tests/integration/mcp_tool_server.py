"""A small MCP server built with the official Python SDK (PyPI `mcp`,
`MCPServer`, formerly FastMCP), for the MCP *client* tests in
mcp_servers.rs: Jarvis connects to it, lists its tools and calls them for a
stand-in model.

Usage: python mcp_tool_server.py stdio
       python mcp_tool_server.py http PORT

Tools:
  weather(city)   a fixed forecast naming the city (and MARK, when set)
  whoami()        this process's id, so a test can kill it and see a new one
  echo(text)      the text back, also appended to the file RECORD names
                  (what a remote server received)
  read_note(path) a file's text, as a filesystem server would return it
"""

import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("jarvis-test-tools")


@server.tool()
def weather(city: str) -> str:
    """The forecast for a city."""
    mark = os.environ.get("MARK", "")
    return f"Forecast for {city}: sunny, 21 degrees. {mark}".strip()


@server.tool()
def whoami() -> str:
    """The server's process id."""
    return f"pid {os.getpid()}"


@server.tool()
def echo(text: str) -> str:
    """Returns the text it was sent."""
    record = os.environ.get("RECORD")
    if record:
        with open(record, "a") as f:
            f.write(text + "\n")
    return f"echo: {text}"


@server.tool()
def read_note(path: str) -> str:
    """Reads a note from disk."""
    with open(path) as f:
        return f.read()


if __name__ == "__main__":
    if sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
