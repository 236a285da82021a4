"""Live, against the pinned CLIs and the scripted model server: ``fork_thread`` (native where the
driver declares ``sessions.fork``, a hand-off elsewhere and across drivers) and
``compact_thread``, checked in the model server's request log.

- a native fork's first model request carries the source's history (through ``at_turn`` where
  the driver forks from a turn); a new turn on either thread does not reach the other; both
  threads resume in a fresh runtime (new agent processes);
- a hand-off's first model request carries the source's transcript once, the second does not;
- a compaction reaches the model as the agent's own compaction request, and the thread goes on.
"""

from __future__ import annotations

import json

import pytest

from paddock import Runtime
from paddock.testing import ModelServer

from tests.host.conftest import local_history

from .conftest import turn_text
from .test_host_handoff import _instance, one_agent, proxied  # noqa: F401  (fixture)

pytestmark = [pytest.mark.live, pytest.mark.timeout(300)]

_T = 120.0


def _after(server: ModelServer, start: int, marker: str):
    """The first model request from ``start`` on whose body holds ``marker``."""
    calls = server.model_calls()[start:]
    return next(json.dumps(r.body) for r in calls if marker in json.dumps(r.body))


def _open(config, state):
    return Runtime.open(config, state_dir=state)


def _turn_request(rt, server: ModelServer, thread_id: str, text: str):
    """Run a turn whose prompt ``text`` starts with a marker word; (its turn.completed, the
    body of its first model request)."""
    n = len(server.model_calls())
    _, done = turn_text(rt, thread_id, text, timeout=_T)
    return done, _after(server, n, text.split()[0])


@pytest.mark.parametrize("driver", ["codex", "opencode", "claude", "claude-acp"])
def test_a_native_fork_carries_the_history_and_the_threads_do_not_cross(driver, tmp_path, proxied):  # noqa: F811
    state = tmp_path / "state"
    with one_agent(driver, tmp_path, proxied) as (server, config, ws):
        with _open(config, state) as rt:
            rt.start_session("src", instance="agent", cwd=str(ws), runtime_mode="approval-required", timeout=_T)
            [info] = rt.instances()  # an ACP agent's flags are negotiated once its process answered
            assert info.capabilities.sessions.fork and info.capabilities.sessions.fork_kind in ("native", "from_turn")
            turn_text(rt, "src", "SRC-ONE remember OSPREY SCENARIO:text", timeout=_T)
            turn_text(rt, "src", "SRC-TWO remember KESTREL SCENARIO:text", timeout=_T)
            session = rt.fork_thread("src", "copy", timeout=_T)
            assert session.thread_id == "copy" and session.resumed
            done, first = _turn_request(rt, server, "copy", "COPY-THREE SCENARIO:text")
            assert done.state == "completed" and "OSPREY" in first and "KESTREL" in first
            _, body = _turn_request(rt, server, "src", "SRC-FOUR SCENARIO:text")
            assert "COPY-THREE" not in body
            assert {b.thread_id for b in rt.list_threads()} == {"src", "copy"}
            assert [t.user_text for t in rt.read_thread("copy").turns] == ["COPY-THREE SCENARIO:text"]
        with _open(config, state) as rt:  # a new runtime: new agent processes resume both threads
            _, body = _turn_request(rt, server, "copy", "COPY-FIVE SCENARIO:text")
            assert "OSPREY" in body and "COPY-THREE" in body and "SRC-FOUR" not in body
            _, body = _turn_request(rt, server, "src", "SRC-SIX SCENARIO:text")
            assert "SRC-FOUR" in body and "COPY-THREE" not in body and "COPY-FIVE" not in body


def test_codex_forks_from_a_past_turn(tmp_path, proxied):  # noqa: F811
    with one_agent("codex", tmp_path, proxied) as (server, config, ws):
        with _open(config, tmp_path / "state") as rt:
            assert rt.instances()[0].capabilities.sessions.fork_kind == "from_turn"
            rt.start_session("src", instance="agent", cwd=str(ws), runtime_mode="approval-required", timeout=_T)
            turn_text(rt, "src", "SRC-ONE remember OSPREY SCENARIO:text", timeout=_T)
            turn_text(rt, "src", "SRC-TWO remember KESTREL SCENARIO:text", timeout=_T)
            rt.fork_thread("src", "early", at_turn=1, timeout=_T)
            _, body = _turn_request(rt, server, "early", "EARLY SCENARIO:text")
    assert "OSPREY" in body and "KESTREL" not in body


@pytest.mark.parametrize(("source", "target"), [("claude", "codex"), ("gemini", "local")])
def test_a_handoff_across_drivers_carries_the_transcript_once(source, target, tmp_path, proxied):  # noqa: F811
    ws = tmp_path / "ws"
    ws.mkdir()
    state = tmp_path / "state"
    with ModelServer(workspace=ws, log_path=tmp_path / "model-requests.jsonl") as server:
        there = {"driver": "local"} if target == "local" else _instance(target, tmp_path / "t", server, proxied)
        config = {"instances": {"src": _instance(source, tmp_path / "s", server, proxied), "dst": there}}
        with _open(config, state) as rt:
            rt.start_session("a", instance="src", cwd=str(ws), runtime_mode="approval-required", timeout=_T)
            turn_text(rt, "a", "SRC-ONE remember OSPREY SCENARIO:text", timeout=_T)
            rt.fork_thread("a", "b", instance="dst", timeout=_T)
            n = len(server.model_calls())
            first_text, first = turn_text(rt, "b", "DST-ONE what was the word? SCENARIO:text", timeout=_T)
            second_text, second = turn_text(rt, "b", "DST-TWO again SCENARIO:text", timeout=_T)
            assert first.state == "completed" and second.state == "completed"
            assert {b.thread_id: b.instance_id for b in rt.list_threads()} == {"a": "src", "b": "dst"}
        if target == "local":
            received = local_history(state, "dst")
            assert len(received) == 2 and received[0].count("SRC-ONE remember OSPREY") == 1
            assert "DST-ONE" in received[0] and received[1] == "DST-TWO again SCENARIO:text"
            return
        first_body = _after(server, n, "DST-ONE")
        assert first_body.count("SRC-ONE remember OSPREY") == 1
        calls = server.model_calls()[n:]
        second_req = next(r for r in calls if "DST-TWO" in json.dumps(r.body))
        # The second request holds the first message in its history, and no new copy.
        assert json.dumps(second_req.body).count("SRC-ONE remember OSPREY") == 1
        assert "OSPREY" not in (second_req.prompt_text or "")



COMPACTION_MARKERS = {  # each agent's own compaction prompt, as the model server logged it
    "codex": "CONTEXT CHECKPOINT COMPACTION",
    "opencode": "Create a new anchored summary from the conversation history",
    "claude": "Your task is to create a detailed summary of the conversation so far",
}


@pytest.mark.parametrize("driver", ["codex", "opencode", "claude"])
def test_compaction_reaches_the_model_and_the_thread_goes_on(driver, tmp_path, proxied):  # noqa: F811
    with one_agent(driver, tmp_path, proxied) as (server, config, ws):
        with _open(config, tmp_path / "state") as rt:
            assert rt.instances()[0].capabilities.context.compaction
            rt.start_session("t", instance="agent", cwd=str(ws), runtime_mode="approval-required", timeout=_T)
            for word in ("OSPREY", "KESTREL", "HERON"):  # Claude Code compacts nothing shorter
                turn_text(rt, "t", f"remember {word} SCENARIO:text", timeout=_T)
            n = len(server.model_calls())
            with rt.subscribe(thread_id="t") as sub:
                result = rt.compact_thread("t", timeout=_T)
                seen = []
                while True:
                    event = sub.get(timeout=_T)
                    assert event is not None, [e.type for e in seen]
                    seen.append(event)
                    if result is not None and event.type == "turn.completed" and event.turn_id == result.turn_id:
                        break
                    if result is None and event.type in ("item.completed", "thread.state.changed"):
                        break
            compaction = server.model_calls()[n:]
            assert compaction, "no model request for the compaction"
            items = [e for e in seen if e.type == "item.completed"]
            assert items, [e.type for e in seen]  # the compaction shows as an item
            asked = [r.prompt_text or json.dumps(r.body) for r in compaction]
            assert any(COMPACTION_MARKERS[driver] in text for text in asked), asked[0][:2000]
            text, done = turn_text(rt, "t", "TWO go on SCENARIO:text", timeout=_T)
            assert done.state == "completed" and text == "Hello from mock"


@pytest.mark.parametrize("driver", ["codex", "opencode", "claude"])
def test_rollback_does_what_the_capability_says(driver, tmp_path, proxied):  # noqa: F811
    from paddock.contract import CapabilityUnsupportedError

    with one_agent(driver, tmp_path, proxied) as (server, config, ws):
        with _open(config, tmp_path / "state") as rt:
            declared = rt.instances()[0].capabilities.threads.rollback
            rt.start_session("t", instance="agent", cwd=str(ws), runtime_mode="approval-required", timeout=_T)
            turn_text(rt, "t", "KEEP-ONE SCENARIO:text", timeout=_T)
            turn_text(rt, "t", "DROP-TWO SCENARIO:text", timeout=_T)
            if declared:
                snapshot = rt.rollback_thread("t", 1, timeout=_T)
                assert [t.user_text for t in snapshot.turns] == ["KEEP-ONE SCENARIO:text"]
            else:
                n = len(server.model_calls())
                with pytest.raises(CapabilityUnsupportedError) as err:
                    rt.rollback_thread("t", 1, timeout=_T)
                assert err.value.capability == "threads.rollback" and len(server.model_calls()) == n
            done, body = _turn_request(rt, server, "t", "AFTER SCENARIO:text")
    assert done.state == "completed" and "KEEP-ONE" in body
    assert ("DROP-TWO" in body) is not declared  # dropped where declared, kept where refused
    assert declared is (driver == "codex")


@pytest.mark.parametrize("driver", ["gemini", "qwen", "claude-acp", "copilot", "codex-acp"])
def test_every_acp_flavor_forks_as_its_flags_say(driver, tmp_path, proxied):  # noqa: F811
    with one_agent(driver, tmp_path, proxied) as (server, config, ws):
        with _open(config, tmp_path / "state") as rt:
            rt.start_session("src", instance="agent", cwd=str(ws), runtime_mode="full-access", timeout=_T)
            turn_text(rt, "src", "SRC-ONE remember OSPREY SCENARIO:text", timeout=_T)
            caps = rt.instances()[0].capabilities.sessions
            session = rt.fork_thread("src", "copy", timeout=_T)
            done, body = _turn_request(rt, server, "copy", "COPY-TWO SCENARIO:text")
    assert done.state == "completed" and "OSPREY" in body
    assert caps.fork == (caps.fork_kind == "native")
    # Native: the agent resumed its own copy. Hand-off: the transcript rode the first prompt.
    assert session.resumed is caps.fork
    assert ("This conversation continues thread" in body) is not caps.fork


@pytest.mark.parametrize("driver", ["claude", "opencode"])
def test_at_turn_where_the_agent_forks_whole_sessions_is_a_handoff(driver, tmp_path, proxied):  # noqa: F811
    with one_agent(driver, tmp_path, proxied) as (server, config, ws):
        with _open(config, tmp_path / "state") as rt:
            rt.start_session("src", instance="agent", cwd=str(ws), runtime_mode="approval-required", timeout=_T)
            turn_text(rt, "src", "SRC-ONE remember OSPREY SCENARIO:text", timeout=_T)
            turn_text(rt, "src", "SRC-TWO remember KESTREL SCENARIO:text", timeout=_T)
            assert rt.instances()[0].capabilities.sessions.fork_kind == "native"
            session = rt.fork_thread("src", "early", at_turn=1, timeout=_T)
            _, body = _turn_request(rt, server, "early", "EARLY SCENARIO:text")
    assert not session.resumed  # a fresh session, handed the transcript of turn 1 only
    assert "This conversation continues thread" in body and "OSPREY" in body and "KESTREL" not in body


def test_the_cli_compaction_waits_for_the_agent_and_says_so(tmp_path, proxied):  # noqa: F811
    from paddock.cli._threadops import compact, fork

    with one_agent("codex", tmp_path, proxied) as (server, config, ws):
        with _open(config, tmp_path / "state") as rt:
            rt.start_session("t", instance="agent", cwd=str(ws), runtime_mode="approval-required", timeout=_T)
            turn_text(rt, "t", "remember OSPREY SCENARIO:text", timeout=_T)
            assert compact(rt, "t", timeout=_T) == (True, "thread t compacted")
            _, said = fork(rt, "t", "copy", at_turn=1, timeout=_T)
            assert said == "thread copy forked from t through turn 1 on instance agent (codex): the agent copied its session"
