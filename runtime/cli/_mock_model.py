"""``paddock mock-model``: run the scripted model server until Ctrl-C or SIGTERM.

The first stdout line is the bound URL (``http://127.0.0.1:<port>``), flushed at once, so a parent
can read it to learn the port.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from paddock.testing import ModelServer

HELP = "serve the scripted model (OpenAI Responses/Chat, Anthropic, Gemini) on 127.0.0.1"


EPILOG = """\
Point an instance at it with the three model keys (any key, any model name):
  endpoint = "http://127.0.0.1:PORT"   api_key = "sk-anything"   model = "mock-model"
and pick a scenario with the marker SCENARIO:<name> in the prompt.

Built-in scenarios: text, tool_shell, tool_shell_escalated, tool_write, patch, slow, http400,
http500, usage_limit, rate_limits, mcp_echo.

A script (JSON or TOML) names scenarios, each a list of steps, and the default one:
  default = "greet"
  [[scenarios.greet]]                   # text: streamed in `chunks` pieces, `delay` s apart
  type = "text"    text = "Hi {output}" chunks = 2   delay = 0.05
  [[scenarios.touch]]                   # shell: call the CLI's shell tool
  type = "shell"   command = "touch a.txt"   escalate = false
  [[scenarios.note]]                    # write: call its write-file tool (path joined to --workspace)
  type = "write"   path = "notes.txt"   content = "hi\\n"
  [[scenarios.add]]                     # patch: apply_patch (tool, else Codex shell), else write
  type = "patch"   path = "added.txt"   content = "hi\\n"
  [[scenarios.ask]]                     # mcp: call the offered MCP tool, in the CLI's naming
  type = "mcp"     tool = "echo"   arguments = { text = "hi" }
  [[scenarios.down]]                    # error: answer the call with this HTTP status
  type = "error"   status = 503   message = "overloaded"
  [[scenarios.limited]]                 # usage_limit: HTTP 429 with the reset, for resets_in s
  type = "usage_limit"   resets_in = 3.0
  [[scenarios.counted]]                 # rate_limits: the account's window in the reply's headers
  type = "rate_limits"   used_percent = 42.0   resets_in = 3600.0
(one key per line in a real file). A call plays up to and including the next tool step; after
the last one the model says "Tool finished: {output}". The whole format: docs/mock-model.md.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Serve the scripted model API (OpenAI Responses and Chat, Anthropic, Gemini) on 127.0.0.1."
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default 0: a free one)")
    parser.add_argument("--script", type=Path, help="scenario script (JSON or TOML); default: built-ins")
    parser.add_argument("--log", type=Path, help="append every request as one JSON line to this file")
    parser.add_argument("--workspace", type=Path, help="folder that relative write paths are joined to")


def run(args: argparse.Namespace) -> int:
    try:
        server = ModelServer(args.script, workspace=args.workspace, log_path=args.log, port=args.port)
    except (OSError, ValueError) as exc:
        print(f"paddock mock-model: {exc}", file=sys.stderr)
        return 2
    # Block the signals before the server threads start (they inherit the mask) and take them
    # with sigwait(): no Python handler runs inside a lock the main thread holds.
    signals = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        server.start()
    except OSError as exc:  # the port is taken (EADDRINUSE) or not ours to bind
        print(f"paddock mock-model: cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    try:
        print(server.url, flush=True)
        signal.sigwait(signals)
    finally:
        server.stop()
    return 0
