"""``paddock serve``: own a state directory and serve its Runtime over HTTP until a signal."""

from __future__ import annotations

import argparse
import os
import sys

from paddock.cli._common import write
from paddock.cli._places import CONFIG_HELP, announce_config, find_config

HELP = ("own a state directory and serve its Runtime over HTTP (unix socket, or loopback TCP with a token), "
        "with the dashboard at / and Prometheus metrics at /metrics")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help=CONFIG_HELP)
    parser.add_argument("--state-dir", help="state directory (default: $PADDOCK_STATE_DIR or ./.paddock)")
    parser.add_argument(
        "--listen", metavar="127.0.0.1:PORT",
        help="serve on loopback TCP with a bearer token (written to STATE_DIR/server.token) instead of "
             "the unix socket STATE_DIR/paddock.sock",
    )
    parser.add_argument("--no-metrics", action="store_true",
                        help="do not serve Prometheus metrics at /metrics (they are on by default)")


def run(args: argparse.Namespace) -> int:
    try:
        from paddock.server import serve
    except ImportError as exc:
        write(f"paddock serve: needs the server extra ({exc.name} is missing): pip install 'agent-paddock[server]'\n", err=True)
        return 2
    from paddock.contract import PaddockError

    def ready(endpoint) -> None:
        if endpoint.socket:
            write(f"paddock serve: listening on unix:{endpoint.socket} (pid {endpoint.pid})\n")
            return
        token_file = os.path.join(state, "server.token")
        write(f"paddock serve: listening on {endpoint.url} (pid {endpoint.pid}); the bearer token is in {token_file}\n")
        # The token goes to a terminal only, never to a pipe or a log file: the page moves it
        # out of the address bar into the tab's session storage.
        if sys.stdout.isatty():
            try:
                with open(token_file, encoding="utf-8") as f:
                    token = f.read().strip()
            except OSError:
                return
            write(f"paddock serve: dashboard {endpoint.url}/#token={token}\n")
        else:
            write(f"paddock serve: dashboard {endpoint.url}/ (it asks for the token)\n")

    state = os.path.abspath(args.state_dir or os.environ.get("PADDOCK_STATE_DIR") or ".paddock")
    found = find_config(args)
    announce_config("serve", found)
    try:
        return serve(found.path, state_dir=state, listen=args.listen, on_ready=ready, metrics=not args.no_metrics)
    except PaddockError as exc:
        write(f"paddock serve: {exc}\n", err=True)
        return 1
