"""The first-turn preamble's wire form: how the session base puts a host's grounding text (and
its one-line reminder) before the user's text. See docs/architecture.md, "Preamble".

The first turn of each live session incarnation carries::

    <paddock-preamble>
    {preamble}
    </paddock-preamble>

    {user text}

and every later turn, when the host gave a reminder::

    <paddock-reminder>{reminder}</paddock-reminder>

    {user text}

The block is a prefix of the user's message, never the agent's system prompt. Agents that read
directives from a prompt (the local agent) skip both blocks.
"""

from __future__ import annotations

from ._errors import ValidationError

__all__ = [
    "DEFAULT_PREAMBLE_MAX_CHARS",
    "PREAMBLE_CLOSE",
    "PREAMBLE_OPEN",
    "REMINDER_CLOSE",
    "REMINDER_OPEN",
    "check_preamble",
    "check_preamble_reminder",
    "with_preamble",
    "with_reminder",
]

PREAMBLE_OPEN = "<paddock-preamble>"
PREAMBLE_CLOSE = "</paddock-preamble>"
REMINDER_OPEN = "<paddock-reminder>"
REMINDER_CLOSE = "</paddock-reminder>"
DEFAULT_PREAMBLE_MAX_CHARS = 70_000
"""A longer preamble is omitted (with a ``runtime.warning``), never cut mid-text."""


def with_preamble(preamble: str, text: str) -> str:
    """``text`` with the preamble block before it."""
    return f"{PREAMBLE_OPEN}\n{preamble}\n{PREAMBLE_CLOSE}\n\n{text}"


def with_reminder(reminder: str, text: str) -> str:
    """``text`` with the one-line reminder block before it."""
    return f"{REMINDER_OPEN}{reminder}{REMINDER_CLOSE}\n\n{text}"


def check_preamble(preamble: str, operation: str) -> None:
    """Refuse a preamble that is blank or holds the closing tag (it would end the block early,
    and the rest would be read as the user's text). Raises :class:`ValidationError`."""
    if not preamble.strip():
        raise ValidationError(operation, "the preamble is blank; leave it out instead")
    if PREAMBLE_CLOSE in preamble:
        raise ValidationError(operation, f"the preamble must not contain {PREAMBLE_CLOSE!r}")


def check_preamble_reminder(reminder: str, operation: str) -> None:
    """Refuse a reminder that is blank, longer than one line, or holds the closing tag."""
    if not reminder.strip():
        raise ValidationError(operation, "the preamble reminder is blank; leave it out instead")
    if "\n" in reminder or "\r" in reminder:
        raise ValidationError(operation, "the preamble reminder is one line (it has a line break)")
    if REMINDER_CLOSE in reminder:
        raise ValidationError(operation, f"the preamble reminder must not contain {REMINDER_CLOSE!r}")
