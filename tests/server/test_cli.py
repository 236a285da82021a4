"""The CLI as clients of ``paddock serve``, driven as real processes (``chat`` in a real pty)."""

from __future__ import annotations

import re
import signal
import subprocess

import pytest

from tests.cli.conftest import Pty
from tests.server.conftest import PADDOCK, ROOT, env, read_until

pytestmark = pytest.mark.timeout(120)


def cli(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PADDOCK, *argv], cwd=ROOT, env=env(), capture_output=True, text=True, timeout=timeout)


def test_chat_two_turns_an_approval_ctrl_c_then_a_third_turn(make_server):
    served = make_server("unix")
    ws = served.workspace
    chat = Pty("chat", "--state-dir", str(served.state), "--instance", "local-a", "--thread", "c1", "--cwd", str(ws))
    try:
        chat.expect(b"you> ")
        chat.send(b"@reply first answer\n")
        assert b"first answer" in chat.expect(b"turn completed")
        chat.expect(b"you> ")
        chat.send(b"@reply-history\n")
        assert b"history: 1" in chat.expect(b"turn completed")
        chat.expect(b"you> ")
        chat.send(f"@write {ws}/ok.txt approved\n".encode())
        chat.expect(b"approve file_change")
        chat.expect(b"approve> ")
        chat.send(b"y\n")
        chat.expect(b"turn completed")
        assert (ws / "ok.txt").read_text() == "approved"
        chat.expect(b"you> ")
        chat.send(b"@chunks 3000\\n@delay 0.01\n")
        chat.expect(b"You said")  # the slow turn streams
        chat.send(b"\x03")  # Ctrl-C through the terminal: a real SIGINT
        chat.expect(b"interrupting the turn")
        chat.expect(b"turn interrupted")
        chat.expect(b"you> ")
        chat.send(b"@reply third\n")
        assert b"third" in chat.expect(b"turn completed")
        assert b"\x1b[" in chat.out  # colour in a terminal
        chat.expect(b"you> ")
        chat.send(b"/quit\n")
        assert chat.wait() == 0
    finally:
        chat.close()
    with served.remote() as rt:
        assert rt.has_session("c1")  # Ctrl-C interrupted the turn, not the session
        states = [t.state for t in rt.read_thread("c1").turns]
        assert states == ["completed", "completed", "completed", "interrupted", "completed"]
        [session] = rt.list_sessions()
        assert not session.resumed  # one session all along


def test_chat_in_a_pipe_is_plain_and_takes_answers_in_order(make_server):
    served = make_server("tcp")
    ws = served.workspace
    # Without a terminal a piped line never answers an approval: --approve decides (issue 24).
    script = f"@reply one\n@write {ws}/p.txt piped\n/model other-model\n/mode plan\n@reply two\n"
    r = subprocess.run([*PADDOCK, "chat", "--state-dir", str(served.state), "--instance", "local-b", "--thread", "p1",
                        "--cwd", str(ws), "--approve", "accept"], input=script, cwd=ROOT, env=env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "\x1b[" not in r.stdout and "you> " not in r.stdout
    assert re.search(r"^one\n· turn completed$", r.stdout, re.M)
    assert "approve file_change" in r.stdout and "  accept" in r.stdout and (ws / "p.txt").read_text() == "piped"
    assert "model: other-model" in r.stdout and "interaction mode: plan" in r.stdout
    assert r.stdout.count("· turn completed") == 3


def test_approve_from_a_second_process(make_server):
    served = make_server("unix")
    ws = served.workspace
    chat = Pty("chat", "--state-dir", str(served.state), "--instance", "local-a", "--thread", "a1", "--cwd", str(ws))
    try:
        chat.expect(b"you> ")
        chat.send(f"@write {ws}/remote.txt from afar\n".encode())
        chat.expect(b"approve> ")
        listed = cli("requests", "--state-dir", str(served.state))
        assert listed.returncode == 0, listed.stderr
        [row] = [line for line in listed.stdout.splitlines() if line.startswith("a1 ")]
        request_id = row.split()[1]
        assert "file_change" in row and "remote.txt" in row
        done = cli("approve", "a1", request_id, "accept", "--state-dir", str(served.state))
        assert done.returncode == 0 and f"request {request_id} of thread a1: accept" in done.stdout
        chat.expect(b"answered elsewhere: accept")
        chat.expect(b"turn completed")
        assert (ws / "remote.txt").read_text() == "from afar"
        again = cli("approve", "a1", request_id, "accept", "--state-dir", str(served.state))
        assert again.returncode == 1 and "paddock approve:" in again.stderr
        assert "no open requests" in cli("requests", "--state-dir", str(served.state)).stdout
        chat.send(b"\x04")  # Ctrl-D leaves
        assert chat.wait() == 0
    finally:
        chat.close()


def test_stop_of_a_live_session(make_server):
    served = make_server("unix")
    with served.remote() as rt:
        rt.start_session("s1", instance="local-a", cwd=served.workspace)
        with rt.subscribe(thread_id="s1", types=["session.exited"]) as sub:
            r = cli("stop", "s1", "--state-dir", str(served.state))
            assert r.returncode == 0 and "its live session ended" in r.stdout, r.stderr
            exited = sub.get(timeout=10)
        assert exited is not None and exited.reason == "stopped"
        assert not rt.has_session("s1")
    listed = cli("sessions", "--state-dir", str(served.state))
    assert re.search(r"^s1\s+local-a\s+local\s+stopped", listed.stdout, re.M)
    missing = cli("stop", "ghost", "--state-dir", str(served.state))
    assert missing.returncode == 1 and "ghost" in missing.stderr


def test_run_events_and_doctor_talk_to_the_server(make_server):
    served = make_server("tcp")
    r = cli("run", "--state-dir", str(served.state), "--instance", "local-b", "--thread", "r1", "--cwd",
            str(served.workspace), "--keep", "@reply through the server")  # --keep: issue 24 stops one-shots
    assert r.returncode == 0 and "through the server" in r.stdout, r.stderr
    with served.remote() as rt:
        assert rt.has_session("r1")  # the session lives on in the server
    doctor = cli("doctor", "--state-dir", str(served.state), "--json")
    assert doctor.returncode == 0 and doctor.stdout.count('"status": "available"') == 2
    follow = subprocess.Popen([*PADDOCK, "events", "--follow", "--state-dir", str(served.state), "--thread", "r1"],
                              cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out = read_until(follow.stdout.fileno(), b"completed", 30)
        with served.remote() as rt:
            rt.send_turn("r1", "@reply live")
        out = read_until(follow.stdout.fileno(), b"assistant: live", 30, out)  # one line per message (issue 24)
    finally:
        follow.send_signal(signal.SIGINT)
        assert follow.wait(10) == 0
        follow.stdout.close()
        follow.stderr.close()


def test_chat_without_a_server_runs_in_process(short_root):
    ws = short_root / "ws"
    ws.mkdir()
    script = f"@reply alone\n@write {ws}/solo.txt here\n@reply-history\n/stop\n"  # no terminal: declined
    r = subprocess.run([*PADDOCK, "chat", "--state-dir", str(short_root / "state"), "--thread", "solo", "--cwd", str(ws)],
                       input=script, cwd=ROOT, env=env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "· in-process" in r.stdout and "alone" in r.stdout and "  decline" in r.stdout
    assert not (ws / "solo.txt").exists() and "history: 2" in r.stdout and "thread solo stopped" in r.stdout
    listed = cli("sessions", "--state-dir", str(short_root / "state"))
    assert re.search(r"^solo\s+local\s+local\s+stopped", listed.stdout, re.M)


def test_chat_steer_and_mode_in_a_pty(make_server):
    served = make_server("unix")
    chat = Pty("chat", "--state-dir", str(served.state), "--instance", "local-b", "--thread", "st", "--cwd",
               str(served.workspace))
    try:
        chat.expect(b"you> ")
        chat.send(b"@chunks 3000\\n@delay 0.01\n")
        chat.expect(b"You said")
        chat.send(b"/steer @reply steered now\n")  # typed while the turn runs
        chat.expect(b"steered (turn")
        chat.expect(b"interrupted")  # the first turn, then the steered one
        assert b"steered now" in chat.expect(b"turn completed")
        chat.expect(b"you> ")
        chat.send(b"/mode full-access\n")
        assert b"full-access" in chat.expect(b"you> ")
        chat.send(b"/stop\n")
        chat.expect(b"thread st stopped")
        assert chat.wait() == 0
    finally:
        chat.close()
    with served.remote() as rt:
        assert not rt.has_session("st")
        assert [t.state for t in rt.read_thread("st").turns] == ["interrupted", "completed"]
        assert [b.runtime_mode for b in rt.list_threads()] == ["full-access"]


def test_ctrl_c_in_run_keep_through_a_server_interrupts_the_turn_and_keeps_the_session(make_server):
    served = make_server("unix")
    run = Pty("run", "--state-dir", str(served.state), "--instance", "local-a", "--thread", "k1", "--cwd",
              str(served.workspace), "--keep", "@chunks 3000\\n@delay 0.01")  # without --keep it stops
    try:
        run.expect(b"You said")
        run.send(b"\x03")
        assert run.wait() == 130
    finally:
        run.close()
    with served.remote() as rt:
        with rt.subscribe(thread_id="k1", from_seq=1, types=["turn.completed"]) as sub:
            done = sub.get(timeout=10)
        assert done is not None and done.state == "interrupted"
        assert rt.has_session("k1")
