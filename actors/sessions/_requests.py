"""The table of a session's open host requests (permission asks awaiting ``respond_to_request``).

Owned by one :class:`SessionActor` and used on its actor thread only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["PendingRequests"]

N = TypeVar("N")


class PendingRequests(Generic[N]):
    """Request ids and the driver's native handle of each open request (``N``: what the driver
    needs to answer it natively, e.g. the JSON-RPC id and the offered options).

    Ids are ``<turn id>:req<n>``, ``n`` counting up over the session's life (never reused).
    A request is taken out exactly once (:meth:`take`), which is how answer-once is enforced.
    """

    __slots__ = ("_open", "_seq", "_subjects")

    def __init__(self) -> None:
        self._open: dict[str, tuple[N, tuple[str, ...]]] = {}  # id -> (native, decisions offered)
        self._subjects: dict[str, bytes] = {}  # id -> its subject, encoded (requests that carry one)
        self._seq = 0

    def new_id(self, turn_id: str | None) -> str:
        self._seq += 1
        return f"{turn_id}:req{self._seq}"

    def add(self, request_id: str, native: N, decisions: tuple[str, ...], subject: bytes | None = None) -> None:
        """Open ``request_id``; ``decisions`` are those its ``request.opened`` offered, ``subject``
        its subject encoded (what an ``accept_for_session`` answer covers)."""
        self._open[request_id] = (native, decisions)
        if subject is not None:
            self._subjects[request_id] = subject

    def subject(self, request_id: str) -> bytes | None:
        """The encoded subject of an open request (``None``: it carries none, or is not open)."""
        return self._subjects.get(request_id)

    def offered(self, request_id: str) -> tuple[str, ...] | None:
        """The decisions the open request offered, ``None`` when it is not open."""
        entry = self._open.get(request_id)
        return entry[1] if entry is not None else None

    def take(self, request_id: str) -> N | None:
        """Remove and return the request, ``None`` when it is unknown or already resolved."""
        entry = self._open.pop(request_id, None)
        self._subjects.pop(request_id, None)
        return entry[0] if entry is not None else None

    def take_all(self) -> list[tuple[str, N]]:
        """Remove and return every open request, oldest first."""
        items = [(rid, native) for rid, (native, _) in self._open.items()]
        self._open.clear()
        self._subjects.clear()
        return items

    def take_where(self, match: Callable[[N], bool]) -> list[str]:
        """Remove the requests whose native handle matches; return their ids."""
        ids = [rid for rid, (native, _) in self._open.items() if match(native)]
        for rid in ids:
            del self._open[rid]
            self._subjects.pop(rid, None)
        return ids

    def __len__(self) -> int:
        return len(self._open)

    def __contains__(self, request_id: object) -> bool:
        return request_id in self._open
