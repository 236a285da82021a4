"""A test MCP server on the official ``mcp`` SDK that records every tool call to a file.

Run it as ``python -m paddock.testing.mcp_server --record FILE`` (stdio, the way an agent starts
it), or with ``--http`` / ``--sse`` to serve on 127.0.0.1 on a free port: the first line on stdout
is then the server's URL. Hosts can use it to check that their agents really reach their tools.

Tools:
- ``echo(text)`` returns ``echo: <text>``;
- ``add(a, b)`` returns the sum as text;
- ``env_has(name)`` says ``set`` or ``unset`` for an environment variable (never its value), so a
  test can check that a secret in ``env`` reached the server without the secret travelling back.

Each call appends one JSON line ``{"tool", "arguments", "pid", "ts"}`` to the record file (opened,
appended and closed per call, so a reader sees whole lines). With ``--require-header NAME=VALUE``
an HTTP request without that header is answered 401 (the header is how secrets in ``headers``
are checked). Needs the ``mcp`` extra: ``pip install 'agent-paddock[mcp]'``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from pathlib import Path

__all__ = ["TOOL_NAMES", "main", "read_record"]

TOOL_NAMES = ("echo", "add", "env_has")


def read_record(path: str | os.PathLike[str]) -> list[dict[str, object]]:
    """Every call the server recorded so far, oldest first ([] before the first call)."""
    p = Path(path)
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]


def _build(name: str, record: Path):  # -> mcp.server.MCPServer; the SDK is an optional extra
    from mcp.server import MCPServer

    server = MCPServer(name)

    def _log(tool: str, arguments: dict[str, object]) -> None:
        line = json.dumps({"tool": tool, "arguments": arguments, "pid": os.getpid(), "ts": time.time()})
        fd = os.open(record, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, (line + "\n").encode("utf-8"))
        finally:
            os.close(fd)

    @server.tool(description="Echo the text back, prefixed with 'echo: '.")
    def echo(text: str) -> str:
        _log("echo", {"text": text})
        return f"echo: {text}"

    @server.tool(description="Add two integers and return the sum.")
    def add(a: int, b: int) -> str:
        _log("add", {"a": a, "b": b})
        return str(a + b)

    @server.tool(description="Say whether an environment variable is set (never its value).")
    def env_has(name: str) -> str:
        _log("env_has", {"name": name})
        return "set" if os.environ.get(name) else "unset"

    return server


def _serve_http(server, transport: str, require_header: str | None) -> None:
    import anyio
    import uvicorn

    app = server.sse_app() if transport == "sse" else server.streamable_http_app()
    if require_header:
        key, _, value = require_header.partition("=")
        inner = app

        async def guarded(scope, receive, send):  # a plain ASGI wrapper: 401 without the header
            if scope["type"] == "http":
                headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
                if headers.get(key.lower()) != value:
                    await send({"type": "http.response.start", "status": 401, "headers": []})
                    await send({"type": "http.response.body", "body": b"missing header"})
                    return
            await inner(scope, receive, send)

        app = guarded
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    # Listen before printing the URL: a client that reads the line connects at once, and a socket
    # that is only bound refuses it (CI saw ECONNREFUSED). The backlog holds it until uvicorn accepts.
    sock.listen(128)
    port = sock.getsockname()[1]
    path = "/sse" if transport == "sse" else "/mcp"
    print(f"http://127.0.0.1:{port}{path}", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m paddock.testing.mcp_server", description=__doc__.split("\n")[0])
    parser.add_argument("--record", required=True, help="file every tool call is appended to (0600)")
    parser.add_argument("--name", default="paddock-test", help="the server name it reports")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--http", action="store_true", help="serve streamable HTTP on 127.0.0.1")
    mode.add_argument("--sse", action="store_true", help="serve SSE on 127.0.0.1")
    parser.add_argument("--require-header", help="NAME=VALUE an HTTP request must carry")
    args = parser.parse_args(argv)
    try:
        server = _build(args.name, Path(args.record))
    except ImportError:
        print("the test MCP server needs the mcp SDK: pip install 'agent-paddock[mcp]'", file=sys.stderr)
        return 2
    if args.http or args.sse:
        _serve_http(server, "sse" if args.sse else "http", args.require_header)
    else:
        server.run("stdio")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
