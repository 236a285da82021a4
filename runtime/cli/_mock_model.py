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


def add_arguments(parser: argparse.ArgumentParser) -> None:
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
    server.start()
    try:
        print(server.url, flush=True)
        signal.sigwait(signals)
    finally:
        server.stop()
    return 0
