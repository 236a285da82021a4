"""``start_session(..., require=[...])`` and the runtime mode: an instance that cannot satisfy
them is refused with the missing capability named, before any process starts."""

from __future__ import annotations

import asyncio
import sys

import psutil
import pytest

from paddock import Runtime
from paddock.aio import AsyncRuntime
from paddock.contract import (
    ACP_DEFAULT_CAPABILITIES,
    CapabilityUnsupportedError,
    ValidationError,
    capability_on,
    require_capabilities,
)


def _descendants() -> int:
    return len(psutil.Process().children(recursive=True))


def test_capability_paths():
    caps = ACP_DEFAULT_CAPABILITIES
    assert capability_on(caps, "turns.interrupt") and not capability_on(caps, "turns.steer")
    assert capability_on(caps, "runtime_policy.modes.full-access")
    assert not capability_on(caps, "tools.mcp_transports.http")
    assert capability_on(caps, "identity.thread") and not capability_on(caps, "identity.turn")
    for bad in ("turns", "turns.fly", "nope.steer", "turns.steer.x", "_x.y"):
        with pytest.raises(KeyError):
            capability_on(caps, bad)
    with pytest.raises(CapabilityUnsupportedError) as refused:
        require_capabilities(caps, ["approvals.commands", "sessions.fork"])
    assert refused.value.capability == "sessions.fork"


def test_a_missing_capability_is_refused_before_any_process_starts(tmp_path):
    before = _descendants()
    with Runtime.open(None, state_dir=tmp_path / "s") as rt:
        for path in ("turns.steer", "sessions.fork", "tools.mcp_transports.http"):
            with pytest.raises(CapabilityUnsupportedError) as refused:
                rt.start_session("t", instance="local", cwd=str(tmp_path), require=[path])
            assert refused.value.capability == path
            assert path in str(refused.value)
        assert _descendants() == before
        assert rt.list_sessions() == []
        with pytest.raises(ValidationError, match="unknown capability path 'turns.fly'"):
            rt.start_session("t", instance="local", cwd=str(tmp_path), require=["turns.fly"])
        session = rt.start_session("t", instance="local", cwd=str(tmp_path),
                                   require=["approvals.commands", "sessions.resume", "streaming.token_usage"])
        assert session.status == "ready"


def test_require_through_the_async_face(tmp_path):
    async def main() -> str:
        async with await AsyncRuntime.open(None, state_dir=tmp_path / "s") as rt:
            try:
                await rt.start_session("t", instance="local", cwd=str(tmp_path), require=["turns.steer"])
            except CapabilityUnsupportedError as exc:
                return exc.capability
        return "accepted"

    assert asyncio.run(main()) == "turns.steer"


def test_a_mode_the_agent_cannot_honour_is_refused_before_its_process_starts(tmp_path):
    # codex's auto-accept-edits maps to approvalPolicy on-request, under which Codex runs a
    # sandboxed command unasked: refused (the binary is never run: the refusal comes first).
    config = {"instances": {"c": {"driver": "codex", "binary": sys.executable}}}
    before = _descendants()
    with Runtime.open(config, state_dir=tmp_path / "s") as rt:
        with pytest.raises(CapabilityUnsupportedError) as refused:
            rt.start_session("t", instance="c", cwd=str(tmp_path), runtime_mode="auto-accept-edits")
        assert refused.value.capability == "runtime_policy.modes"
        assert "auto-accept-edits" in str(refused.value)
        assert _descendants() == before
