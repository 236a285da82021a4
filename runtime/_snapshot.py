"""Build a :class:`ThreadSnapshot` from a thread's canonical events."""

from __future__ import annotations

from collections.abc import Iterable

from paddock.contract import EventBase, ItemSnapshot, ThreadSnapshot, TurnSnapshot

__all__ = ["snapshot_from_events"]


def snapshot_from_events(thread_id: str, events: Iterable[EventBase]) -> ThreadSnapshot:
    """Turns in order, each with its user text, final state and completed items.

    Items that never completed are reported with the text streamed so far and their last status.
    """
    turns: dict[str, dict] = {}
    for e in events:
        t = e.type  # type: ignore[attr-defined]
        turn_id = e.turn_id
        if turn_id is None:
            continue
        turn = turns.get(turn_id)
        if turn is None:
            turn = turns[turn_id] = {"state": "running", "user_text": None, "items": {}, "text": {}}
        if t == "turn.started":
            turn["user_text"] = e.input_text  # type: ignore[attr-defined]
        elif t == "turn.completed":
            turn["state"] = e.state  # type: ignore[attr-defined]
        elif t == "content.delta" and e.item_id:
            turn["text"].setdefault(e.item_id, []).append(e.delta)  # type: ignore[attr-defined]
        elif t in ("item.started", "item.updated", "item.completed") and e.item_id:
            prev = turn["items"].get(e.item_id, {})
            turn["items"][e.item_id] = {
                "kind": e.kind,  # type: ignore[attr-defined]
                "status": getattr(e, "status", None) or prev.get("status", "in_progress"),
                "title": getattr(e, "title", None) or prev.get("title"),
                "text": getattr(e, "text", None) if t == "item.completed" else prev.get("text"),
            }
    out = []
    for turn_id, turn in turns.items():
        items = []
        for item_id, item in turn["items"].items():
            text = item["text"]
            if text is None and item_id in turn["text"]:
                text = "".join(turn["text"][item_id])
            items.append(
                ItemSnapshot(item_id=item_id, kind=item["kind"], status=item["status"], title=item["title"], text=text)
            )
        out.append(TurnSnapshot(turn_id=turn_id, state=turn["state"], user_text=turn["user_text"], items=tuple(items)))
    return ThreadSnapshot(thread_id=thread_id, turns=tuple(out))
