"""Record the driver scenarios (``scenarios.py``) through the codex driver against the pinned
app-server and the scripted model server: ``python -m tests.codex.record_driver [NAME ...]``.
Writes ``tests/recordings/codex/driver/<name>.jsonl`` (the project's transcript format)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from paddock.actors import EventHub
from paddock.testing import ModelServer, Recorder, load_pins

from .conftest import Harness
from .scenarios import KILL_PARTS, RESUME_PARTS, SCENARIOS, kill9_first, kill9_second, resume_first, resume_second

OUT = Path(__file__).resolve().parents[1] / "recordings" / "codex" / "driver"


def _recorder(name: str, tmp: Path, h_root: Path) -> Recorder:
    pin = load_pins()["codex"]
    return Recorder(cli="codex", version=pin.version, scenario=name, protocol=pin.protocol,
                    workspace=str(tmp / "workspace"),
                    replacements=[(str(h_root), "<tmp>")])


class SwitchTap:
    """A LineTap that writes to ``current``; the recorder switches it between processes."""

    def __init__(self, current: Recorder) -> None:
        self.current = current

    def on_outbound(self, line: bytes) -> None:
        self.current.on_outbound(line)

    def on_inbound(self, line: bytes) -> None:
        self.current.on_inbound(line)


def record(names: list[str]) -> None:
    hub = EventHub.start(None)
    try:
        for name in names:
            with tempfile.TemporaryDirectory(prefix="paddock-codex-rec-") as t:
                tmp = Path(t)
                (tmp / "workspace").mkdir()
                with ModelServer(workspace=tmp / "workspace") as server:
                    if name == "kill9":
                        recs = [_recorder(part, tmp, tmp) for part in KILL_PARTS]
                        tap = SwitchTap(recs[0])
                        h = Harness(tmp, hub, server, tap=tap, env_root=tmp / "env")
                        first = kill9_first(h)
                        tap.current = recs[1]  # the restart comes after a 0.5 s backoff
                        print(name, first, kill9_second(h, first["pid"]))
                        h.close()
                        for part, rec in zip(KILL_PARTS, recs):
                            rec.write(OUT / f"{part}.jsonl")
                        continue
                    if name == "resume":
                        recs = [_recorder(part, tmp, tmp) for part in RESUME_PARTS]
                        h = Harness(tmp, hub, server, tap=recs[0], env_root=tmp / "env")
                        cursor = resume_first(h)
                        h.close()
                        h2 = Harness(tmp, hub, server, tap=recs[1], env_root=tmp / "env", home=str(h.home))
                        print(name, resume_second(h2, cursor))
                        h2.close()
                        for part, rec in zip(RESUME_PARTS, recs):
                            rec.write(OUT / f"{part}.jsonl")
                        continue
                    rec = _recorder(name, tmp, tmp)
                    h = Harness(tmp, hub, server, tap=rec, env_root=tmp / "env")
                    print(name, SCENARIOS[name](h))
                    h.close()
                    rec.write(OUT / f"{name}.jsonl")
    finally:
        hub.close()


if __name__ == "__main__":
    record(sys.argv[1:] or [*SCENARIOS, "resume", "kill9"])
