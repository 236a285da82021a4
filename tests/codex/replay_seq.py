"""A fake app-server that plays a SEQUENCE of recordings, one per start:
``python tests/codex/replay_seq.py COUNTER FILE1 FILE2 ... --workspace DIR [ignored ...]``.

Each start reads and bumps the number in the file COUNTER and replays the next recording with
the project's replayer (``paddock.testing.replay``), so a supervisor that restarts a crashed
app-server meets the recording of the process it started next. Test helper only."""

from __future__ import annotations

import sys
from pathlib import Path

from paddock.testing.replay import main as replay


def main(argv: list[str]) -> int:
    counter = Path(argv[0])
    files = [a for a in argv[1:] if a.endswith(".jsonl")]
    rest = argv[1 + len(files):]
    n = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(n + 1))
    if n >= len(files):
        sys.stderr.write(f"replay_seq: start {n + 1}, but only {len(files)} recordings\n")
        return 3
    return replay([files[n], *rest])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
