"""Identifier types shared by every layer.

They are plain ``str`` at run time (``typing.NewType``), so they cost nothing on the hot path and
encode as JSON strings.
"""

from __future__ import annotations

from typing import NewType

__all__ = ["DriverKind", "InstanceId", "ItemId", "RequestId", "ThreadId", "TurnId"]

ThreadId = NewType("ThreadId", str)
"""The host's conversation id. At most one live session per thread."""
TurnId = NewType("TurnId", str)
"""One user message and the work it triggers, unique within the runtime."""
ItemId = NewType("ItemId", str)
"""One unit of work inside a turn: a message, reasoning, a command, a file change, a tool call."""
RequestId = NewType("RequestId", str)
"""A question from the agent to the host (approval or structured user input)."""
InstanceId = NewType("InstanceId", str)
"""One configured copy of a driver (``codex-work``)."""
DriverKind = NewType("DriverKind", str)
"""The kind of agent code (``codex``, ``claude``, ``acp``, ``opencode``, ``local``)."""
