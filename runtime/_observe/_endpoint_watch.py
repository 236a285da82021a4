"""The dead-endpoint check: a running turn on an instance with a model ``endpoint`` whose agent
has gone quiet (or reports only retries) gets its endpoint checked by the runtime itself, a TCP
connection as ``paddock doctor`` makes; when the endpoint has taken no connection for the
instance's ``endpoint_timeout`` seconds, the turn is failed with one ``runtime.error``
(``endpoint.unreachable``) naming the endpoint and the reason (docs/architecture.md, "A dead
model endpoint"). Agents retry a refused endpoint for minutes, or for good; Paddock knows the
endpoint, so the bound is its own and the same for every driver.

:class:`EndpointWatch` is driven by the stall watchdog's reader thread (:mod:`._watchdog`):
:meth:`EndpointWatch.check` runs there, never on an actor. The failing call itself runs on a
short daemon thread of its own (it asks the session actor, bounded by its timeout).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["ENDPOINT_UNREACHABLE", "EndpointWatch", "FailTurn"]

ENDPOINT_UNREACHABLE = "endpoint.unreachable"
"""The ``runtime.error`` code of a turn failed because its model endpoint takes no connection."""

QUIET = 1.0
"""Seconds without progress (an event other than a warning or error) after which a turn's
endpoint is checked."""
_PROBE_EVERY = 1.0  # seconds between two checks of one endpoint
_PROBE_TIMEOUT = 1.0

FailTurn = Callable[[str, str, str, dict[str, object]], None]
"""``fail(thread_id, turn_id, message, detail)``: end the turn failed (thread: its own)."""
Probe = Callable[[str, float], str | None]
"""``probe(url, timeout)``: why the endpoint takes no TCP connection, or ``None``
(``paddock._instances._probes.tcp_unreachable``)."""


class _Endpoint:
    __slots__ = ("url", "probed", "dead_since", "reason")

    def __init__(self, url: str) -> None:
        self.url = url
        self.probed = -1e9
        self.dead_since: float | None = None
        self.reason = ""


class EndpointWatch:
    """Per model endpoint: when it was last checked and since when it has been dead.
    ``endpoint_of(instance_id)`` is ``(url, endpoint_timeout)`` for an instance whose endpoint
    the runtime can check from here, else ``None``; ``probe`` checks one. Used on one thread
    (the watchdog's)."""

    def __init__(self, endpoint_of: Callable[[str], tuple[str, float] | None], probe: Probe, fail: FailTurn,
                 *, clock: Callable[[], float] = time.monotonic) -> None:
        self._endpoint_of = endpoint_of
        self._probe = probe
        self._fail = fail
        self._clock = clock
        self._endpoints: dict[str, _Endpoint] = {}

    def watches(self, instance_id: str) -> bool:
        return self._endpoint_of(instance_id) is not None

    def check(self, thread_id: str, instance_id: str, turn_id: str, progress: float) -> bool:
        """Check the endpoint of a turn whose last progress was at ``progress`` (clock time);
        returns ``True`` when it failed the turn (the caller then stops watching it)."""
        now = self._clock()
        if now - progress < QUIET:
            return False
        found = self._endpoint_of(instance_id)
        if found is None:
            return False
        url, limit = found
        ep = self._endpoints.get(url)
        if ep is None:
            ep = self._endpoints[url] = _Endpoint(url)
        if now - ep.probed >= _PROBE_EVERY:
            if now - ep.probed > 2 * _PROBE_EVERY + _PROBE_TIMEOUT:
                ep.dead_since = None  # not watched meanwhile: it may have been back
            ep.probed = now
            why = self._probe(url, _PROBE_TIMEOUT)
            now = self._clock()
            if why is None:
                ep.dead_since = None
            else:
                ep.reason = why
                if ep.dead_since is None:
                    ep.dead_since = now
        if ep.dead_since is None or now - ep.dead_since < limit:
            return False
        message = (f"the model endpoint {url} has taken no connection for {limit:g} s (endpoint_timeout): "
                   f"{ep.reason}; the turn failed")
        detail: dict[str, object] = {"endpoint": url, "reason": ep.reason, "endpoint_timeout": limit}
        threading.Thread(target=self._fail, args=(thread_id, turn_id, message, detail), daemon=True,
                         name="paddock-endpoint-fail").start()
        return True
