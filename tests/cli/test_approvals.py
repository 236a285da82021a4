"""Approvals a person can trust (issue 24): a whole-word answer or the question again, never a
piped line, what is approved shown in full, and a prompt answered elsewhere cleared."""

from __future__ import annotations

import pytest

from tests.cli.conftest import TWO_LOCAL_TOML, Pty, cli

pytestmark = pytest.mark.timeout(120)


def test_chat_asks_again_until_a_whole_word_and_never_writes_on_stop_it(short_root):
    ws = short_root / "ws"
    ws.mkdir()
    chat = Pty("chat", "--state-dir", str(short_root / "state"), "--thread", "w1", "--cwd", str(ws))
    try:
        chat.expect(b"you> ")
        chat.send(f"@write {ws}/danger.txt written\n".encode())
        shown = chat.expect(b"approve> ")
        # The request shows what will be written (the path and the diff), not only its title.
        assert b"approve file_change" in shown and f"{ws}/danger.txt (add)".encode() in shown
        assert b"+written" in shown
        for wrong in (b"stop it", b"never mind", b"can you explain", b"yes please", b"sure"):
            chat.send(wrong + b"\n")
            again = chat.expect(b"approve> ")
            assert b"is not an answer" in again and b"y/yes/accept" in again
        assert not (ws / "danger.txt").exists()
        chat.send(b"  NO  \n")  # a whole word, any case, spaces ignored
        assert b"decline" in chat.expect(b"turn completed")
        assert not (ws / "danger.txt").exists()
        chat.expect(b"you> ")
        chat.send(f"@write {ws}/empty.txt x\n".encode())
        chat.expect(b"approve> ")
        chat.send(b"\n")  # Enter declines
        assert b"decline" in chat.expect(b"turn completed")
        assert not (ws / "empty.txt").exists()
        chat.expect(b"you> ")
        chat.send(f"@write {ws}/session.txt kept\n".encode())
        chat.expect(b"approve> ")
        chat.send(b"s\n")  # accept for the session asks to confirm first
        chat.expect(b"accept for the session? [y/N] ")
        assert not (ws / "session.txt").exists()
        chat.send(b"\n")  # not confirmed: back to the question
        chat.expect(b"not accepted for the session")
        chat.expect(b"approve> ")
        chat.send(b"session\n")
        chat.expect(b"accept for the session? [y/N] ")
        chat.send(b"yes\n")
        assert b"accept_for_session" in chat.expect(b"turn completed")
        assert (ws / "session.txt").read_text() == "kept"
        chat.expect(b"you> ")
        chat.send(b"/quit\n")
        assert chat.wait() == 0
    finally:
        chat.close()


def test_run_in_a_terminal_asks_again_on_stop_it(short_root):
    ws = short_root / "ws"
    ws.mkdir()
    run = Pty("run", "--state-dir", str(short_root / "state"), "--cwd", str(ws), "@run echo ran > ran.txt")
    try:
        shown = run.expect(b"approve> ")
        assert b"approve command" in shown and b"command: echo ran > ran.txt" in shown
        run.send(b"stop it\n")
        assert b"is not an answer" in run.expect(b"approve> ")
        assert not (ws / "ran.txt").exists()
        run.send(b"c\n")
        run.expect(b"cancel")
        assert run.wait() in (0, 1)  # the turn ends (completed or cancelled), never approved
    finally:
        run.close()
    assert not (ws / "ran.txt").exists()


def test_a_pipe_never_answers_an_approval(short_root):
    ws = short_root / "ws"
    ws.mkdir()
    # The case: the next queued message was taken as the answer and never sent.
    script = f"@write {ws}/piped.txt nope\nsecond\ny\n"
    r = cli("chat", "--state-dir", str(short_root / "state"), "--thread", "p1", "--cwd", str(ws), input=script)
    assert r.returncode == 0, r.stderr
    assert not (ws / "piped.txt").exists()
    assert "  decline (--approve decline: stdin is not a terminal)" in r.stdout
    assert "You said: second" in r.stdout and "You said: y" in r.stdout  # both stayed messages
    assert r.stdout.count("· turn completed") == 3
    # paddock run in a pipe never reads stdin for an answer either.
    r = cli("run", "--state-dir", str(short_root / "state"), "--cwd", str(ws), f"@write {ws}/run.txt nope",
            input="y\ny\n")
    assert r.returncode == 0, r.stderr
    assert not (ws / "run.txt").exists() and "  decline (--approve decline: stdin is not a terminal)" in r.stdout
    # --approve is the way to say yes without a terminal.
    r = cli("chat", "--state-dir", str(short_root / "state"), "--thread", "p2", "--cwd", str(ws), "--approve", "accept",
            input=f"@write {ws}/ok.txt yes\n")
    assert r.returncode == 0 and (ws / "ok.txt").read_text() == "yes", r.stdout + r.stderr


def test_run_clears_a_prompt_answered_elsewhere(make_server):
    served = make_server("unix", config=TWO_LOCAL_TOML)
    ws = served.workspace
    run = Pty("run", "--state-dir", str(served.state), "--instance", "local-a", "--thread", "e1", "--cwd", str(ws),
              f"@write {ws}/elsewhere.txt from afar")
    try:
        run.expect(b"approve> ")
        listed = cli("requests", "--state-dir", str(served.state))
        [row] = [line for line in listed.stdout.splitlines() if line.startswith("e1 ")]
        assert "elsewhere.txt" in row and "+from afar" in listed.stdout, listed.stdout
        done = cli("approve", "e1", row.split()[1], "yes", "--state-dir", str(served.state))
        assert done.returncode == 0, done.stderr
        assert "+from afar" in done.stdout and ": accept" in done.stdout
        run.expect(b"answered elsewhere: accept")
        run.expect(b"completed")
        assert run.wait() == 0
    finally:
        run.close()
    assert (ws / "elsewhere.txt").read_text() == "from afar"


def test_approve_takes_the_same_words_and_refuses_others(make_server):
    served = make_server("unix", config=TWO_LOCAL_TOML)
    bad = cli("approve", "t", "r", "stop", "--state-dir", str(served.state))
    assert bad.returncode == 2 and "'stop' is not an answer" in bad.stderr and "n/no/decline" in bad.stderr
