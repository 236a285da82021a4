from __future__ import annotations

import msgspec
import pytest

from paddock.contract import (
    ACP_DEFAULT_CAPABILITIES,
    Capabilities,
    CapabilityUnsupportedError,
    TurnsCaps,
    decide_steering,
)

# The shape of every capability group. A change here must be a conscious one: the ACP defaults and
# every driver's declaration move with it.
SHAPE = {
    "sessions": ["resume", "load", "fork", "fork_kind", "list", "shared_process"],
    "threads": ["read", "rollback", "metadata"],
    "turns": ["interrupt", "steer", "queue", "attachments", "steer_attachments"],
    "streaming": ["assistant_text", "reasoning", "plan_text", "command_output", "token_usage"],
    "tools": ["commands", "file_changes", "mcp", "web_search", "client_fs", "client_terminal", "mcp_transports", "mcp_scope"],
    "approvals": ["commands", "file_changes", "accept_for_session", "user_input"],
    "planning": ["plan_updates", "plan_mode"],
    "subagents": ["tasks"],
    "context": ["compaction", "context_window"],
    "checkpointing": ["diffs", "restore"],
    "identity": ["thread", "turn", "item", "request"],
    "runtime_policy": ["enforcement", "modes"],
    "usage": ["source", "cost"],
}


def test_thirteen_groups_with_the_expected_shape():
    groups = msgspec.structs.fields(Capabilities)
    assert [g.name for g in groups] == list(SHAPE)
    for group in groups:
        assert [f.name for f in msgspec.structs.fields(group.type)] == SHAPE[group.name], group.name
        assert all(f.required for f in msgspec.structs.fields(group.type)), (
            f"{group.name}: every flag is required, so no driver inherits a silent default"
        )


def test_acp_defaults_round_trip_and_match_the_shape():
    data = msgspec.to_builtins(ACP_DEFAULT_CAPABILITIES)
    assert {k: list(v) for k, v in data.items()} == SHAPE
    assert msgspec.convert(data, Capabilities) == ACP_DEFAULT_CAPABILITIES


def _with_turns(**turns) -> Capabilities:
    return msgspec.structs.replace(
        ACP_DEFAULT_CAPABILITIES, turns=TurnsCaps(**{"interrupt": False, "steer": False, "queue": False,
                                                      "attachments": (), "steer_attachments": False, **turns})
    )


def test_decide_steering_prefers_active_steering():
    assert decide_steering(_with_turns(steer=True, interrupt=True)) == "active_steering"


def test_decide_steering_falls_back_to_interrupt_restart():
    assert decide_steering(_with_turns(interrupt=True)) == "interrupt_restart"
    assert decide_steering(ACP_DEFAULT_CAPABILITIES) == "interrupt_restart"


def test_force_restart_skips_active_steering():
    assert decide_steering(_with_turns(steer=True, interrupt=True), force_restart=True) == "interrupt_restart"


def test_decide_steering_raises_naming_the_missing_capability():
    with pytest.raises(CapabilityUnsupportedError) as info:
        decide_steering(_with_turns())
    assert info.value.capability == "turns.interrupt"
    assert "turns.interrupt" in str(info.value)
    with pytest.raises(CapabilityUnsupportedError) as info:
        decide_steering(_with_turns(steer=True), force_restart=True)
    assert info.value.capability == "turns.interrupt"
