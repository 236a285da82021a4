"""Server requests -> canonical requests, and host decisions -> the app-server's answers.

Decisions go back verbatim in the request's own vocabulary (``codex-app-server.md`` section 3
and 6): v2 approvals take ``accept | acceptForSession | decline | cancel``; the legacy v1
``execCommandApproval`` / ``applyPatchApproval`` take ``approved | approved_for_session | denied
| abort``; ``item/permissions/requestApproval`` grants the requested profile for the turn or the
session, or nothing; an MCP elicitation takes ``accept | decline | cancel``. A request kind we do
not know gets ``{"decision": <v2 decision>}``: it still reaches the host (never dropped, never
left unanswered).
"""

from __future__ import annotations

from dataclasses import dataclass

from paddock.contract import JsonObject, JsonValue

__all__ = ["NativeRequest", "V2_DECISIONS", "answer_for", "cancel_answer", "request_kind"]

V2_DECISIONS: dict[str, str] = {
    "accept": "accept",
    "accept_for_session": "acceptForSession",
    "decline": "decline",
    "cancel": "cancel",
}
_V1_DECISIONS: dict[str, str] = {
    "accept": "approved",
    "accept_for_session": "approved_for_session",
    "decline": "denied",
    "cancel": "abort",
}
_ELICITATION: dict[str, str] = {"accept": "accept", "accept_for_session": "accept", "decline": "decline", "cancel": "cancel"}

_KINDS: dict[str, str] = {
    "item/commandExecution/requestApproval": "command",
    "item/fileChange/requestApproval": "file_change",
    "item/permissions/requestApproval": "permission",
    "execCommandApproval": "command",
    "applyPatchApproval": "file_change",
    "mcpServer/elicitation/request": "tool",
}


@dataclass(frozen=True, slots=True)
class NativeRequest:
    """What answering one open request needs: its JSON-RPC id, method, and for a permissions
    request the profile it asked for."""

    rpc_id: int | str
    method: str
    item_id: str | None = None
    permissions: JsonValue = None


def request_kind(method: str) -> str:
    """The canonical request kind of a server request (``other`` when unknown)."""
    return _KINDS.get(method, "other")


def answer_for(native: NativeRequest, decision: str) -> JsonObject:
    """The JSON-RPC result that carries the host's ``decision`` for ``native``."""
    method = native.method
    if method in ("execCommandApproval", "applyPatchApproval"):
        return {"decision": _V1_DECISIONS[decision]}
    if method == "item/permissions/requestApproval":
        if decision in ("accept", "accept_for_session"):
            granted = native.permissions if isinstance(native.permissions, dict) else {}
            return {"permissions": granted, "scope": "session" if decision == "accept_for_session" else "turn"}
        return {"permissions": {}}
    if method == "mcpServer/elicitation/request":
        return {"action": _ELICITATION[decision]}
    return {"decision": V2_DECISIONS[decision]}


def cancel_answer(native: NativeRequest) -> JsonObject:
    """The answer to a request cancelled by the runtime (turn end, interrupt, stop)."""
    return answer_for(native, "cancel")
