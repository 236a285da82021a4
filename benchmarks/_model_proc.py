"""A scripted model server in its own process, so a benchmark's CPU clock counts only the client
under test: ``python benchmarks/_model_proc.py SCRIPT_JSON WORKSPACE`` prints the URL on its
first line and serves until stdin closes. Not a benchmark itself."""

from __future__ import annotations

import json
import sys

from paddock.testing import ModelServer, parse_script


def main() -> int:
    script = parse_script(json.loads(sys.argv[1]))
    with ModelServer(script, workspace=sys.argv[2]) as server:
        sys.stdout.write(server.url + "\n")
        sys.stdout.flush()
        sys.stdin.read()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
