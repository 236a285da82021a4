"""``generate_text`` on the local agent: the text, no tool approved, typed failures, and nothing
left behind (no binding, no listed session, no process, no workspace)."""

from __future__ import annotations

import asyncio
import threading

import psutil
import pytest

from paddock import Runtime
from paddock.aio import AsyncRuntime
from paddock.contract import DriverError, InstanceNotFoundError, OperationTimeout, ValidationError

from .conftest import run_turn


def _processes() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def _nothing_left(rt, state, before: set[int]) -> None:
    assert rt.list_sessions() == [] and rt.list_threads() == []
    assert _processes() <= before
    # One-shot sessions run in the instance's own home (a confined agent may not see the state dir).
    assert [f for d in (state / "instances").glob("*/generate") for f in d.iterdir()] == []


def test_generate_text_on_an_idle_instance_returns_the_text_and_leaves_nothing(tmp_path):
    state = tmp_path / "state"
    before = _processes()
    with Runtime.open(None, state_dir=state) as rt:
        assert rt.generate_text("local", "@reply Fix the parser's off-by-one") == "Fix the parser's off-by-one"
        _nothing_left(rt, state, before)
        assert rt.generate_text("local", "name this thread") == "You said: name this thread"
        _nothing_left(rt, state, before)


def test_generate_text_on_a_running_instance_uses_its_process_and_stays_unlisted(tmp_path, workspace):
    state = tmp_path / "state"
    with Runtime.open(None, state_dir=state) as rt:
        rt.start_session("t1", instance="local", cwd=workspace)
        run_turn(rt, "t1", "hello")
        before = _processes()
        seen: list[list[str]] = []
        done = threading.Event()

        def watch() -> None:
            while not done.is_set():
                seen.append([s.thread_id for s in rt.list_sessions()])
                done.wait(0.01)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            text = rt.generate_text("local", "@delay 0.3\n@chunks 3\n@reply a summary")
        finally:
            done.set()
            watcher.join()
        assert text == "a summary"
        assert _processes() == before  # the instance's agent served it; nothing new remains
        assert seen and all(ids == ["t1"] for ids in seen)
        assert [b.thread_id for b in rt.list_threads()] == ["t1"]


def test_no_tool_is_approved(tmp_path, workspace):
    target = workspace / "written.txt"
    with Runtime.open(None, state_dir=tmp_path / "state") as rt:
        with rt.subscribe(types=["request.resolved"]) as resolved:
            text = rt.generate_text("local", f"@write {target} nope\n@run touch {workspace}/ran\n@reply done")
            decisions = [resolved.get(timeout=5).decision for _ in range(2)]
    assert text == "done" and decisions == ["decline", "decline"]
    assert not target.exists() and not (workspace / "ran").exists()


def test_failures_are_typed_and_leave_nothing(tmp_path):
    state = tmp_path / "state"
    before = _processes()
    with Runtime.open(None, state_dir=state) as rt:
        with pytest.raises(InstanceNotFoundError):
            rt.generate_text("nope", "hi")
        with pytest.raises(ValidationError, match="empty"):
            rt.generate_text("local", "   ")
        with pytest.raises(OperationTimeout):
            rt.generate_text("local", "@delay 10\n@reply late", timeout=1.0)
        _nothing_left(rt, state, before)
        with pytest.raises(DriverError, match="failed"):
            rt.generate_text("local", "@crash")
        _nothing_left(rt, state, before)


def test_generate_text_from_asyncio(tmp_path):
    async def main() -> str:
        async with await AsyncRuntime.open(None, state_dir=tmp_path / "state") as rt:
            return await rt.generate_text("local", "@reply from asyncio")

    assert asyncio.run(main()) == "from asyncio"
