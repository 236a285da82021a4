"""MCP servers a host hands its sessions: config shapes, merging by name, the 0600 per-thread
file, every kind of resume (reaped, crashed, a new host) and the warning when the file is lost.
What a driver receives is read from the adapter's session record (``Runtime._adapter``, the
test hook for a driver's own state); the drivers' own tests show what each passes on."""

from __future__ import annotations

import json
import os
import stat

import psutil
import pytest

from paddock import Runtime
from paddock.contract import ConfigError, McpHttpServer, McpStdioServer, ValidationError, with_preamble

from .conftest import local_history, run_turn

FS = McpStdioServer(name="fs", command="mcp-fs", args=("--root", "/srv"), env={"FS_TOKEN": "fs-secret-0123456789"})
WEB = McpHttpServer(name="web", url="http://127.0.0.1:9/mcp", headers={"Authorization": "Bearer web-secret-0123456789"})
DOCS = McpStdioServer(name="docs", command="mcp-docs")


def _handed(rt, thread_id, instance="local"):
    """What the thread's live session was started with (the driver's StartSessionInput)."""
    return rt._adapter(instance)._records[thread_id].input


def _handoff_files(state, instance="local"):
    return list((state / "instances" / instance / "paddock-threads").glob("*.json"))


def _exit_of(rt, thread_id, reason=None, timeout=15.0):
    """A context whose exit waits for the thread's session.exited (of ``reason``)."""
    sub = rt.subscribe(thread_id=thread_id, types=["session.exited"])

    class _Wait:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            with sub:
                if exc[0] is None:
                    event = sub.get(timeout=timeout)
                    assert event is not None and (reason is None or event.reason == reason), event
    return _Wait()


def test_instance_servers_in_both_toml_shapes_and_a_session_entry_wins_by_name(tmp_path, workspace):
    toml = tmp_path / "paddock.toml"
    toml.write_text(
        '[instances.a]\ndriver = "local"\n'
        '[[instances.a.mcp_servers]]\nname = "fs"\ncommand = "mcp-fs"\nargs = ["--root", "/srv"]\n'
        '[[instances.a.mcp_servers]]\nname = "web"\nurl = "http://127.0.0.1:9/sse"\ntype = "sse"\n'
        '[instances.b]\ndriver = "local"\n'
        '[instances.b.mcp_servers.fs]\ncommand = "mcp-fs"\nenv = { FS_TOKEN = "fs-secret-0123456789" }\n'
    )
    with Runtime.open(toml, state_dir=tmp_path / "state") as rt:
        rt.start_session("a1", instance="a", cwd=workspace)
        rt.start_session("a2", instance="a", cwd=workspace, mcp_servers=[DOCS, McpStdioServer(name="fs", command="other")])
        rt.start_session("b1", instance="b", cwd=workspace)
        a1, a2, b1 = (_handed(rt, t, i).mcp_servers for t, i in (("a1", "a"), ("a2", "a"), ("b1", "b")))
    assert a1 == (McpStdioServer(name="fs", command="mcp-fs", args=("--root", "/srv")),
                  McpHttpServer(name="web", url="http://127.0.0.1:9/sse", transport="sse"))
    assert [(s.name, getattr(s, "command", None)) for s in a2] == [("fs", "other"), ("web", None), ("docs", "mcp-docs")]
    assert b1 == (McpStdioServer(name="fs", command="mcp-fs", env={"FS_TOKEN": "fs-secret-0123456789"}),)


@pytest.mark.parametrize("table, issue", [
    ({"mcp_servers": [{"name": "x", "command": "a"}, {"name": "x", "command": "b"}]}, "given twice"),
    ({"mcp_servers": {"x": {"args": ["a"]}}}, "needs a command or a url"),
    ({"mcp_servers": {"bad name": {"command": "a"}}}, "must be 1-64"),
    ({"mcp_servers": {"x": {"url": "ftp://h"}}}, r"http\(s\) url"),
    ({"mcp_servers": "fs"}, "array of tables"),
    ({"preamble": "a", "preamble_file": "b"}, "set one, not both"),
    ({"preamble_file": "missing.md"}, "does not exist"),
    ({"preamble_max_chars": 0}, "integer >= 1"),
    ({"preamble_reminder": "a\nb"}, "one line"),
])
def test_a_bad_instance_hand_off_is_a_config_error(tmp_path, table, issue):
    with pytest.raises(ConfigError, match=issue) as caught:
        Runtime.open({"instances": {"x": {"driver": "local", **table}}}, state_dir=tmp_path / "state")
    assert "[instances.x]" in str(caught.value)


def test_bad_session_servers_are_refused_before_anything_starts(tmp_path, workspace):
    with Runtime.open(None, state_dir=tmp_path / "state") as rt:
        with pytest.raises(ValidationError, match="given twice"):
            rt.start_session("t1", instance="local", cwd=workspace, mcp_servers=[DOCS, DOCS])
        with pytest.raises(ValidationError, match="mcp_servers"):
            rt.start_session("t1", instance="local", cwd=workspace, mcp_servers=[{"name": "x"}])
        assert rt.list_sessions() == [] and rt.list_threads() == []


def test_the_merged_servers_live_only_in_a_0600_file_in_the_instance_home(tmp_path, workspace):
    state = tmp_path / "state"
    with Runtime.open(None, state_dir=state) as rt:
        rt.start_session("t1", instance="local", cwd=workspace, mcp_servers=[FS, WEB])
        run_turn(rt, "t1", "hello")
    [file] = _handoff_files(state)
    assert stat.S_IMODE(file.stat().st_mode) == 0o600 and stat.S_IMODE(file.parent.stat().st_mode) == 0o700
    assert [s["name"] for s in json.loads(file.read_bytes())["mcp_servers"]] == ["fs", "web"]
    for name in ("paddock.db", "events.db"):
        body = b"".join(p.read_bytes() for p in state.glob(name + "*"))
        assert b"fs-secret" not in body and b"web-secret" not in body, name


def test_a_live_session_restarts_only_when_its_hand_off_changes(tmp_path, workspace):
    with Runtime.open(None, state_dir=tmp_path / "state") as rt:
        first = rt.start_session("t1", instance="local", cwd=workspace, mcp_servers=[FS])
        assert rt.start_session("t1", instance="local", cwd=workspace) == first  # None keeps what it has
        assert rt.start_session("t1", instance="local", cwd=workspace, mcp_servers=[FS]) == first
        with _exit_of(rt, "t1", "stopped"):
            rt.start_session("t1", instance="local", cwd=workspace, mcp_servers=[DOCS])
        assert _handed(rt, "t1").mcp_servers == (DOCS,)
        with _exit_of(rt, "t1", "stopped"):
            rt.start_session("t1", instance="local", cwd=workspace, preamble="new grounding")
        assert _handed(rt, "t1").mcp_servers == (DOCS,) and _handed(rt, "t1").preamble == "new grounding"


def test_a_reaped_session_resumes_with_its_servers_and_preamble(tmp_path, workspace):
    state = tmp_path / "state"
    with Runtime.open({"runtime": {"idle_timeout": 0.3}, "instances": {"local": {"driver": "local"}}},
                      state_dir=state) as rt:
        rt.start_session("t1", instance="local", cwd=workspace, mcp_servers=[FS, WEB], preamble="P")
        with _exit_of(rt, "t1", "stopped"):  # the reaper stops it once idle
            run_turn(rt, "t1", "one")
        assert not rt.has_session("t1")
        _, events = run_turn(rt, "t1", "two")  # resumes transparently
        assert _handed(rt, "t1").mcp_servers == (FS, WEB) and events[-1].state == "completed"
    assert local_history(state) == [with_preamble("P", "one"), with_preamble("P", "two")]


def test_a_crashed_session_resumes_with_its_servers(tmp_path, workspace):
    with Runtime.open(None, state_dir=tmp_path / "state") as rt:
        rt.start_session("t1", instance="local", cwd=workspace, mcp_servers=[FS])
        with rt.subscribe(thread_id="t1", types=["session.exited"]) as exits:
            rt.send_turn("t1", "@crash")
            assert exits.get(timeout=15).recoverable
        _, events = run_turn(rt, "t1", "after", timeout=30)
        assert events[-1].state == "completed" and _handed(rt, "t1").mcp_servers == (FS,)


def test_a_new_host_resumes_with_the_same_servers_and_preamble(tmp_path, workspace):
    state = tmp_path / "state"
    with Runtime.open(None, state_dir=state) as rt:
        rt.start_session("t1", instance="local", cwd=workspace, mcp_servers=[FS, WEB], preamble="P",
                         preamble_reminder="R")
        rt.start_session("t2", instance="local", cwd=workspace, mcp_servers=[DOCS])
        run_turn(rt, "t1", "one")
    with Runtime.open(None, state_dir=state) as rt:
        run_turn(rt, "t1", "two")  # send_turn resumes a closed thread on its own
        rt.start_session("t2", instance="local", cwd=workspace)  # so does start_session without servers
        assert _handed(rt, "t1").mcp_servers == (FS, WEB) and _handed(rt, "t2").mcp_servers == (DOCS,)
        assert (_handed(rt, "t1").preamble, _handed(rt, "t1").preamble_reminder) == ("P", "R")
    assert local_history(state) == [with_preamble("P", "one"), with_preamble("P", "two")]


def test_a_lost_hand_off_file_is_a_warning_naming_what_the_session_starts_with(tmp_path, workspace):
    state = tmp_path / "state"
    config = {"instances": {"local": {"driver": "local", "mcp_servers": {"docs": {"command": "mcp-docs"}}}}}
    with Runtime.open(config, state_dir=state) as rt:
        rt.start_session("t1", instance="local", cwd=workspace, mcp_servers=[FS])
    for file in _handoff_files(state):
        file.write_text("{not json")
    with Runtime.open(config, state_dir=state) as rt:
        with rt.subscribe(thread_id="t1", types=["runtime.warning"]) as warnings:
            rt.start_session("t1", instance="local", cwd=workspace)
            warning = warnings.get(timeout=10)
        assert _handed(rt, "t1").mcp_servers == (DOCS,)
    assert warning.code == "handoff.not_restored" and "could not be restored" in warning.message
    assert warning.detail["servers"] == ["docs"] and "unreadable" in warning.detail["reason"]


def test_generate_and_handoff_dirs_are_private(tmp_path, workspace):
    state = tmp_path / "state"
    with Runtime.open(None, state_dir=state) as rt:
        rt.start_session("t1", instance="local", cwd=workspace, mcp_servers=[FS])
    folder = state / "instances" / "local" / "paddock-threads"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in folder.iterdir())


def test_a_thread_moving_to_another_instance_is_told_its_servers_stay_behind(tmp_path, workspace):
    config = {"instances": {"local": {"driver": "local"}, "other": {"driver": "local"}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        rt.start_session("t1", instance="local", cwd=workspace, mcp_servers=[FS])
        with rt.subscribe(thread_id="t1", types=["runtime.warning"]) as warnings:
            rt.start_session("t1", instance="other", cwd=workspace)
            warning = warnings.get(timeout=10)
        assert _handed(rt, "t1", "other").mcp_servers == ()
    assert warning.code == "handoff.not_carried" and warning.detail == {"from_instance": "local", "servers": ["fs"]}


def test_text_that_is_not_unicode_inside_a_server_is_refused(tmp_path, workspace):
    with Runtime.open(None, state_dir=tmp_path / "state") as rt:
        with pytest.raises(ValidationError, match="not valid text"):
            rt.start_session("t1", instance="local", cwd=workspace,
                             mcp_servers=[McpStdioServer(name="x", command="c", env={"K": "\ud800"})])
