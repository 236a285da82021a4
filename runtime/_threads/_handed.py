"""What a starting session is handed: its MCP servers, preamble and reminder, or a hand-off's
transcript in the preamble's place, its approval rules, and the warnings to publish before it
starts.

Pure except for the thread's hand-off file, which :func:`hand_off` persists (0600). Thread: the
caller's (the thread directory, holding the thread's lock).
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from paddock._instances._handoff import ThreadHandoff
from paddock._instances._table import InstanceSlot
from paddock._operations._table import StartSessionBody
from paddock._state._store import Binding
from paddock.contract import (
    ApprovalRule,
    McpServer,
    PersistenceError,
    RuntimeWarningEvent,
    check_preamble,
    check_preamble_reminder,
    mcp_secrets,
    merge_mcp_servers,
)

__all__ = ["Handed", "Handing", "hand_off"]

Handed = tuple[tuple[McpServer, ...], str | None, str | None, tuple[ApprovalRule, ...]]
"""What a live session was handed: its merged MCP servers, its preamble (as bounded), its
reminder and its approval rules (the thread's, the instance's, the runtime's)."""


class Handing(msgspec.Struct, frozen=True, kw_only=True):
    """The result of :func:`hand_off`."""

    handed: Handed
    """What the session starts with (a pending hand-off's transcript as its preamble)."""
    after_transcript: Handed | None
    """What the live session counts as handed once a turn carried the transcript; ``None``
    when no transcript is pending."""
    warnings: tuple[RuntimeWarningEvent, ...]


def hand_off(a: StartSessionBody, slot: InstanceSlot, binding: Binding | None, transcript: str | None, *,
             moved_from: Callable[[str, str], ThreadHandoff | None],
             runtime_rules: tuple[ApprovalRule, ...] = ()) -> Handing:
    """The instance's servers merged with the session's (given now, else persisted with the
    thread), the preamble (given, persisted, else the instance's; omitted when over the bound)
    and the reminder; a hand-off's ``transcript`` (given, else persisted and not yet delivered)
    takes the preamble's place until a turn carried it; the approval rules are the thread's
    (given, else persisted), then the instance's, then ``runtime_rules``. ``moved_from(instance, thread)`` reads the
    thread's hand-off on the instance it moves from. Registers every secret with the instance's
    masking and persists the thread's hand-off (0600) before anything starts; raises
    :class:`ValidationError` for a bad preamble or reminder, :class:`PersistenceError` when the
    file cannot be written."""
    if a.preamble is not None:
        check_preamble(a.preamble, "start_session")
    if a.preamble_reminder is not None:
        check_preamble_reminder(a.preamble_reminder, "start_session")
    config, files = slot.handoff, slot.files
    warnings: list[RuntimeWarningEvent] = []

    def warn(code: str, message: str, detail: dict[str, object]) -> None:
        warnings.append(RuntimeWarningEvent(driver=slot.driver, instance_id=a.instance, thread_id=a.thread_id,
                                            code=code, message=message, detail=detail))

    saved: ThreadHandoff | None = None
    loaded = files.load(a.thread_id)  # also when all is given: a hand-off's transcript may be pending
    if isinstance(loaded, ThreadHandoff):
        saved = loaded
    elif a.mcp_servers is not None and a.preamble is not None and a.preamble_reminder is not None:
        pass  # nothing was to be restored
    elif binding is not None and binding.instance_id == a.instance:
        # It ran here before, so it had a hand-off: whatever it held is lost; say so.
        names = [s.name for s in config.mcp_servers]
        warn("handoff.not_restored",
             f"the MCP servers and preamble this thread was started with could not be restored "
             f"({loaded}); it starts with the instance's own servers ({', '.join(names) or 'none'}) "
             "and preamble", {"reason": loaded, "servers": names, "file": str(files.path(a.thread_id))})
    elif binding is not None and a.mcp_servers is None:
        # It moves here from another instance: what it had there stays there; say so.
        before = moved_from(binding.instance_id, a.thread_id)
        if before is not None and before.mcp_servers:
            names = [s.name for s in before.mcp_servers]
            warn("handoff.not_carried",
                 f"the thread moves from instance {binding.instance_id!r}: the MCP servers it had there "
                 f"({', '.join(names)}) are not carried over; pass mcp_servers to give them here",
                 {"from_instance": binding.instance_id, "servers": names})
    given = a.mcp_servers if a.mcp_servers is not None else (saved.mcp_servers if saved is not None else ())
    servers = merge_mcp_servers(config.mcp_servers, given)
    own_preamble = a.preamble if a.preamble is not None else (saved.preamble if saved is not None else None)
    own_reminder = a.preamble_reminder if a.preamble_reminder is not None else (
        saved.preamble_reminder if saved is not None else None)
    preamble = own_preamble if own_preamble is not None else config.preamble
    reminder = own_reminder if own_reminder is not None else config.preamble_reminder
    if preamble is not None and len(preamble) > config.preamble_max_chars:
        warn("preamble.omitted",
             f"the preamble has {len(preamble)} characters, over the instance's preamble_max_chars "
             f"({config.preamble_max_chars}): it is omitted (a preamble is never cut)",
             {"chars": len(preamble), "limit": config.preamble_max_chars})
        preamble = None
    own_rules = a.approval_rules if a.approval_rules is not None else (
        saved.approval_rules if saved is not None else ())
    rules = own_rules + config.approval_rules + runtime_rules
    transcript = transcript if transcript is not None else (saved.transcript if saved is not None else None)
    after: Handed | None = None
    if transcript is not None:  # a hand-off not delivered yet: its first turn carries the transcript
        after = (servers, preamble, reminder, rules)
        preamble = transcript
    slot.add_secrets(set(mcp_secrets(servers)))
    try:
        files.save(a.thread_id, ThreadHandoff(mcp_servers=servers, preamble=own_preamble,
                                              preamble_reminder=own_reminder, transcript=transcript,
                                              approval_rules=own_rules))
    except OSError as exc:
        raise PersistenceError("save the thread's MCP servers", f"{files.path(a.thread_id)}: "
                               f"{exc.strerror or exc}", thread_id=a.thread_id) from None
    return Handing(handed=(servers, preamble, reminder, rules), after_transcript=after, warnings=tuple(warnings))
