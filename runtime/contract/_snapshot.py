"""The one fold of a thread's canonical events into a :class:`ThreadSnapshot`.

Used by ``Runtime.read_thread`` (over the event log) and by every live session actor (over the
batches it emits), so the two views of a thread never disagree.

Rules:
- a turn appears at its first event (``turn.started`` normally; ``user_text`` is its input);
  until its ``turn.completed`` its state is ``running``; events of a turn after its
  ``turn.completed`` are ignored (the grammar forbids them; the hub reports them);
- an item appears at its first ``item.*`` event, in first-seen order; its kind and status are
  the latest reported (``in_progress`` until one says otherwise), its title the latest non-empty
  one;
- an incomplete item (no ``item.completed`` yet: the turn is running, or the log ends early)
  keeps its last status and carries the text streamed so far (its ``content.delta``\\ s), or
  ``None`` when nothing streamed; ``item.completed`` sets its final text (a completion without
  text keeps what streamed);
- the live fold keeps an item's text (streamed or completed) as one buffer, never one object per
  delta, and only its first :data:`LIVE_ITEM_CHARS` characters: a session's view of a thread
  stays bounded however long an item grows (:func:`fold_thread` keeps every character).

Pure: no I/O, no threads; a :class:`ThreadFold` belongs to one thread of control.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._adapter import ItemSnapshot, ThreadSnapshot, TurnSnapshot
from ._events import (
    ContentDelta,
    EventBase,
    ItemCompleted,
    ItemKind,
    ItemStarted,
    ItemStatus,
    ItemUpdated,
    ThreadRolledBack,
    TurnCompleted,
    TurnStarted,
)

__all__ = ["LIVE_ITEM_CHARS", "ThreadFold", "fold_thread"]

LIVE_ITEM_CHARS = 65_536
"""How much of an item's text the live fold (:class:`ThreadFold`, each session's view) keeps:
its first 65,536 characters. The event log is the record of the whole text, which
:func:`fold_thread` (``Runtime.read_thread``) rebuilds."""

_ITEM_EVENTS = (ItemStarted, ItemUpdated, ItemCompleted)


class _Item:
    """One item of an open turn. Its streamed text is one growing buffer, fed once per batch
    with the batch's deltas joined (``fresh`` holds them meanwhile), never one object per delta:
    ``parts``, whose lengths fall by more than half from each part to the next (at most
    log2(length) parts; each character is copied O(log) times). With a ``limit`` it keeps only
    the text's first ``limit`` characters. (An ``io.StringIO`` would hold 4 bytes per
    character.)"""

    __slots__ = ("kind", "status", "title", "text", "parts", "chars", "fresh", "limit")

    def __init__(self, kind: ItemKind, limit: int | None) -> None:
        self.kind = kind
        self.status: ItemStatus = "in_progress"
        self.title: str | None = None
        self.text: str | None = None  # the completed text
        self.parts: list[str] = []  # streamed so far
        self.chars = 0
        self.fresh: list[str] = []  # this batch's deltas, not yet in ``parts``
        self.limit = limit

    def take(self) -> None:
        """Move this batch's deltas into the buffer."""
        fresh, self.fresh = self.fresh, []
        if self.text is not None:
            return
        text = "".join(fresh)
        if self.limit is not None:
            text = text[:max(0, self.limit - self.chars)]
        parts = self.parts
        if not text and parts:
            return
        parts.append(text)
        self.chars += len(text)
        while len(parts) > 1 and len(parts[-2]) <= 2 * len(parts[-1]):
            last = parts.pop()
            parts[-1] += last

    def complete(self, text: str) -> None:
        self.text = text if self.limit is None else text[:self.limit]
        self.parts, self.chars, self.fresh = [], 0, []  # the completed text is what shows

    def snapshot(self, item_id: str) -> ItemSnapshot:
        text = self.text
        if text is None and self.parts:
            text = "".join(self.parts)
        return ItemSnapshot(item_id=item_id, kind=self.kind, status=self.status, title=self.title, text=text)


class _Turn:
    __slots__ = ("turn_id", "user_text", "items")

    def __init__(self, turn_id: str, user_text: str | None) -> None:
        self.turn_id = turn_id
        self.user_text = user_text
        self.items: dict[str, _Item] = {}

    def snapshot(self, state: Any) -> TurnSnapshot:
        items = tuple(item.snapshot(item_id) for item_id, item in self.items.items())
        return TurnSnapshot(turn_id=self.turn_id, state=state, user_text=self.user_text, items=items)


class ThreadFold:
    """The incremental form of :func:`fold_thread`: feed it events with :meth:`add`, read the
    thread with :meth:`snapshot`. Keeps at most ``max_turns`` completed turns (the oldest go
    first); completed turns are frozen once, so a snapshot costs only the open turns' items.

    Open turns are normally one; a log that holds a turn which never completed (the runtime
    died mid-turn) keeps it ``running`` in place. Each item keeps the first ``max_item_chars``
    characters of its text (``None``: all of it).
    """

    def __init__(self, thread_id: str, *, turns: Iterable[TurnSnapshot] = (), max_turns: int | None = None,
                 max_item_chars: int | None = LIVE_ITEM_CHARS) -> None:
        self.thread_id = thread_id
        self.max_turns = max_turns
        self.max_item_chars = max_item_chars
        # In order: a frozen TurnSnapshot for a completed turn, an open _Turn otherwise.
        self._turns: list[TurnSnapshot | _Turn] = list(turns)
        self._open: dict[str, _Turn] = {}
        self._done: set[str] = {t.turn_id for t in self._turns if isinstance(t, TurnSnapshot)}
        for index, t in enumerate(self._turns):
            if isinstance(t, TurnSnapshot) and t.state == "running":  # a snapshot taken mid-turn
                self._turns[index] = self._reopen(t)

    def _reopen(self, t: TurnSnapshot) -> _Turn:
        turn = _Turn(t.turn_id, t.user_text)
        for i in t.items:
            item = turn.items[i.item_id] = _Item(i.kind, self.max_item_chars)
            item.status, item.title = i.status, i.title
            if i.text is not None:
                item.fresh.append(i.text)
                item.take()
        self._done.discard(t.turn_id)
        self._open[t.turn_id] = turn
        return turn

    def add(self, events: Iterable[EventBase]) -> bool:
        """Fold ``events`` in order; ``True`` when the snapshot changed."""
        changed = False
        last: _Item | None = None
        touched: list[_Item] = []
        ev: Any  # dispatched on its exact class below
        for ev in events:
            turn_id = ev.turn_id
            if turn_id is None:
                if type(ev) is ThreadRolledBack:
                    changed = self._drop(ev.turn_ids) or changed
                continue
            if turn_id in self._done:
                continue
            cls = type(ev)
            turn = self._open.get(turn_id)
            if cls is ContentDelta:
                if turn is not None and ev.item_id:
                    item = turn.items.get(ev.item_id)
                    if item is not None:
                        item.fresh.append(ev.delta)
                        changed = True
                        if item is not last:
                            touched.append(item)
                            last = item
                continue
            if turn is None:
                turn = self._open[turn_id] = _Turn(turn_id, None)
                self._turns.append(turn)
            changed = True
            if cls is TurnStarted:
                turn.user_text = ev.input_text
            elif cls is TurnCompleted:
                del self._open[turn_id]
                self._done.add(turn_id)
                self._turns[self._turns.index(turn)] = turn.snapshot(ev.state)
                self._trim()
            elif cls in _ITEM_EVENTS and ev.item_id:
                item = turn.items.get(ev.item_id)
                if item is None:
                    item = turn.items[ev.item_id] = _Item(ev.kind, self.max_item_chars)
                item.kind = ev.kind
                if ev.status is not None:
                    item.status = ev.status
                if ev.title:
                    item.title = ev.title
                if cls is ItemCompleted and ev.text is not None:
                    item.complete(ev.text)
        for item in touched:
            if item.fresh:
                item.take()
        return changed

    def _trim(self) -> None:
        if self.max_turns is None:
            return
        excess = sum(1 for t in self._turns if isinstance(t, TurnSnapshot)) - self.max_turns
        while excess > 0:
            for index, t in enumerate(self._turns):
                if isinstance(t, TurnSnapshot):
                    del self._turns[index]
                    self._done.discard(t.turn_id)
                    excess -= 1
                    break

    def _drop(self, turn_ids: Iterable[str]) -> bool:
        """Forget the turns ``turn_ids`` (a logged rollback); ``True`` when one was known."""
        gone = set(turn_ids)
        before = len(self._turns)
        self._turns = [t for t in self._turns if t.turn_id not in gone]
        for turn_id in gone:
            self._open.pop(turn_id, None)
        return len(self._turns) != before

    def drop_last(self, num_turns: int) -> None:
        """Forget the last ``num_turns`` completed turns (a rollback)."""
        for _ in range(max(0, num_turns)):
            for index in range(len(self._turns) - 1, -1, -1):
                t = self._turns[index]
                if isinstance(t, TurnSnapshot):
                    del self._turns[index]
                    break

    def snapshot(self) -> ThreadSnapshot:
        turns = tuple(t if isinstance(t, TurnSnapshot) else t.snapshot("running") for t in self._turns)
        return ThreadSnapshot(thread_id=self.thread_id, turns=turns)


def fold_thread(thread_id: str, events: Iterable[EventBase]) -> ThreadSnapshot:
    """The thread's turns in order, each with its user text, state and items (module rules)."""
    fold = ThreadFold(thread_id, max_item_chars=None)
    fold.add(events)
    return fold.snapshot()
