"""``python -m paddock.drivers.local``: argument handling and the stdin loop."""

from __future__ import annotations

import os
import sys

__all__ = ["main"]

USAGE = """usage: python -m paddock.drivers.local [--buffered] [--state-dir DIR]

A deterministic ACP v1 agent on stdio (one JSON-RPC object per line).
  --buffered       batch output lines (flush at 64 KiB, after each response, before each
                   request that waits for an answer and before each pause); also
                   PADDOCK_LOCAL_BUFFERED=1
  --state-dir DIR  where session histories live (default: $PADDOCK_LOCAL_STATE_DIR, else
                   $XDG_STATE_HOME/paddock-local, else ~/.local/state/paddock-local)
"""


def main(argv: list[str] | None = None) -> int:
    """Run the agent until stdin closes; returns the exit status (never returns on @crash)."""
    args = list(sys.argv[1:] if argv is None else argv)
    buffered = os.environ.get("PADDOCK_LOCAL_BUFFERED", "").lower() in ("1", "true", "yes", "on")
    state_dir = None
    while args:
        arg = args.pop(0)
        if arg == "--buffered":
            buffered = True
        elif arg == "--state-dir" and args:
            state_dir = args.pop(0)
        elif arg.startswith("--state-dir="):
            state_dir = arg.partition("=")[2]
        elif arg in ("-h", "--help"):
            sys.stdout.write(USAGE)
            return 0
        else:
            sys.stderr.write(f"paddock-local: unknown argument {arg!r}\n{USAGE}")
            return 2

    from ._agent import Agent
    from ._history import History
    from ._wire import Wire

    wire = Wire(sys.stdout.fileno(), buffered=buffered)
    agent = Agent(wire, History(state_dir))
    stdin = sys.stdin.buffer
    try:
        for line in stdin:
            agent.handle_line(line)
    except KeyboardInterrupt:
        agent.shutdown()
        os._exit(130)
    agent.shutdown()
    # Turn threads may still be blocked on the client; they die with the process.
    os._exit(0)
