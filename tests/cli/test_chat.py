"""A chat that stays up (issue 24): changing modes or models never ends it, and its resume hint
continues the thread on the same instance."""

from __future__ import annotations

import re
import shlex

import pytest

from tests.cli.conftest import TWO_LOCAL_TOML, Pty, cli

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("where", ["in-process", "server"])
def test_mode_and_model_changes_keep_the_chat(where, short_root, make_server):
    if where == "server":
        served = make_server("unix", config=TWO_LOCAL_TOML)
        state, ws, instance = served.state, served.workspace, ["--instance", "local-a"]
    else:
        state, ws, instance = short_root / "state", short_root / "ws", []
        ws.mkdir()
    chat = Pty("chat", "--state-dir", str(state), "--thread", "m1", "--cwd", str(ws), *instance)
    try:
        chat.expect(b"you> ")
        chat.send(b"@reply before\n")
        chat.expect(b"turn completed")
        for change in (b"/mode full-access", b"/mode auto-accept-edits", b"/model other", b"/mode plan"):
            chat.expect(b"you> ")
            chat.send(change + b"\n")
            chat.expect(b"you> ")
            chat.send(b"@reply-history\n")
            assert b"history: " in chat.expect(b"turn completed")
        chat.expect(b"you> ")
        chat.send(f"@write {ws}/auto.txt edited\n".encode())  # auto-accept-edits is in force: no question
        chat.expect(b"turn completed")
        assert (ws / "auto.txt").read_text() == "edited"
        assert b"session exited" not in chat.out
        chat.expect(b"you> ")
        chat.send(b"/quit\n")
        assert chat.wait() == 0
    finally:
        chat.close()


@pytest.mark.parametrize("where", ["in-process", "server"])
def test_the_resume_hint_round_trips_to_the_same_instance(where, short_root, make_server, tmp_path):
    served = make_server("unix", config=TWO_LOCAL_TOML)
    ws = served.workspace
    if where == "in-process":
        served.stop()  # the state dir is read in-process; its config is named with --config
    config = () if where == "server" else ("--config", str(served.config))
    chat = Pty("chat", "--state-dir", str(served.state), "--instance", "local-b", "--thread", "h1", "--cwd", str(ws),
               *config)
    try:
        chat.expect(b"you> ")
        chat.send(b"@reply remember me\n")
        chat.expect(b"turn completed")
        chat.expect(b"you> ")
        chat.send(b"\x04")  # Ctrl-D leaves
        assert chat.wait() == 0
    finally:
        chat.close()
    hint = re.search(rb"continue with: (paddock chat [^\r\n\x1b]+)", chat.out)
    assert hint, chat.out
    argv = shlex.split(hint.group(1).decode())[2:]
    assert argv[argv.index("--instance") + 1] == "local-b" and argv[argv.index("--thread") + 1] == "h1"
    # Followed as printed (it names every option it needs: --config too) from a folder where no
    # config is found: same instance, same cwd, the conversation goes on.
    again = Pty("chat", *argv, cwd=tmp_path)
    try:
        banner = again.expect(b"you> ")
        assert b"local-b (local)" in banner and (where == "server" or b"resumed" in banner)
        again.send(b"@reply-history\n")
        assert b"history: 1" in again.expect(b"turn completed")
        again.expect(b"you> ")
        again.send(b"/quit\n")
        assert again.wait() == 0
    finally:
        again.close()
    [binding] = [line for line in cli("sessions", "--state-dir", str(served.state)).stdout.splitlines()
                 if line.startswith("h1 ")]
    assert binding.split()[1] == "local-b" and binding.endswith(str(ws))
    # Without --instance a thread keeps its instance; naming another one moves it, and says so.
    kept = cli("chat", "--state-dir", str(served.state), "--thread", "h1", *config, input="@reply-history\n")
    assert kept.returncode == 0 and "local-b (local)" in kept.stdout and "history: 2" in kept.stdout, kept.stderr
    moved = cli("chat", "--state-dir", str(served.state), "--thread", "h1", "--instance", "local-a", *config,
                input="@reply-history\n")
    assert moved.returncode == 0, moved.stderr
    assert "moves from instance 'local-b' to 'local-a'" in moved.stdout + moved.stderr
    assert "--instance local-a --thread h1" in moved.stdout
