"""``paddock bench peer-claude``: turn latency through Paddock against the official Claude Agent
SDK on the same pinned Claude CLI and the scripted model server.

Applicable only when all three exist: the pinned Claude CLI (``paddock peers install --only
claude``), a Paddock ``claude`` driver (``drivers.BUILT_IN_DRIVERS``), and the Python
``claude-agent-sdk``. Until then it prints ``{"skipped": reason}`` naming what is missing, and
exits 0. The side-by-side measurement itself is not written yet (see benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import emit  # noqa: E402


def _missing() -> list[str]:
    missing = []
    try:
        from drivers.testing._peers import default_peers_dir, load_pins, peer_argv

        pin = load_pins().get("claude")
        if pin is None:
            missing.append("tests/peers.toml has no claude pin")
        elif peer_argv(pin) is None:
            missing.append(f"the pinned Claude CLI {pin.version} is not installed in "
                           f"{default_peers_dir()} ({pin.install_hint})")
    except Exception as exc:  # the peers helper itself is optional
        missing.append(f"the pinned CLIs cannot be located: {exc!r}")
    from drivers import BUILT_IN_DRIVERS

    if "claude" not in BUILT_IN_DRIVERS:
        missing.append("Paddock has no `claude` driver yet (drivers.BUILT_IN_DRIVERS: "
                       f"{', '.join(sorted(BUILT_IN_DRIVERS))})")
    try:
        import claude_agent_sdk  # noqa: F401
    except ImportError:
        missing.append("the claude-agent-sdk Python package is not installed")
    return missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="paddock bench peer-claude", description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="accepted; the output is always JSON")
    parser.parse_args(argv)
    missing = _missing()
    if missing:
        reason = "not applicable: " + "; ".join(missing)
    else:
        reason = ("not implemented yet: the Claude driver arrived after this benchmark was written; "
                  "the Paddock-vs-SDK turn-latency comparison is still to be added")
    emit({"benchmark": "peer-claude", "skipped": reason, "missing": missing})
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
