"""Decisions pick permission options by kind; runtime modes answer by themselves."""

from __future__ import annotations

from paddock.drivers.acp import _wire as w
from paddock.drivers.acp._permissions import auto_decision, normalize_options, offered_decisions, outcome_for

GEMINI = [
    w.PermissionOption(optionId="proceed_always", name="Always", kind="allow_always"),
    w.PermissionOption(optionId="proceed_once", name="Once", kind="allow_once"),
    w.PermissionOption(optionId="cancel", name="Cancel", kind="reject_once"),
]


def chosen(decision, options):
    outcome = outcome_for(decision, options)["outcome"]
    return outcome.get("optionId", outcome["outcome"])


def test_decisions_map_by_kind_not_id():
    assert chosen("accept", GEMINI) == "proceed_once"
    assert chosen("accept_for_session", GEMINI) == "proceed_always"
    assert chosen("decline", GEMINI) == "cancel"
    assert chosen("cancel", GEMINI) == "cancelled"
    assert offered_decisions(GEMINI) == ("accept", "accept_for_session", "decline", "cancel")


def test_fallbacks_when_a_kind_is_missing():
    once_only = [w.PermissionOption(optionId="a", kind="allow_once")]
    assert chosen("accept_for_session", once_only) == "a"
    assert chosen("decline", once_only) == "cancelled"
    assert offered_decisions(once_only) == ("accept", "cancel")
    kindless = normalize_options([
        w.PermissionOption(optionId="allow-always", name="Always allow"),
        w.PermissionOption(optionId="yes", name="Yes"),
        w.PermissionOption(optionId="deny", name="No thanks"),
        w.PermissionOption(optionId="x", name="???"),
    ])
    assert [o.kind for o in kindless] == ["allow_always", "allow_once", "reject_once", None]
    assert chosen("accept", kindless) == "yes" and chosen("decline", kindless) == "deny"


def test_runtime_mode_dispositions():
    assert auto_decision("full-access", "execute", GEMINI) == "accept"  # never a lasting rule
    assert auto_decision("full-access", "execute", GEMINI[1:]) == "accept"
    assert auto_decision("auto-accept-edits", "edit", GEMINI) == "accept"
    assert auto_decision("auto-accept-edits", "execute", GEMINI) is None
    assert auto_decision("approval-required", "edit", GEMINI) is None
    assert auto_decision("approval-required", "read", GEMINI) == "accept"
    assert auto_decision("approval-required", None, GEMINI) is None
