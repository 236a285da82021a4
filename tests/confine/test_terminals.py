"""ACP ``terminal/*`` commands, which Paddock itself spawns for the agent, run under the
instance's confinement too."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from paddock import Runtime
from paddock.supervisors import landlock_abi

from ..runtime.conftest import run_turn

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(not sys.platform.startswith("linux") or landlock_abi() < 1, reason="needs Landlock"),
]

AGENT = str(Path(__file__).parent.parent / "acp" / "scripted_agent.py")


@pytest.mark.parametrize("confinement", ["workspace", "none"])
def test_a_terminal_command_is_confined_like_its_agent(tmp_path, confinement) -> None:
    state = tmp_path / "state"
    ws = tmp_path / "ws"
    ws.mkdir()
    config = {"instances": {"acp": {"driver": "acp", "binary": sys.executable, "args": [AGENT],
                                    "client_terminal": True, "confinement": confinement}}}
    with Runtime.open(config, state_dir=state) as rt:
        (state / "server.token").write_text("SERVER-TOKEN-VALUE")
        rt.start_session("t1", instance="acp", cwd=ws, runtime_mode="full-access")
        _, events = run_turn(rt, "t1", f"term cat {state / 'server.token'}", timeout=60)
    text = "".join(e.delta for e in events if e.type == "content.delta")
    if confinement == "workspace":
        # the state dir lies in the temp folder, a default root: covered, its files do not exist
        assert "No such file or directory" in text and "SERVER-TOKEN-VALUE" not in text, text
    else:
        assert "SERVER-TOKEN-VALUE" in text, text
