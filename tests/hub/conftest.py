"""Fixtures and event builders for the EventHub tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from paddock.actors import EventHub, HubHandle, Subscription
from paddock.contract import (
    ContentDelta,
    EventBase,
    ItemCompleted,
    ItemStarted,
    RequestOpened,
    RequestResolved,
    TurnCompleted,
    TurnStarted,
)

_ID = {"driver": "", "instance_id": "", "thread_id": ""}


def turn_started(turn: str) -> TurnStarted:
    return TurnStarted(**_ID, turn_id=turn)


def turn_completed(turn: str, state: str = "completed") -> TurnCompleted:
    return TurnCompleted(**_ID, turn_id=turn, state=state)


def item_started(turn: str, item: str, kind: str = "assistant_message") -> ItemStarted:
    return ItemStarted(**_ID, turn_id=turn, item_id=item, kind=kind)


def item_completed(turn: str, item: str, text: str | None = None,
                   kind: str = "assistant_message") -> ItemCompleted:
    return ItemCompleted(**_ID, turn_id=turn, item_id=item, kind=kind, text=text)


def delta(turn: str | None, item: str | None, text: str, stream: str = "assistant_text") -> ContentDelta:
    return ContentDelta(**_ID, turn_id=turn, item_id=item, stream=stream, delta=text)


def request_opened(turn: str, request: str) -> RequestOpened:
    return RequestOpened(**_ID, turn_id=turn, request_id=request, kind="command")


def request_resolved(turn: str, request: str) -> RequestResolved:
    return RequestResolved(**_ID, turn_id=turn, request_id=request, resolution="answered",
                           decision="accept")


def drain(sub: Subscription) -> list[EventBase]:
    """Everything the subscription holds now (call after ``hub.flush()``)."""
    events = []
    while (event := sub.get(timeout=0)) is not None:
        events.append(event)
    return events


def tag(event: EventBase) -> str:
    return event.__struct_config__.tag  # type: ignore[attr-defined]


@pytest.fixture
def log_path(tmp_path) -> str:
    return str(tmp_path / "events.sqlite")


@pytest.fixture
def hub(log_path) -> Iterator[HubHandle]:
    handle = EventHub.start(log_path)
    try:
        yield handle
    finally:
        handle.close()
