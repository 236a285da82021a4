"""CLI hygiene (issue 24): a closed pipe exits quietly, ``--version`` works, messages name CLI
commands, and every command finds its config the same way and says which one it read."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from tests.cli.conftest import PADDOCK, ROOT, TWO_LOCAL_TOML, Pty, cli, env

pytestmark = pytest.mark.timeout(120)


def _log_with_many_events(state) -> None:
    r = cli("run", "--state-dir", str(state), "--cwd", str(state.parent), "@chunks 3000\\n@reply x")
    assert r.returncode == 0, r.stderr


def test_events_into_head_exits_0_without_a_traceback(short_root):
    state = short_root / "state"
    _log_with_many_events(state)
    for extra in ([], ["--json"]):
        line = " ".join([*PADDOCK, "events", "--state-dir", str(state), *extra])
        done = subprocess.run(["bash", "-c", f"set -o pipefail; {line} | head -1"], cwd=ROOT, env=env(),
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert len(done.stdout.splitlines()) == 1
        assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr


def test_events_follow_into_head_exits_once_head_has_its_lines(short_root):
    """No server and no new event: the follower notices the closed pipe while idle."""
    state = short_root / "state"
    r = cli("run", "--state-dir", str(state), "--cwd", str(short_root), "@reply hello")
    assert r.returncode == 0, r.stderr
    line = " ".join([*PADDOCK, "events", "--follow", "--state-dir", str(state)])
    t0 = time.monotonic()
    # head reads once the follower has written the whole log and gone idle: no later write
    # would tell it that the pipe closed.
    done = subprocess.run(["bash", "-c", f"set -o pipefail; {line} | {{ sleep 2; head -3; }}"], cwd=ROOT, env=env(),
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 3 and "Traceback" not in done.stderr, done.stderr
    assert time.monotonic() - t0 < 12  # start-up, two seconds of sleep, then out at once


def test_run_into_a_closed_pipe_exits_quietly(short_root):
    line = " ".join([*PADDOCK, "run", "--state-dir", str(short_root / "state"), "--cwd", str(short_root),
                     "'@chunks 3000\\n@delay 0.001'"])
    done = subprocess.run(["bash", "-c", f"set -o pipefail; {line} | head -c 10"], cwd=ROOT, env=env(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


def test_version():
    r = cli("--version")
    assert r.returncode == 0 and r.stdout.startswith("paddock ") and r.stdout.split()[1][0].isdigit(), r.stderr


def test_messages_name_cli_commands_not_api_calls(short_root):
    r = cli("approve", "ghost", "req-1", "y", "--state-dir", str(short_root / "state"))
    assert r.returncode == 1
    assert "start_session" not in r.stderr and "respond_to_request" not in r.stderr, r.stderr
    assert "start one with `paddock chat --thread ghost`" in r.stderr, r.stderr


def _config(path, instance: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[instances.{instance}]\ndriver = "local"\n')


def test_config_discovery_order_is_the_same_for_every_command(short_root):
    cwd = short_root / "here"
    state = cwd / ".paddock"  # the default state dir, found from the cwd
    _config(short_root / "flag.toml", "from-flag")
    _config(short_root / "env.toml", "from-env")
    _config(cwd / "paddock.toml", "from-cwd")
    _config(state / "paddock.toml", "from-state")

    def check(*extra: str, **environ: str) -> tuple[str, str]:
        r = cli("config", "check", "--json", *extra, cwd=cwd, environ=env(**environ))
        assert r.returncode == 0, r.stderr
        [line] = [x for x in r.stderr.splitlines() if x.startswith("paddock config check: config")]
        return r.stdout, line

    out, said = check("--config", str(short_root / "flag.toml"), PADDOCK_CONFIG=str(short_root / "env.toml"))
    assert '"from-flag"' in out and "flag.toml (from --config)" in said
    out, said = check(PADDOCK_CONFIG=str(short_root / "env.toml"))
    assert '"from-env"' in out and "env.toml (from $PADDOCK_CONFIG)" in said
    out, said = check()
    assert '"from-cwd"' in out and "(from the current directory)" in said
    (cwd / "paddock.toml").unlink()
    out, said = check()
    assert '"from-state"' in out and "(from the state directory)" in said
    (state / "paddock.toml").unlink()
    out, said = check()
    assert '"local"' in out and "none found" in said and "built-in 'local'" in said

    # run, chat and doctor read ./paddock.toml as config check does (the case), and say so.
    _config(cwd / "paddock.toml", "from-cwd")
    run = cli("run", "--instance", "from-cwd", "@reply found it", cwd=cwd)
    assert run.returncode == 0 and "found it" in run.stdout, run.stderr
    assert f"paddock run: config: {cwd / 'paddock.toml'} (from the current directory)" in run.stderr
    chat = cli("chat", "--instance", "from-cwd", cwd=cwd, input="@reply chatted\n")
    assert chat.returncode == 0 and "chatted" in chat.stdout, chat.stderr
    assert "paddock chat: config: " in chat.stderr and "(from the current directory)" in chat.stderr
    doctor = cli("doctor", "--json", cwd=cwd)
    assert doctor.returncode == 0 and '"from-cwd"' in doctor.stdout, doctor.stderr
    assert "paddock doctor: config: " in doctor.stderr
    for command in (["sessions"], ["events"]):
        r = cli(*command, cwd=cwd)
        assert r.returncode == 0 and f"paddock {command[0]}: reading {state}" in r.stderr, r.stderr


def test_serve_reads_the_discovered_config_and_clients_say_they_use_it(short_root):
    cwd = short_root / "srv"
    _config(cwd / "paddock.toml", "served")
    proc = subprocess.Popen([*PADDOCK, "serve"], cwd=cwd, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        from tests.helpers.streams import read_until

        said = read_until(proc.stderr, b"\n", 30)
        assert b"paddock serve: config: " in said and b"(from the current directory)" in said
        read_until(proc.stdout, b"listening on", 30)
        r = cli("run", "--instance", "served", "@reply via server", cwd=cwd)
        assert r.returncode == 0 and "via server" in r.stdout, r.stderr
        assert "paddock run: through the server of" in r.stderr
        r = cli("sessions", cwd=cwd)
        assert r.returncode == 0 and "paddock sessions: through the server of" in r.stderr
    finally:
        proc.terminate()
        assert proc.wait(20) == 0
        proc.stdout.close()
        proc.stderr.close()


def test_the_readable_events_view_is_one_line_per_event_with_text_coalesced(short_root):
    state, ws = short_root / "state", short_root / "ws"
    ws.mkdir()
    r = cli("run", "--state-dir", str(state), "--cwd", str(ws), "--thread", "v1", "--approve", "decline",
            "@chunks 5\\n@reply hello world\\n@run echo shown")
    assert r.returncode == 0, r.stderr
    out = cli("events", "--state-dir", str(state), "--thread", "v1")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert not [line for line in lines if line.split(None, 1)[1].startswith("{")], out.stdout  # no raw JSON
    assert [line for line in lines if "assistant: hello world" in line]  # five chunks, one line
    assert not [line for line in lines if "assistant_text" in line]
    [asked] = [line for line in lines if "approval requested (command)" in line]
    assert "command: echo shown" in asked
    assert "session configured" in out.stdout


def test_a_one_shot_run_through_a_server_stops_its_session_unless_keep(make_server):
    served = make_server("unix", config=TWO_LOCAL_TOML)
    for thread, keep in (("o1", ()), ("o2", ("--keep",))):
        r = cli("run", "--state-dir", str(served.state), "--instance", "local-a", "--thread", thread, "--cwd",
                str(served.workspace), *keep, "@reply once")
        assert r.returncode == 0 and "once" in r.stdout, r.stderr
    with served.remote() as rt:
        assert not rt.has_session("o1") and rt.has_session("o2")
    r = cli("run", "--state-dir", str(served.state), "--thread", "o1", "@reply-history")
    assert r.returncode == 0 and "history: 1" in r.stdout, r.stderr  # the stopped thread resumes on its instance


def test_serve_prints_a_dashboard_url_with_its_token_to_a_terminal_only(short_root):
    import signal
    import urllib.request

    state = short_root / "state"
    served = Pty("serve", "--state-dir", str(state), "--listen", "127.0.0.1:0", cwd=short_root)
    try:
        line = served.expect(b"\n", timeout=30) + served.expect(b"#token=", timeout=30) + served.expect(b"\n")
        url = line.split(b"dashboard ")[1].strip().decode()
        token = (state / "server.token").read_text().strip()
        assert url.endswith(f"/#token={token}")
        with urllib.request.urlopen(url.split("#")[0], timeout=10) as page:  # works as printed
            assert page.status == 200 and b"<title>paddock</title>" in page.read()
        os.kill(served.pid, signal.SIGTERM)
        assert served.wait() == 0
    finally:
        served.close()
    # In a pipe (a log), the token stays in its file.
    proc = subprocess.Popen([*PADDOCK, "serve", "--state-dir", str(short_root / "piped"), "--listen", "127.0.0.1:0"],
                            cwd=short_root, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        from tests.helpers.streams import read_until

        out = read_until(proc.stdout, b"asks for the token", 30)
        token = (short_root / "piped" / "server.token").read_text().strip()
        assert token.encode() not in out and b"#token=" not in out
    finally:
        proc.terminate()
        assert proc.wait(20) == 0
        proc.stdout.close()
        proc.stderr.close()


def test_run_shows_a_stalled_turn(short_root):
    config = short_root / "paddock.toml"
    config.write_text('[runtime]\nstall_warning = 0.5\n\n[instances.local]\ndriver = "local"\n')
    r = cli("run", "--config", str(config), "--state-dir", str(short_root / "state"), "--cwd", str(short_root),
            "@chunks 2\\n@delay 1.2\\n@reply slow answer")
    assert r.returncode == 0, r.stderr
    out = r.stdout + r.stderr
    # shown where the silence is: between the two halves of the answer
    first, warning, rest = r.stdout.partition("warning: turn.stalled: no sign of life from the agent for")
    assert warning, out
    assert "\nslow a\n" in first and "nswer" in rest and "completed" in rest


def test_chat_shows_a_stalled_turn_and_goes_on(short_root):
    config = short_root / "paddock.toml"
    config.write_text('[runtime]\nstall_warning = 0.5\n\n[instances.local]\ndriver = "local"\n')
    r = cli("chat", "--config", str(config), "--state-dir", str(short_root / "state"), "--cwd", str(short_root),
            input="@chunks 2\\n@delay 1.2\\n@reply slow answer\n@reply after\n")
    assert r.returncode == 0, r.stderr
    assert "warning: turn.stalled: no sign of life from the agent for" in r.stdout, r.stdout
    assert "after" in r.stdout.split("turn.stalled", 1)[1]  # the next message still ran


def test_a_turn_line_shows_its_own_usage_apart_from_the_thread_totals():
    from paddock.cli._common import format_event
    from paddock.contract import ThreadTokenUsageUpdated, TokenUsage, TurnCompleted

    ident = {"driver": "claude", "instance_id": "c", "thread_id": "t", "turn_id": "u2"}
    turn = format_event(TurnCompleted(**ident, state="completed", usage=TokenUsage(input_tokens=1200, output_tokens=80)))
    assert turn == "[t] turn u2 completed (this turn: in 1200, out 80)"
    totals = format_event(ThreadTokenUsageUpdated(**ident, usage=TokenUsage(input_tokens=212874, context_window=200000)))
    assert "usage so far in the thread: in 212874" in totals and "context window 200000" in totals


def test_lines_say_turn_aborted_and_leave_no_empty_reason():
    from paddock.cli._common import format_event
    from paddock.contract import ItemCompleted, ItemStarted, SessionExited, TurnAborted

    ident = {"driver": "local", "instance_id": "l", "thread_id": "t", "turn_id": "u1"}
    assert format_event(TurnAborted(**ident, reason="the process died")) == "[t] turn u1 aborted: the process died"
    assert format_event(ItemCompleted(**ident, kind="command", status="declined")) == "[t] ■ command declined"
    assert format_event(ItemCompleted(**ident, kind="command", title="echo hi")) == "[t] ■ command completed: echo hi"
    assert format_event(ItemStarted(**ident, kind="command", title="")) == "[t] ▶ command"
    assert format_event(SessionExited(**ident, reason="")) == "[t] session exited"
