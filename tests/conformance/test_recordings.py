"""The conformance suite through recordings: cursor, grok and kiro (CLIs that cannot be installed
here) replay their transcripts (``tests/replay/test_replay_only_flavors.py``) through their own
flavor drivers; their reports are byte-identical across two runs. And breaking an adapter on
purpose, by removing one frame of a recorded transcript, fails with the rule's code and events."""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

import msgspec
import pytest

from paddock import Runtime, __version__
from paddock.contract import check_grammar
from paddock.testing import collect_turn
from paddock.testing._conformance import SCENARIOS, Case, DriverReport, encode_report, report_digest
from tests.replay.test_replay_only_flavors import AGENTS, MODEL, _launcher, build_transcript

from .table import save

pytestmark = pytest.mark.timeout(120)

_CODEX_RECORDINGS = Path(__file__).resolve().parents[1] / "recordings" / "codex" / "driver"
_STEPS = {  # scenario -> what the recording holds of it
    "01-simple-turn": "a text turn",
    "03a-approval-file-edit": "a write the host accepts (the recording holds no decline)",
    "05-interrupt": "a cancel 50 ms after the prompt",
}


def _drain(sub) -> list:
    out = []
    while (event := sub.get(timeout=0.3)) is not None:
        out.append(event)
    return out


def _turn(rt, text: str, on_event=None) -> list:
    """A turn of thread ``t``; ``on_event`` sees ``(None, turn)`` once it is accepted, then every event."""
    return collect_turn(rt, "t", text, timeout=20,
                        on_sent=None if on_event is None else (lambda turn: on_event(None, turn)), on_event=on_event)


def replay_report(kind: str, root: Path) -> DriverReport:
    """Run ``kind``'s recording as the suite's scenarios 01, 03a and 05 and build its report
    (every other scenario ``n/a``: not in the recording)."""
    frames = build_transcript(kind)
    root.mkdir(parents=True)
    transcript = root / f"{kind}.jsonl"
    transcript.write_text("".join(json.dumps(f, separators=(",", ":")) + "\n" for f in frames))
    corpus = f"replay-only/{kind}@" + hashlib.blake2b(transcript.read_bytes(), digest_size=8).hexdigest()
    workspace = root / "workspace"
    workspace.mkdir()
    replay = [sys.executable, "-m", "paddock.testing.replay", str(transcript), "--workspace", str(workspace),
              "--verdict", str(root / "verdict.txt")]
    binary, args = (str(_launcher(root)), replay) if kind == "grok" else (sys.executable, replay[1:])
    config = {"instances": {"agent": {"driver": kind, "binary": binary, "args": args}}}
    results: dict[str, Case] = {}
    with Runtime.open(config, state_dir=root / "state") as rt:
        [info] = rt.instances()
        caps = info.capabilities
        with rt.subscribe() as all_events:
            rt.start_session("t", instance="agent", cwd=str(workspace), runtime_mode="approval-required", timeout=20,
                             model=MODEL if kind == "kiro" else None)

            def accept(event, turn):
                if event is not None and event.type == "request.opened":
                    rt.respond_to_request("t", event.request_id, "accept")

            def cancel(event, turn):
                if event is None:
                    time.sleep(0.05)  # the recorded scenario: a cancel 50 ms after the prompt
                    rt.interrupt_turn("t", turn.turn_id)

            checks = {
                "01-simple-turn": ("say hi", None, lambda evs: evs[-1].state == "completed" and "".join(
                    e.delta for e in evs if e.type == "content.delta") == "Hello from replay"),
                "03a-approval-file-edit": ("write notes", accept, lambda evs: evs[-1].state == "completed" and [
                    e.kind for e in evs if e.type == "request.opened"] == ["file_change"] and [
                    e.decision for e in evs if e.type == "request.resolved"] == ["accept"]),
                "05-interrupt": ("write a long story", cancel, lambda evs: evs[-1].state == "interrupted"),
            }
            for sid, (text, on_event, ok) in checks.items():
                events = _turn(rt, text, on_event)
                results[sid] = Case(scenario=sid, result="pass" if ok(events) else "fail",
                                    reason=_STEPS[sid] if ok(events) else f"{_STEPS[sid]}: ended {events[-1].state}")
            rt.stop_session("t")
            seen = _drain(all_events)
    violations = check_grammar(seen)
    status = (root / "verdict.txt").read_text().partition("\n")[0]
    cases = []
    for sid in SCENARIOS:
        case = results.get(sid) or Case(scenario=sid, result="n/a", reason=f"not in the {kind} recording")
        if sid in results and (violations or status != "0"):
            case = Case(scenario=sid, result="fail", violations=tuple(sorted({v.code for v in violations})),
                        reason=f"replay verdict {status}" if status != "0" else violations[0].message)
        cases.append(case)
    return DriverReport(driver=kind, flavor=kind, cli_version="replay", paddock_version=__version__, corpus=corpus,
                        capabilities=msgspec.to_builtins(caps), cases=tuple(cases))


@pytest.mark.parametrize("kind", sorted(AGENTS))
def test_replay_only_flavor_conforms_and_its_report_is_reproducible(kind, tmp_path):
    t0 = time.monotonic()
    once = replay_report(kind, tmp_path / "one")
    first = encode_report(once)
    print(f"\nconformance {kind} (replay): {time.monotonic() - t0:.1f} s")
    save(kind, once, time.monotonic() - t0)
    second = encode_report(replay_report(kind, tmp_path / "two"))
    assert first == second
    assert report_digest(first) == report_digest(second)
    report = msgspec.json.decode(first, type=DriverReport)
    assert [(c.scenario, c.result) for c in report.cases if c.result != "n/a"] == [
        ("01-simple-turn", "pass"), ("03a-approval-file-edit", "pass"), ("05-interrupt", "pass")]
    assert all(c.reason for c in report.cases)
    assert str(tmp_path) not in first.decode()  # no path, no time: only what the recording fixes


def _codex_replay_events(tmp_path: Path, lines: list[str]) -> list:
    """Every event a real hub published while the codex driver ran the recording's text turn
    against the replayer playing ``lines`` (a hub of its own: its guard repairs what breaks)."""
    from paddock.actors import EventHub
    from tests.codex.conftest import Harness

    class _NoServer:
        url = "http://127.0.0.1:9"  # the replayer answers for the app-server; no model is called

    (tmp_path / "workspace").mkdir(parents=True)
    path = tmp_path / "text.jsonl"
    path.write_text("\n".join(lines) + "\n")
    hub = EventHub.start(str(tmp_path / "events.sqlite"))
    sub = hub.subscribe()
    h = Harness(tmp_path, hub, _NoServer(), binary=sys.executable,
                args=["-m", "paddock.testing.replay", str(path), "--workspace", str(tmp_path / "workspace")])
    try:
        h.start()
        h.turn("say hi SCENARIO:text")
    finally:
        h.close()
        hub.flush()
        seen = _drain(sub)
        hub.close()
    return seen


def test_a_recording_with_one_frame_removed_fails_with_the_rule_code_and_events(tmp_path):
    lines = (_CODEX_RECORDINGS / "text.jsonl").read_text().splitlines()
    assert check_grammar(_codex_replay_events(tmp_path / "intact", lines)) == []
    deltas = [i for i, line in enumerate(lines) if '"item/agentMessage/delta"' in line]
    assert len(deltas) >= 2
    broken = lines[: deltas[1]] + lines[deltas[1] + 1:]  # one streamed chunk lost
    violations = check_grammar(_codex_replay_events(tmp_path / "broken", broken))
    assert {v.code for v in violations} == {"grammar.item_text_mismatch"}, violations
    # The hub's own repair warning, and the stream's completed text against its deltas.
    carried = [ev for v in violations for ev in v.events]
    assert any(ev.type == "runtime.warning" and ev.code == "grammar.item_text_mismatch" for ev in carried)
    assert any(ev.type == "item.completed" for ev in carried) and any(ev.type == "content.delta" for ev in carried)
