"""Issue 13, hardening: one owner per state dir, private state, text validation, turns a host
crash left open, close() under one deadline. Real hosts, real agents, the real CLI."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from paddock import Runtime, StateReader
from paddock.contract import ConfigError, StateDirLockedError, ValidationError
from tests.runtime.conftest import TWO_LOCAL, run_turn, text_of
from tests.runtime.test_host_and_cli import PADDOCK, ROOT, _env, host_process

OWNER = textwrap.dedent(
    """
    import sys, time
    from paddock import Runtime
    from tests.runtime.conftest import TWO_LOCAL, run_turn
    rt = Runtime.open(TWO_LOCAL, state_dir=sys.argv[1])
    rt.start_session("t1", instance="local-a", cwd=sys.argv[2])
    run_turn(rt, "t1", "@reply owned")
    print("ready", flush=True)
    time.sleep(888)
    """
)


def _log_rows(state):
    reader = StateReader(state)
    with reader.subscribe(from_seq=1) as follower:
        seen = []
        while (event := follower.get(timeout=0.5)) is not None:
            seen.append(event.seq)
    return seen


# fault 1 ------------------------------------------------------------------------------------------


def test_a_second_owner_is_refused_at_open_and_readers_keep_working(tmp_path):
    state = tmp_path / "state"
    with host_process(OWNER, tmp_path, b"ready") as (host, _agents):
        before = _log_rows(state)
        with pytest.raises(StateDirLockedError) as caught:
            Runtime.open(TWO_LOCAL, state_dir=state)
        err = caught.value
        assert err.owner_pid == host.pid and err.state_dir == str(state)
        assert str(state) in str(err) and str(host.pid) in str(err)
        assert _log_rows(state) == before, "the refused opener wrote to the log"
        # The CLI: a second `paddock run` gets the message and exit code 1, no traceback.
        out = subprocess.run(PADDOCK + ["run", "--state-dir", str(state), "--cwd", str(tmp_path), "@reply no"],
                             cwd=ROOT, capture_output=True, timeout=60, env=_env())
        assert out.returncode == 1 and b"Traceback" not in out.stderr
        assert f"owned by process {host.pid}".encode() in out.stderr
        # Readers need no lock: `paddock events`, read_thread and subscribe(from_seq) elsewhere.
        out = subprocess.run(PADDOCK + ["events", "--state-dir", str(state), "--json"],
                             cwd=ROOT, capture_output=True, timeout=30, env=_env())
        assert out.returncode == 0, out.stderr.decode()
        assert "owned" in "".join(json.loads(line).get("delta", "") for line in out.stdout.splitlines())
        reader = StateReader(state)
        snapshot = reader.read_thread("t1")
        assert [t.state for t in snapshot.turns] == ["completed"]
        with reader.subscribe(thread_id="t1", types=["turn.completed"], from_seq=1) as follower:
            assert follower.get(timeout=5).type == "turn.completed"
        host.kill()
        host.wait(10)
    # The kernel dropped the dead owner's lock: the next open succeeds.
    with Runtime.open(TWO_LOCAL, state_dir=state) as rt:
        _, events = run_turn(rt, "t1", "@reply-history")
        assert "1" in text_of(events)


def test_two_runtimes_in_one_process_cannot_share_a_state_dir(tmp_path):
    with Runtime.open(TWO_LOCAL, state_dir=tmp_path / "s") as rt:
        with pytest.raises(StateDirLockedError) as caught:
            Runtime.open(TWO_LOCAL, state_dir=tmp_path / "s")
        assert caught.value.owner_pid == os.getpid()
        rt.start_session("t1", instance="local-a", cwd=tmp_path)
        run_turn(rt, "t1", "@reply still the owner")
    with Runtime.open(TWO_LOCAL, state_dir=tmp_path / "s"):  # close() released it
        pass


# fault 2 ------------------------------------------------------------------------------------------

MODES = textwrap.dedent(
    """
    import json, os, stat, sys
    os.umask(0)
    from paddock import Runtime
    from tests.runtime.conftest import TWO_LOCAL, run_turn
    state = sys.argv[1]
    names = ["", "leases", "instances/local-a", "instances/local-a/tmp", "paddock.db", "events.db",
             "paddock.db-wal", "paddock.db-shm", "events.db-wal", "events.db-shm", "lock"]
    with Runtime.open(TWO_LOCAL, state_dir=state) as rt:
        rt.start_session("t1", instance="local-a", cwd=sys.argv[2])
        run_turn(rt, "t1", "@reply private")
        modes = {n: oct(stat.S_IMODE(os.stat(os.path.join(state, n)).st_mode)) for n in names
                 if os.path.exists(os.path.join(state, n))}
        leases = [oct(stat.S_IMODE(os.stat(os.path.join(state, "leases", n)).st_mode))
                  for n in os.listdir(os.path.join(state, "leases"))]
    print(json.dumps({"modes": modes, "leases": leases}), flush=True)
    """
)


def _modes_of(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    out = subprocess.run([sys.executable, "-c", MODES, str(tmp_path / "state"), str(ws)],
                         cwd=ROOT, capture_output=True, timeout=60, env=_env())
    assert out.returncode == 0, out.stderr.decode()
    return json.loads(out.stdout)


def test_state_is_private_whatever_the_umask(tmp_path):
    found = _modes_of(tmp_path)
    modes = found["modes"]
    for name in ("paddock.db-wal", "events.db-wal", "events.db-shm"):
        assert name in modes, f"{name} should exist while the runtime is open"
    dirs = {"", "leases", "instances/local-a", "instances/local-a/tmp"}
    assert {n: m for n, m in modes.items() if n in dirs} == {n: "0o700" for n in dirs}
    assert {n: m for n, m in modes.items() if n not in dirs} == {n: "0o600" for n in modes if n not in dirs}
    assert found["leases"] and set(found["leases"]) == {"0o600"}


def test_an_existing_loose_state_dir_is_tightened_on_open(tmp_path):
    state = tmp_path / "state"
    with Runtime.open(TWO_LOCAL, state_dir=state) as rt:
        rt.start_session("t1", instance="local-a", cwd=tmp_path)
        run_turn(rt, "t1", "@reply x")
    loose = [state, state / "leases", state / "instances", state / "instances" / "local-a"]
    for path in loose:
        os.chmod(path, 0o755)
    for path in (state / "paddock.db", state / "events.db"):
        os.chmod(path, 0o644)
    with Runtime.open(TWO_LOCAL, state_dir=state):
        for path in loose:
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o700, path
        for path in (state / "paddock.db", state / "events.db"):
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path


# fault 4 ------------------------------------------------------------------------------------------


def test_invalid_text_is_a_validation_error_and_the_thread_keeps_working(rt, workspace):
    with pytest.raises(ValidationError):
        rt.start_session("\ud800", instance="local-a", cwd=workspace)
    with pytest.raises(ValidationError):
        rt.start_session("t1", instance="local-a", cwd=workspace, model="m\ud800")
    rt.start_session("t1", instance="local-a", cwd=workspace)
    for bad in (lambda: rt.send_turn("t1", "hi \ud800"), lambda: rt.send_turn("t1", "hi", model="\udfff"),
                lambda: rt.send_turn("t\ud800", "hi"), lambda: rt.read_thread("t\ud800"),
                lambda: rt.interrupt_turn("t1", "\ud800"), lambda: rt.subscribe(thread_id="\ud800")):
        with pytest.raises(ValidationError):
            bad()
    _, events = run_turn(rt, "t1", "@reply after the bad input")
    assert text_of(events) == "after the bad input"


def test_a_config_file_that_is_not_utf8_is_a_config_error(tmp_path):
    config = tmp_path / "paddock.toml"
    config.write_bytes(b'[instances.a]\ndriver = "local"\n# caf\xe9 \xff\n')
    with pytest.raises(ConfigError) as caught:
        Runtime.open(config, state_dir=tmp_path / "s")
    assert "UTF-8" in str(caught.value)
    out = subprocess.run(PADDOCK + ["doctor", "--config", str(config), "--state-dir", str(tmp_path / "s")],
                         cwd=ROOT, capture_output=True, timeout=30, env=_env())
    assert out.returncode == 2 and b"Traceback" not in out.stderr
    assert b"not UTF-8" in out.stderr and str(config).encode() in out.stderr


def test_the_cli_prints_a_config_error_and_exits_2(tmp_path):
    config = tmp_path / "paddock.toml"
    config.write_text('[instances.a]\ndriver = "local"\nbogus = 1\n')
    out = subprocess.run(PADDOCK + ["run", "--config", str(config), "--state-dir", str(tmp_path / "s"),
                                    "--instance", "a", "--cwd", str(tmp_path), "@reply hi"],
                         cwd=ROOT, capture_output=True, timeout=30, env=_env())
    assert out.returncode == 2, out.stderr.decode()
    assert b"Traceback" not in out.stderr and b"bogus" in out.stderr


# fault 5 ------------------------------------------------------------------------------------------

MID_TURN = textwrap.dedent(
    """
    import sys, time
    from paddock import Runtime
    from tests.runtime.conftest import TWO_LOCAL
    rt = Runtime.open(TWO_LOCAL, state_dir=sys.argv[1])
    rt.start_session("t1", instance="local-a", cwd=sys.argv[2])
    rt.start_session("t2", instance="local-b", cwd=sys.argv[2], runtime_mode="approval-required")
    with rt.subscribe(types=["content.delta", "request.opened"]) as sub:
        rt.send_turn("t1", "@chunks 100\\n@delay 0.5\\n@reply streaming")
        rt.send_turn("t2", "@run echo never")
        seen = set()
        while len(seen) < 2:
            seen.add(sub.get(timeout=20).thread_id)
    rt._hub.flush()
    print("ready", flush=True)
    time.sleep(888)
    """
)


def test_turns_a_killed_host_left_open_end_failed_on_the_next_open(tmp_path):
    state = tmp_path / "state"
    with host_process(MID_TURN, tmp_path, b"ready") as (host, _agents):
        host.kill()
        host.wait(10)
    with Runtime.open(TWO_LOCAL, state_dir=state) as rt:
        for thread_id in ("t1", "t2"):
            snapshot = rt.read_thread(thread_id)
            assert [t.state for t in snapshot.turns] == ["failed"], thread_id
        with rt.subscribe(from_seq=1) as sub:
            events = []
            while (event := sub.get(timeout=1.0)) is not None:
                events.append(event)
        ends = [e for e in events if e.type == "turn.completed"]
        assert sorted(e.thread_id for e in ends) == ["t1", "t2"]
        assert all(e.state == "failed" and "host stopped" in e.error for e in ends)
        opened = [e for e in events if e.type == "request.opened"]
        resolved = [e for e in events if e.type == "request.resolved"]
        assert len(opened) == 1 and [(e.request_id, e.resolution) for e in resolved] == [(opened[0].request_id, "expired")]
        # request.resolved comes before its turn's end (rule 3, then rule 1)
        t2 = [e.type for e in events if e.thread_id == "t2" and e.type in ("request.resolved", "turn.completed")]
        assert t2 == ["request.resolved", "turn.completed"]
        _, after = run_turn(rt, "t1", "@reply resumed")  # the thread resumes on demand
        assert text_of(after) == "resumed"
    with Runtime.open(TWO_LOCAL, state_dir=state) as rt:  # an orderly close leaves nothing to end
        with rt.subscribe(types=["turn.completed"], from_seq=1) as sub:
            assert len([e for e in iter(lambda: sub.get(timeout=0.5), None)]) == 3


# fault 7 ------------------------------------------------------------------------------------------


@pytest.mark.timeout(180)
def test_close_keeps_its_timeout_for_many_instances_with_stubborn_grandchildren(tmp_path):
    count = 10
    config = {"instances": {f"i{n}": {"driver": "local"} for n in range(count)}}
    rt = Runtime.open(config, state_dir=tmp_path / "s")
    grandchildren = []
    try:
        for n in range(count):
            rt.start_session(f"t{n}", instance=f"i{n}", cwd=tmp_path)
            _, events = run_turn(rt, f"t{n}", "@spawn 120")
            grandchildren.append(psutil.Process(int(text_of(events).split()[-1])))
    except BaseException:
        rt.close()
        raise
    started = time.monotonic()
    rt.close(timeout=2.0)
    took = time.monotonic() - started
    gone, alive = psutil.wait_procs(grandchildren, timeout=0.5)
    assert not alive, f"grandchildren survived close(): {alive}"
    assert took <= 3.0, f"close(timeout=2) took {took:.1f} s for {count} instances"


# fault 6 ------------------------------------------------------------------------------------------

TREE = f"{sys.executable} {ROOT / 'tests' / 'helpers' / 'tree.py'} root daemon"


def _start_tree(rt, thread_id, cwd):
    """Run tests/helpers/tree.py under the agent; return {role: pid} once all five are up."""
    rt.start_session(thread_id, instance="local-a", cwd=cwd)
    roles: dict[str, int] = {}
    with rt.subscribe(thread_id=thread_id, types=["content.delta"]) as sub:
        rt.send_turn(thread_id, f"@run {TREE}")
        text = ""
        while len(roles) < 5:
            event = sub.get(timeout=20)
            assert event is not None, f"the tree did not come up: {text!r}"
            if event.stream == "command_output":
                text += event.delta
                roles = {d["role"]: d["pid"] for d in map(json.loads, text.splitlines()[: text.count("\n")])}
    return roles


def _wait_reported(state, host_pid, shim_pid, pids, timeout=10.0):
    """Wait until the shim's tree file lists every pid of ``pids`` (it reports within 1 s)."""
    tree = state / "leases" / f"{host_pid}-{shim_pid}.tree"
    deadline = time.monotonic() + timeout
    while True:
        try:
            listed = {int(line.split()[0]) for line in tree.read_text().splitlines()}
        except (OSError, ValueError):
            listed = set()
        if set(pids) <= listed:
            return
        assert time.monotonic() < deadline, f"the shim never reported {sorted(set(pids) - listed)}"
        time.sleep(0.05)


def _shim_of(host_pid):
    shims = [p for p in psutil.Process(host_pid).children() if "_shim.py" in " ".join(p.cmdline())]
    assert len(shims) == 1, shims
    return shims[0]


def test_a_killed_shim_leaves_no_adopted_process_behind(rt, workspace):
    roles = _start_tree(rt, "t1", workspace)
    procs = [psutil.Process(pid) for pid in roles.values()]
    shim = _shim_of(os.getpid())
    _wait_reported(rt.state_dir, os.getpid(), shim.pid, roles.values())
    shim.kill()
    gone, alive = psutil.wait_procs(procs, timeout=5.0)
    assert not alive, f"processes the shim adopted outlived it: {[(p.pid, p.cmdline()[-2:]) for p in alive]}"
    rt.close()


STOPPED_HOST = textwrap.dedent(
    """
    import json, os, sys, time
    from paddock import Runtime
    from tests.runtime.conftest import TWO_LOCAL
    from pathlib import Path
    from tests.runtime.test_hardening import _shim_of, _start_tree, _wait_reported
    rt = Runtime.open(TWO_LOCAL, state_dir=sys.argv[1])
    roles = _start_tree(rt, "t1", sys.argv[2])
    _wait_reported(Path(sys.argv[1]), os.getpid(), _shim_of(os.getpid()).pid, roles.values())
    print(json.dumps(roles), flush=True)
    time.sleep(888)
    """
)


def _state(pid, tid):
    try:
        with open(f"/proc/{pid}/task/{tid}/stat") as f:
            stat = f.read()
    except OSError:
        return "T"  # a thread that is gone cannot act either
    return stat[stat.rfind(")") + 2]


def test_the_sweep_finds_what_a_killed_shim_adopted_after_its_host_died(tmp_path):
    with host_process(STOPPED_HOST, tmp_path, b"}") as (host, _agents):
        shim = _shim_of(host.pid)
        host.send_signal(19)  # SIGSTOP: the host can neither notice nor reap
        deadline = time.monotonic() + 5
        while not all(_state(host.pid, tid) in ("T", "t") for tid in os.listdir(f"/proc/{host.pid}/task")):
            assert time.monotonic() < deadline, "the host did not stop"
            time.sleep(0.01)
        shim.kill()
        deadline = time.monotonic() + 5
        while True:  # dead: a zombie of the stopped host, which cannot reap it
            try:
                if shim.status() == psutil.STATUS_ZOMBIE:
                    break
            except psutil.NoSuchProcess:
                break
            assert time.monotonic() < deadline, "the shim did not die"
            time.sleep(0.01)
        host.kill()
        host.wait(10)
        # Re-parented to this test process (a subreaper, tests/conftest.py), so found among ours.
        survivors = []
        for proc in psutil.Process().children(recursive=True):
            try:
                if "tree.py" in " ".join(proc.cmdline()):
                    survivors.append(proc)
            except psutil.Error:  # a zombie, or gone
                pass
        assert survivors, ("the setup should leave the adopted processes running",
                           [(p.pid, p.status(), p.name()) for p in psutil.Process().children(recursive=True)])
        with Runtime.open(TWO_LOCAL, state_dir=tmp_path / "state"):
            gone, alive = psutil.wait_procs(survivors, timeout=3.0)
            assert not alive, f"the sweep left {[p.pid for p in alive]}"


# fault 3 ------------------------------------------------------------------------------------------

SECRETS = {
    "OPENAI_API_KEY": "sk-proj-live0123456789abcdefXYZ",  # an auth variable (and an sk- shape)
    "MY_SERVICE_PASSWORD": "hunter2-but-longer",  # a configured env value of no known shape
}
PASSED = "passed-through-value-42"  # an ambient value the instance names in pass_env
CONFIGURED_KEY = "cfgkey-0123456789-abcdef"  # the instance's configured api_key
SHAPES = ["ghp_" + "a1B2c3D4" * 5, "AIza" + "Sy" + "0123456789abcdefghijklmnopqrstu", "Bearer abc.def-0123456789"]


def _leaky_cli(tmp_path, at_start):
    """A stand-in CLI that prints its key on an auth failure, as many real ones do: at start, or
    (wrapping the local agent) when the agent exits."""
    script = tmp_path / f"leaky-{at_start}"
    run_agent = "" if at_start else f'{sys.executable} "$@"\n'
    script.write_text(f"#!/bin/sh\n{run_agent}echo \"error: invalid api key $OPENAI_API_KEY ($MY_SERVICE_PASSWORD)\" >&2\n"
                      f"echo 'retrying with {SHAPES[0]}' >&2\nexit 1\n")
    script.chmod(0o755)
    return script


def test_secrets_never_reach_the_event_log_or_subscribers(tmp_path, monkeypatch):
    monkeypatch.setenv("PADDOCK_TEST_PASSED", PASSED)
    config = {"instances": {
        "agent": {"driver": "local", "env": dict(SECRETS), "pass_env": ["PADDOCK_TEST_PASSED"],
                  "api_key": CONFIGURED_KEY},
        "leaky": {"driver": "local", "binary": str(_leaky_cli(tmp_path, False)), "env": dict(SECRETS)},
        "leaky-start": {"driver": "local", "binary": str(_leaky_cli(tmp_path, True)), "env": dict(SECRETS)},
    }}
    secrets = [*SECRETS.values(), PASSED, CONFIGURED_KEY, *SHAPES]
    state = tmp_path / "s"
    seen: list[bytes] = []
    with Runtime.open(config, state_dir=state) as rt:
        with rt.subscribe() as sub:
            rt.start_session("t1", instance="agent", cwd=tmp_path)
            for name in (*SECRETS, "PADDOCK_TEST_PASSED"):
                _, events = run_turn(rt, "t1", f"@env {name}")
                assert "[redacted]" in text_of(events), name
            _, events = run_turn(rt, "t1", "@run " + "; ".join(f"echo '{s}'" for s in [*SHAPES, CONFIGURED_KEY])
                                 + "; echo \"$OPENAI_API_KEY\"")
            output = "".join(e.delta for e in events if e.type == "content.delta")
            assert output.count("[redacted]") >= len(SHAPES) + 2, output
            rt.start_session("t2", instance="leaky", cwd=tmp_path)
            with rt.subscribe(thread_id="t2", types=["session.exited"]) as exits:
                rt.send_turn("t2", "@crash 3")
                exited = exits.get(timeout=20)
            assert exited is not None and "[redacted]" in (exited.stderr_tail or "") + exited.reason
            with pytest.raises(Exception) as caught:
                rt.start_session("t3", instance="leaky-start", cwd=tmp_path, timeout=20)
            assert not any(s in str(caught.value) for s in secrets), str(caught.value)
            rt._hub.flush()
            import msgspec

            while (event := sub.get(timeout=0.2)) is not None:
                seen.append(msgspec.json.encode(event))
    assert any(b"invalid api key [redacted]" in body for body in seen), "the leaky CLI's stderr should be logged, masked"
    logged = b"".join((state / name).read_bytes() for name in os.listdir(state) if name.startswith("events.db"))
    out = subprocess.run(PADDOCK + ["events", "--state-dir", str(state), "--json"],
                         cwd=ROOT, capture_output=True, timeout=30, env=_env())
    assert out.returncode == 0
    for secret in secrets:
        assert not any(secret.encode() in body for body in seen), f"a subscriber saw {secret!r}"
        assert secret.encode() not in logged, f"events.db holds {secret!r}"
        assert secret.encode() not in out.stdout, f"paddock events printed {secret!r}"


def test_raw_events_is_refused_instead_of_silently_attaching_nothing(tmp_path):
    with pytest.raises(ConfigError) as caught:
        Runtime.open({"runtime": {"raw_events": True}}, state_dir=tmp_path / "s")
    assert "raw_events" in str(caught.value)


# fault 8: the CLI shows a failed resume --------------------------------------------------------------


def test_paddock_run_shows_a_failed_resume(tmp_path):
    import shutil

    state = tmp_path / "s"
    run = PADDOCK + ["run", "--state-dir", str(state), "--thread", "tt", "--cwd", str(tmp_path)]
    first = subprocess.run([*run, "@reply one"], cwd=ROOT, capture_output=True, timeout=60, env=_env())
    assert first.returncode == 0, first.stderr.decode()
    shutil.rmtree(state / "instances" / "local" / "local-agent")  # the agent forgot the session
    second = subprocess.run([*run, "@reply two"], cwd=ROOT, capture_output=True, timeout=60, env=_env())
    assert second.returncode == 0, second.stderr.decode()
    out = second.stdout.decode()
    assert "resume_failed" in out and "(resume failed, fresh session)" in out, out
    # The warning keeps the agent's error data (Gemini CLI puts the real reason there).
    with StateReader(state).subscribe(thread_id="tt", types=["runtime.warning"]) as follower:
        warning = follower.get(timeout=5)
    assert warning.code == "acp.resume_failed" and warning.detail["code"] == -32002
    assert warning.detail["data"]["sessionId"]


# fault 8: transport warnings before the first session --------------------------------------------


def test_transport_warnings_before_the_first_session_are_published_on_the_instance(tmp_path):
    noisy = tmp_path / "noisy-python"
    noisy.write_text(f"#!/bin/sh\necho 'garbage before initialize'\nexec {sys.executable} \"$@\"\n")
    noisy.chmod(0o755)
    config = {"instances": {"noisy": {"driver": "local", "binary": str(noisy)}}}
    with Runtime.open(config, state_dir=tmp_path / "s") as rt:
        with rt.subscribe(instance_id="noisy", types=["runtime.warning"]) as sub:
            rt.start_session("t1", instance="noisy", cwd=tmp_path)
            warning = sub.get(timeout=10)
        assert warning is not None, "the warning was dropped"
        assert warning.code.startswith("transport.") and warning.instance_id == "noisy"
        assert "garbage before initialize" in json.dumps(warning.detail)
        _, events = run_turn(rt, "t1", "@reply still fine")
        assert text_of(events) == "still fine"
