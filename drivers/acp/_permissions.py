"""Permission requests: which decisions an ACP request offers, how a host decision picks an
option (by option KIND, never by id), and what each runtime mode answers without asking."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import msgspec

from paddock.contract import JsonObject

from . import _wire as w

__all__ = [
    "DEFAULT_AUTO_ALLOW",
    "auto_decision",
    "normalize_options",
    "offered_decisions",
    "outcome_for",
    "request_kind_of_tool",
]

# Tool kinds each runtime mode allows without asking the host (T3 Code's client-side disposition,
# acp.md section 6). "*" means every kind. Everything else is asked.
DEFAULT_AUTO_ALLOW: Mapping[str, frozenset[str]] = {
    "full-access": frozenset({"*"}),
    "auto-accept-edits": frozenset({"edit", "delete", "move", "read", "search", "think"}),
    "approval-required": frozenset({"read", "search", "think"}),
}

_REQUEST_KINDS = {
    "execute": "command",
    "edit": "file_change",
    "delete": "file_change",
    "move": "file_change",
    "read": "file_read",
}

# ACP PermissionOptionKind preference per host decision; the first kind present wins.
_PREFERENCE: Mapping[str, tuple[str, ...]] = {
    "accept": ("allow_once", "allow_always"),
    "accept_for_session": ("allow_always", "allow_once"),
    "decline": ("reject_once", "reject_always"),
}


_KINDS = frozenset({"allow_once", "allow_always", "reject_once", "reject_always"})
_NO = frozenset({"reject", "deny", "decline", "refuse", "cancel", "no"})
_YES = frozenset({"allow", "accept", "approve", "proceed", "yes", "ok"})


def normalize_options(options: Sequence[w.PermissionOption]) -> list[w.PermissionOption]:
    """Options with a usable ``kind``: one that is missing or unknown (the schema requires it,
    not every agent sends it) is inferred from the option's id and name; an option that says
    nothing recognisable keeps no kind and is never chosen by a decision."""
    out = []
    for option in options:
        if option.kind in _KINDS:
            out.append(option)
            continue
        words = set(re.split(r"[^a-z]+", f"{option.optionId} {option.name or ''}".lower()))
        lasting = bool(words & {"always", "session"})
        if words & _NO:
            kind = "reject_always" if lasting else "reject_once"
        elif words & _YES:
            kind = "allow_always" if lasting else "allow_once"
        else:
            kind = None
        out.append(msgspec.structs.replace(option, kind=kind))
    return out


def request_kind_of_tool(tool_kind: str | None) -> str:
    if tool_kind is None:
        return "permission"
    return _REQUEST_KINDS.get(tool_kind, "tool")


def offered_decisions(options: Sequence[w.PermissionOption]) -> tuple[str, ...]:
    """The host decisions a request can take: ``cancel`` always, the others when an option of a
    matching kind exists."""
    kinds = {o.kind for o in options}
    out = []
    if kinds & {"allow_once", "allow_always"}:
        out.append("accept")
    if "allow_always" in kinds:
        out.append("accept_for_session")
    if kinds & {"reject_once", "reject_always"}:
        out.append("decline")
    out.append("cancel")
    return tuple(out)


def outcome_for(decision: str, options: Sequence[w.PermissionOption]) -> JsonObject:
    """The ``session/request_permission`` result for a host decision. ``cancel``, or a decision
    no option can express, answers the ``cancelled`` outcome (the agent treats it as not allowed)."""
    for kind in _PREFERENCE.get(decision, ()):
        for option in options:
            if option.kind == kind:
                return {"outcome": {"outcome": "selected", "optionId": option.optionId}}
    return {"outcome": {"outcome": "cancelled"}}


def auto_decision(
    runtime_mode: str,
    tool_kind: str | None,
    options: Sequence[w.PermissionOption],
    auto_allow: Mapping[str, frozenset[str]] = DEFAULT_AUTO_ALLOW,
) -> str | None:
    """The decision the runtime takes by itself, or ``None`` to ask the host: ``accept``, once.
    Never ``allow_always``: the agent would keep that rule in its session, and a session
    reloaded in a stricter runtime mode would then run commands unasked (seen with
    claude-code-acp from the registry)."""
    allowed = auto_allow.get(runtime_mode, frozenset())
    if "*" not in allowed and (tool_kind or "other") not in allowed:
        return None
    kinds = {o.kind for o in options}
    if kinds & {"allow_once", "allow_always"}:
        return "accept"
    return None
