"""The generic ``acp`` flavor against a peer we did not write: the official ACP Python SDK's
example echo agent (agent-client-protocol 0.12.1, examples/echo_agent.py from its sdist)."""

from __future__ import annotations

import os
import sys
import tarfile
from pathlib import Path

import pytest

from .conftest import etype, text_of

SDK_VERSION = "0.12.1"
SDIST = Path(os.environ.get(
    "PADDOCK_ACP_SDK_SDIST", Path.home() / ".cache" / "paddock" / f"agent_client_protocol-{SDK_VERSION}.tar.gz"
))
INSTALL = (
    f"pip install 'agent-client-protocol=={SDK_VERSION}' && pip download --no-deps --no-binary :all: "
    f"agent-client-protocol=={SDK_VERSION} -d ~/.cache/paddock"
)


@pytest.fixture
def echo_agent(tmp_path) -> Path:
    pytest.importorskip("acp", reason=INSTALL)
    if not SDIST.is_file():
        pytest.skip(INSTALL)
    with tarfile.open(SDIST) as tar:
        member = tar.extractfile(f"agent_client_protocol-{SDK_VERSION}/examples/echo_agent.py")
        assert member is not None
        script = tmp_path / "echo_agent.py"
        script.write_bytes(member.read())
    return script


def test_generic_flavor_simple_turn_against_the_sdk_echo_agent(make, echo_agent):
    h = make(driver="acp", binary=sys.executable, args=[str(echo_agent)])
    session = h.start()
    assert session.status == "ready" and session.resume_cursor.driver == "acp"
    caps = h.adapter.capabilities()
    assert caps.sessions.load is False and caps.sessions.resume is False  # echo answers {protocolVersion: 1}
    res, events = h.turn("Say hello.")
    assert text_of(events, res.turn_id) == "Say hello."
    assert events[-1].state == "completed" and events[-1].stop_reason == "end_turn"
    res2, events2 = h.turn("Again.")
    assert text_of(events2, res2.turn_id) == "Again."


def test_generic_flavor_config_keys_with_the_local_agent(make):
    """The generic flavor runs any command line; fs is not advertised unless configured, and
    `native_modes` maps runtime/interaction modes onto the agent's own modes."""
    h = make(driver="acp", binary=sys.executable, args=["-m", "paddock.drivers.local"],
             native_modes={"plan": "plan", "full-access": "default"})
    assert h.adapter.capabilities().tools.client_fs is False
    h.start(runtime_mode="full-access", interaction_mode="plan")
    configured = h.events_until(lambda e: etype(e) == "session.configured" and e.config.get("current_mode") == "plan")
    assert configured
    res, events = h.turn("@write direct.txt by the agent itself")
    done = [e for e in events if etype(e) == "item.completed" and e.kind == "file_change"]
    assert done[0].status == "completed" and done[0].data["output"]["via"] == "direct"
    assert (h.cwd / "direct.txt").read_text() == "by the agent itself"
