"""Issue 25, faults round three: secrets in the host's Python log and the agents' own files,
private files, a turn the log shows open under any binding status, a read-only state dir.
Real runtimes and real agents, through the public API."""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import time

import pytest

from paddock import Runtime
from paddock.contract import ConfigError, PaddockError, PersistenceError
from paddock._state._store import BindingStore
from tests.runtime.conftest import run_turn, text_of

KEY = "sk-ant-api03-" + "Zq9" * 12  # the configured key, of the Anthropic shape
PLAIN_KEY = "cfg-plain-key-0123456789"  # a configured key of no known shape


def _leaky_cli(tmp_path, at_start):
    """A stand-in CLI that prints its key on stderr and fails, as many real ones do: at start, or
    (wrapping the local agent) when the agent exits."""
    script = tmp_path / f"leaky-{at_start}"
    run_agent = "" if at_start else f'{sys.executable} "$@"\n'
    script.write_text(f"#!/bin/sh\n{run_agent}echo \"error: invalid api key $PADDOCK_MODEL_API_KEY\" >&2\nexit 1\n")
    script.chmod(0o755)
    return script


def test_no_paddock_log_record_holds_a_configured_secret(tmp_path, caplog):
    caplog.set_level(logging.DEBUG, logger="paddock")
    config = {"instances": {
        "agent": {"driver": "local", "binary": str(_leaky_cli(tmp_path, False)), "api_key": KEY},
        "plain": {"driver": "local", "binary": str(_leaky_cli(tmp_path, False)), "api_key": PLAIN_KEY},
        "at-start": {"driver": "local", "binary": str(_leaky_cli(tmp_path, True)), "api_key": KEY},
    }}
    with Runtime.open(config, state_dir=tmp_path / "s") as rt:
        for instance in ("agent", "plain"):
            rt.start_session(instance, instance=instance, cwd=tmp_path)
            with rt.subscribe(thread_id=instance, types=["session.exited"]) as exits:
                rt.send_turn(instance, "@crash 3")
                assert exits.get(timeout=20) is not None
        with pytest.raises(PaddockError):
            rt.start_session("at-start", instance="at-start", cwd=tmp_path, timeout=20)
    text = caplog.text
    failed = [r.getMessage() for r in caplog.records if r.name == "paddock.supervisors" and "failed" in r.getMessage()]
    assert any("invalid api key" in m for m in failed), failed  # the supervisor's warning of the issue
    for secret in (KEY, PLAIN_KEY):
        assert secret not in text, f"the Python log holds {secret!r}:\n{text}"
    assert "invalid api key [redacted]" in text


def _files_holding(root, secrets):
    found = []
    for folder, _dirs, files in os.walk(root):
        for name in files:
            body = open(os.path.join(folder, name), "rb").read()
            found += [(os.path.join(folder, name), s) for s in secrets if s.encode() in body]
    return found


def test_the_local_agents_session_file_holds_no_secret(tmp_path):
    config = {"instances": {"agent": {"driver": "local", "api_key": PLAIN_KEY, "env": {"MY_SERVICE_TOKEN": "tok-0123456789"}}}}
    state = tmp_path / "s"
    with Runtime.open(config, state_dir=state) as rt:
        rt.start_session("t1", instance="agent", cwd=tmp_path)
        _, events = run_turn(rt, "t1", "@env PADDOCK_MODEL_API_KEY")
        assert text_of(events) == "[redacted]"
        run_turn(rt, "t1", "@env MY_SERVICE_TOKEN")
        run_turn(rt, "t1", f"@reply here: {KEY} and {PLAIN_KEY}")
    sessions = state / "instances" / "agent" / "local-agent" / "sessions"
    assert list(sessions.iterdir()), "the agent should keep a session file"
    assert _files_holding(state, [KEY, PLAIN_KEY, "tok-0123456789"]) == []
    with Runtime.open(config, state_dir=state) as rt:  # the masked history still loads
        _, events = run_turn(rt, "t1", "@reply-history")
        assert text_of(events) == "history: 3"


def test_agents_write_private_files_under_the_instance_home(tmp_path):
    config = {"instances": {"agent": {"driver": "local"}}}
    state = tmp_path / "s"
    old = os.umask(0o022)  # a host with the common loose umask
    try:
        with Runtime.open(config, state_dir=state) as rt:
            rt.start_session("t1", instance="agent", cwd=tmp_path, runtime_mode="full-access")
            _, events = run_turn(rt, "t1", '@run mkdir -p "$HOME/work/sub" && echo hi > "$HOME/work/sub/out.txt" && echo done')
            assert "done" in "".join(e.delta for e in events if e.type == "content.delta")
    finally:
        os.umask(old)
    home = state / "instances" / "agent"
    modes = {}
    for folder, dirs, files in os.walk(home):
        for name in dirs + files:
            path = os.path.join(folder, name)
            modes[os.path.relpath(path, home)] = oct(os.stat(path).st_mode & 0o777)
    assert "work/sub/out.txt" in modes and "local-agent/sessions" in modes, modes
    loose = {name: mode for name, mode in modes.items()
             if mode != ("0o700" if os.path.isdir(home / name) else "0o600")}
    assert loose == {}, f"group- or world-accessible under the instance home: {loose}"


def test_a_turn_the_log_shows_open_ends_at_the_next_open_whatever_the_binding_says(tmp_path):
    from tests.runtime.conftest import TWO_LOCAL

    state = tmp_path / "state"
    rt = Runtime.open(TWO_LOCAL, state_dir=state)
    try:
        rt.start_session("t1", instance="local-a", cwd=tmp_path)
        with rt.subscribe(thread_id="t1", types=["content.delta"]) as sub:
            rt.send_turn("t1", "@chunks 400\n@delay 0.05\n@reply streaming")
            assert sub.get(timeout=20) is not None  # turn.started is in the log
        rt._hub.kill_writer_mid_batch()  # the disk fails: nothing of the turn's end is logged
        assert rt._hub.join(timeout=20) and rt._hub.failure  # the next append failed; the hub stopped
    finally:
        rt.close()
    [binding] = [b for b in BindingStore(state / "paddock.db").list() if b.thread_id == "t1"]
    assert binding.status == "closed"  # close() marked it, yet the log shows its turn open
    for _ in range(2):  # and it stays ended across reopens
        with Runtime.open(TWO_LOCAL, state_dir=state) as rt:
            assert rt.read_thread("t1").turns[0].state == "failed"
            with rt.subscribe(thread_id="t1", types=["turn.completed"], from_seq=1) as sub:
                ends = list(iter(lambda: sub.get(timeout=0.5), None))
            assert ends[0].state == "failed" and "never logged" in ends[0].error
            _, events = run_turn(rt, "t1", "@reply resumed")  # the thread resumes on demand
            assert text_of(events) == "resumed"


@contextlib.contextmanager
def _read_only_dir(tmp_path):
    """A folder that becomes read-only on demand: a small tmpfs remounted ``ro`` (root, which
    ignores permission bits), else a 0500 folder."""
    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() != 0:
        yield folder, lambda: os.chmod(folder, 0o500)
        os.chmod(folder, 0o700)
        return
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(folder)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield folder, lambda: subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
    finally:
        subprocess.run(["umount", str(folder)], capture_output=True)


def test_a_read_only_state_dir_is_refused_at_open_with_a_typed_error(tmp_path):
    with _read_only_dir(tmp_path) as (folder, make_read_only):
        state = folder / "state"
        with Runtime.open({"instances": {"a": {"driver": "local"}}}, state_dir=state) as rt:
            rt.start_session("t1", instance="a", cwd=tmp_path)
            run_turn(rt, "t1", "@reply before")
        make_read_only()
        for target in (state, folder / "new"):
            with pytest.raises((PersistenceError, ConfigError)) as caught:
                Runtime.open({"instances": {"a": {"driver": "local"}}}, state_dir=target)
            assert str(target) in str(caught.value), caught.value


def _wait_for(sub, predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        event = sub.get(timeout=max(0.05, deadline - time.monotonic()))
        if event is None:
            continue
        seen.append(event)
        if predicate(event):
            return seen
    raise AssertionError(f"not seen within {timeout} s; got {[e.type for e in seen]}")


ONE_LOCAL = {"instances": {"local": {"driver": "local"}}}


def _crash_mid_turn(rt, workspace):
    """Thread t1 on ``local`` has one turn, then its agent exits mid-turn; returns once the session
    actor is back with the restarted agent."""
    rt.start_session("t1", instance="local", cwd=str(workspace))
    run_turn(rt, "t1", "@reply before")
    with rt.subscribe(thread_id="t1") as sub:
        rt.send_turn("t1", "@reply boom\n@crash 3")
        _wait_for(sub, lambda e: e.type == "session.exited")
        _wait_for(sub, lambda e: e.type == "session.state.changed" and e.state == "ready")


def test_a_crash_is_one_session_exited_also_after_close(tmp_path, workspace):
    state = tmp_path / "state"
    with Runtime.open(ONE_LOCAL, state_dir=state) as rt:
        _crash_mid_turn(rt, workspace)
    with Runtime.open(ONE_LOCAL, state_dir=state) as rt:
        with rt.subscribe(thread_id="t1", from_seq=0) as sub:
            events = []
            while (event := sub.get(timeout=1.0)) is not None:
                events.append(event)
    exits = [e for e in events if e.type == "session.exited"]
    assert len(exits) == 1, [(e.reason, e.recoverable) for e in exits]
    assert exits[0].recoverable is True and exits[0].exit_code == 3


def test_the_first_send_turn_after_a_crash_that_cannot_reload_starts_fresh_in_one_call(tmp_path, workspace):
    state = tmp_path / "state"
    with Runtime.open(ONE_LOCAL, state_dir=state) as rt:
        _crash_mid_turn(rt, workspace)
        # The agent's own record of the session is gone: the new process cannot session/load it.
        histories = list((state / "instances").rglob("sessions/*.jsonl"))
        assert histories, "the local agent keeps its sessions under the instance home"
        for path in histories:
            path.unlink()
        turn, events = run_turn(rt, "t1", "@reply-history")
        assert text_of(events) == "history: 0"
        started = [e for e in events if e.type == "session.started"]
        assert len(started) == 1 and not started[0].resumed
        assert any(e.type == "runtime.warning" for e in events)
        exits = [e for e in events if e.type == "session.exited"]
        assert exits == [], [(e.reason, e.recoverable) for e in exits]


def test_the_start_lock_table_holds_only_starts_under_way(tmp_path, workspace):
    with Runtime.open(ONE_LOCAL, state_dir=tmp_path / "state") as rt:
        for n in range(5):
            rt.start_session(f"t{n}", instance="local", cwd=str(workspace))
        rt.stop_session("t0")
        rt.start_session("t0", instance="local", cwd=str(workspace))
        adapter = rt._instances.adapter("local")
        assert len(rt.list_sessions()) == 5 and adapter._start_locks == {}
