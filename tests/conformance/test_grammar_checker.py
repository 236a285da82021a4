"""The grammar checker (``paddock.contract.check_grammar``) against hostile transcripts: each breaks
one rule and is caught with that rule's code, carrying the offending events; the same transcripts
emitted through a real EventHub are repaired by the hub and still reported with the same code."""

from __future__ import annotations

import msgspec
import pytest

from paddock.actors import EventHub
from paddock.contract import GRAMMAR_RULES, EventBase, check_grammar

from .hostile import HOSTILE, HOSTILE_TURN_BYTES, HUB_CODES, stamp


def _codes(events: list[EventBase]) -> list[str]:
    return [v.code for v in check_grammar(events, turn_bytes=HOSTILE_TURN_BYTES)]


def test_every_code_has_a_hostile_transcript():
    assert set(HOSTILE) | {"grammar.seq_not_increasing"} == set(GRAMMAR_RULES)


@pytest.mark.parametrize("code", sorted(HOSTILE))
def test_hostile_transcript_is_caught_with_its_code(code):
    events = stamp(HOSTILE[code]())
    violations = check_grammar(events, turn_bytes=HOSTILE_TURN_BYTES)
    assert {v.code for v in violations} == {code}, [(v.code, v.message) for v in violations]
    for violation in violations:
        assert violation.rule == GRAMMAR_RULES[code]
        assert violation.events and all(any(e is ev for ev in events) for e in violation.events)
        assert violation.thread_id in ("t1", "")


def test_seq_not_increasing_carries_both_events():
    events = stamp([[*HOSTILE["grammar.duplicate_turn_completed"]()[0][:2]]])
    swapped = [events[0], msgspec.structs.replace(events[1], seq=events[0].seq)]
    (violation,) = check_grammar(swapped)
    assert violation.code == "grammar.seq_not_increasing"
    assert violation.events == (swapped[1], swapped[0])


def test_a_clean_transcript_has_no_violation():
    batches = HOSTILE["grammar.item_text_mismatch"]()
    clean = [ev for ev in batches[0] if not (ev.type == "item.completed")]
    assert check_grammar(stamp([clean])) == []


def test_an_unfinished_transcript_may_leave_its_turn_open():
    started = stamp([HOSTILE["grammar.turn_not_completed"]()[0]])
    assert check_grammar(started, finished=False) == []
    assert [v.code for v in check_grammar(started)] == ["grammar.turn_not_completed"]


@pytest.fixture
def through_hub(tmp_path):
    """Emit batches as thread t1 through a real EventHub; return what a subscriber saw."""
    hub = EventHub.start(str(tmp_path / "events.sqlite"))
    sub = hub.subscribe(thread_id="t1")
    emitter = hub.emitter("local", "hostile", "t1")

    def feed(batches):
        for batch in batches:
            emitter.emit(list(batch))
        hub.flush()
        got = []
        while (event := sub.get(timeout=0)) is not None:
            got.append(event)
        return got

    yield feed
    hub.close()


@pytest.mark.parametrize("code", sorted(HUB_CODES | {"grammar.event_after_interrupt", "grammar.unstable_id",
                                                     "grammar.turn_too_large"}))
def test_the_hub_repairs_and_the_checker_still_reports(through_hub, code):
    seen = through_hub(HOSTILE[code]())
    violations = check_grammar(seen, turn_bytes=HOSTILE_TURN_BYTES)
    assert code in {v.code for v in violations}, [(v.code, v.message) for v in violations]
    if code in HUB_CODES:  # reported from the hub's own warning, the break itself is repaired
        assert any(ev.type == "runtime.warning" and ev.code == code for v in violations for ev in v.events)


def test_a_queued_turn_starts_or_ends_once_and_is_queued_only_first():
    from paddock.contract import SessionExited, TurnCompleted, TurnQueued, TurnStarted

    who = {"driver": "local", "instance_id": "i", "thread_id": "t", "turn_id": "q1"}
    queued = TurnQueued(**who, position=1)
    assert check_grammar(stamp([[queued, TurnStarted(**who), TurnCompleted(**who, state="completed")]])) == []
    assert check_grammar(stamp([[queued, TurnCompleted(**who, state="interrupted")]])) == []
    assert [v.code for v in check_grammar(stamp([[queued]]))] == ["grammar.turn_not_completed"]
    late = stamp([[TurnStarted(**who), queued, TurnCompleted(**who, state="completed")]])
    assert [v.code for v in check_grammar(late)] == ["grammar.out_of_order"]
    # A queued turn belongs to no session yet: one exiting meanwhile leaves it to start later.
    exited = SessionExited(**{k: v for k, v in who.items() if k != "turn_id"}, reason="idle")
    assert check_grammar(stamp([[queued, exited, TurnStarted(**who), TurnCompleted(**who, state="completed")]])) == []
