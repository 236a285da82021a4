"""The hub masks secrets before the guard, the log and subscribers see an event."""

from __future__ import annotations

from paddock.actors import EventHub
from paddock.contract import ContentDelta, SessionExited

from .conftest import item_completed, item_started, turn_completed, turn_started

SECRET = "s3cr3t-value-0123456789"


def delta(text: str) -> ContentDelta:
    return ContentDelta(driver="", instance_id="", thread_id="", turn_id="t1", item_id="i1",
                        stream="assistant_text", delta=text)


def test_secrets_are_masked_also_when_split_across_the_deltas_of_a_batch(tmp_path):
    hub = EventHub.start(str(tmp_path / "events.db"))
    try:
        hub.add_secrets("inst", [SECRET, "short"])
        sub = hub.subscribe()
        em = hub.emitter("local", "inst", "th")
        other = hub.emitter("local", "other", "th2")
        text = f"key is {SECRET}; also sk-abcdefghijklmnop and short"
        pieces = [text[i:i + 3] for i in range(0, len(text), 3)]
        em.emit([turn_started("t1"), item_started("t1", "i1"), *map(delta, pieces), item_completed("t1", "i1", text),
                 turn_completed("t1")])
        em.emit([SessionExited(driver="", instance_id="", thread_id="", reason=f"exit: {SECRET}",
                               stderr_tail=f"error: invalid api key {SECRET}\n")])
        other.emit([SessionExited(driver="", instance_id="", thread_id="", reason=f"not this instance's: {SECRET}")])
        hub.flush()
        events = [sub.get(timeout=5) for _ in range(len(pieces) + 6)]
        streamed = "".join(e.delta for e in events if e.type == "content.delta")
        assert streamed == "key is [redacted]; also [redacted] and short"
        done = next(e for e in events if e.type == "item.completed")
        assert done.text == streamed  # rule 5 still holds on the masked stream
        assert not any(e.code.startswith("grammar.") for e in events if e.type == "runtime.warning")
        exited = [e for e in events if e.type == "session.exited"]
        assert exited[0].reason == "exit: [redacted]" and SECRET not in exited[0].stderr_tail
        assert exited[1].reason.endswith(SECRET)  # secrets are per instance
    finally:
        hub.close()


def test_a_hubs_secrets_are_masked_in_paddock_log_records_until_it_closes(tmp_path, caplog):
    import logging

    from paddock.actors.events import LOG_MASK

    caplog.set_level(logging.DEBUG, logger="paddock")
    hub = EventHub.start(str(tmp_path / "events.db"))
    try:
        hub.add_secrets("inst", [SECRET])
        assert SECRET in LOG_MASK.secrets
        child = logging.getLogger("paddock.supervisors")
        child.warning("child %r failed: %r", "agent", RuntimeError(f"invalid api key {SECRET}"))
        try:
            raise RuntimeError(f"token {SECRET} refused, also sk-abcdefghijklmnop")
        except RuntimeError:
            child.exception("start failed")
        logging.getLogger("paddock").info("stack", stack_info=True, extra={"x": SECRET})
    finally:
        hub.close()
    assert SECRET not in LOG_MASK.secrets
    assert SECRET not in caplog.text and "sk-abcdefghijklmnop" not in caplog.text
    assert "invalid api key [redacted]" in caplog.text and "token [redacted] refused" in caplog.text
    assert "Traceback" in caplog.text  # the traceback is kept, masked
