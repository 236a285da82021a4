"""Record the opencode driver's own HTTP + SSE exchanges with the pinned ``opencode serve``
(``python -m tests.opencode.record_driver``), for tests/opencode/test_replay.py.

Each scenario drives the real adapter against the scripted model server through a
:class:`paddock.testing.Recorder` tap on its transport, and writes
``tests/opencode/recordings/<scenario>.jsonl``. Regenerate after moving the opencode pin.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from paddock.actors import EventHub
from paddock.testing import ModelServer, Recorder, load_pins

from .conftest import Harness
from .replay_sessions import SCENARIOS

OUT = Path(__file__).with_name("recordings")


def record(scenario: str) -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        ws = tmp_path / "workspace"
        ws.mkdir()
        hub = EventHub.start(None)
        with ModelServer(workspace=ws) as model:
            rec = Recorder(cli="opencode", version=load_pins()["opencode"].version, scenario=scenario,
                           protocol="opencode-server", workspace=str(ws))
            h = Harness(tmp_path, hub, model, tap=rec)
            try:
                SCENARIOS[scenario](h)
            finally:
                h.close()
                hub.close()
            return rec.write(OUT / f"{scenario}.jsonl")


if __name__ == "__main__":
    for name in sys.argv[1:] or sorted(SCENARIOS):
        print(record(name))
