"""The runtime's own actors, in four rooms that import one way (``execution`` <- ``events``,
``transports`` <- ``sessions``; docs/architecture.md): the dispatcher and timers, the event
pipeline (EventHub, log, grammar, redaction, subscriptions), the transports (ProcessActor, lines,
JSON-RPC, HTTP/SSE, terminals) and the session base every driver builds on."""

from . import events, execution, sessions, transports
from .events import *  # noqa: F403 - each room's __all__ is its public face
from .execution import *  # noqa: F403
from .sessions import *  # noqa: F403
from .transports import *  # noqa: F403

__all__ = sorted({*execution.__all__, *events.__all__, *transports.__all__, *sessions.__all__})
