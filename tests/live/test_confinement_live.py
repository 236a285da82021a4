"""Live, against the pinned CLIs and the scripted model server: the model makes the agent run
``cat`` of the state dir's ``server.token`` with its own shell tool. Under the default
``confinement = "workspace"`` the kernel refuses it (the token never reaches an event), with
``confinement = "none"`` the agent reads it (so the test can fail)."""

from __future__ import annotations

import contextlib
import sys

import pytest

from paddock import Runtime
from paddock.supervisors import landlock_abi
from paddock.testing import ModelServer, Shell, Text

from .conftest import turn_text
from .test_host_handoff import _instance, proxied  # noqa: F401  (fixture)

pytestmark = [
    pytest.mark.live,
    pytest.mark.timeout(300),
    pytest.mark.skipif(not sys.platform.startswith("linux") or landlock_abi() < 1, reason="needs Landlock"),
]

TOKEN = "SERVER-TOKEN-VALUE-7f3a"
SCRIPT = {"scenarios": {"peek": [Shell(command="cat ../state/server.token 2>&1 | sed 's/.*: //'"),
                                 Text(text="Done: {output}")]}}


@pytest.mark.parametrize("confinement", ["workspace", "none"])
@pytest.mark.parametrize("driver", ["claude", "codex", "gemini", "opencode"])
def test_the_kernel_refuses_an_agent_reading_the_server_token(driver, confinement, tmp_path, proxied):  # noqa: F811
    ws = tmp_path / "ws"
    ws.mkdir()
    state = tmp_path / "state"
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(ModelServer(SCRIPT, workspace=ws, log_path=tmp_path / "model.jsonl"))
        instance = {**_instance(driver, tmp_path, server, proxied), "confinement": confinement}
        rt = stack.enter_context(Runtime.open({"instances": {"agent": instance}}, state_dir=state))
        (state / "server.token").write_text(TOKEN)
        with rt.subscribe(thread_id="t1") as sub:
            rt.start_session("t1", instance="agent", cwd=str(ws), runtime_mode="full-access", timeout=120)
            text, done = turn_text(rt, "t1", "look around SCENARIO:peek", timeout=120)
            events = []
            while (event := sub.get(timeout=0.5)) is not None:
                events.append(event)
    started = next(e for e in events if e.type == "session.started")
    assert started.confinement is not None and started.confinement.confined == (confinement == "workspace")
    assert done.state == "completed", done
    outputs = " ".join(str(e) for e in events)  # the command's output items and the model's echo of it
    if confinement == "workspace":
        # The state dir lies in the temp folder, a default root: it is covered, so the file does
        # not exist for the agent.
        assert "No such file or directory" in outputs or "Permission denied" in outputs, text
        assert TOKEN not in outputs
    else:
        assert TOKEN in outputs, text
