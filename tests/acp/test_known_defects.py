"""Flags an agent advertises but does not honour stay off (``KNOWN_DEFECTS``, by agentInfo)."""

from __future__ import annotations

import msgspec

from paddock.drivers.acp import _wire as w
from paddock.drivers.acp._capabilities import KNOWN_DEFECTS, base_capabilities, negotiate


def _init(name: str, version: str) -> w.InitializeResult:
    answer = {"protocolVersion": 1, "agentInfo": {"name": name, "version": version},
              "agentCapabilities": {"loadSession": True, "sessionCapabilities": {"fork": {}, "resume": {}}}}
    return msgspec.json.decode(msgspec.json.encode(answer), type=w.InitializeResult)


def test_claude_code_acp_0_16_0_forks_by_hand_off_and_its_successor_natively():
    base = base_capabilities(client_fs=True, client_terminal=True)
    assert ("@zed-industries/claude-code-acp", "0.16.0") in KNOWN_DEFECTS
    old = negotiate(base, _init("@zed-industries/claude-code-acp", "0.16.0")).sessions
    assert (old.fork, old.fork_kind, old.load, old.resume) == (False, "handoff", True, True)
    newer = negotiate(base, _init("@zed-industries/claude-code-acp", "0.17.0")).sessions
    assert (newer.fork, newer.fork_kind) == (True, "native")
