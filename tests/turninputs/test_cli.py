"""The command line: ``paddock models``, ``paddock run --attach`` and the chat's ``/models`` and
``/attach``, as a user runs them (real subprocesses, the local agent)."""

from __future__ import annotations

import json

import pytest

from tests.cli.conftest import Pty, cli, env

from .conftest import PNG

pytestmark = pytest.mark.timeout(120)

CONFIG = """
[instances.loc]
driver = "local"
env = { PADDOCK_LOCAL_MODELS = "local-small,local-large" }
"""


@pytest.fixture
def place(tmp_path):
    (tmp_path / "paddock.toml").write_text(CONFIG)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "red.png").write_bytes(PNG)
    (ws / "notes.txt").write_text("hello\n")
    return tmp_path, ws


def test_models_lists_the_catalog(place):
    root, _ = place
    done = cli("models", "--instance", "loc", "--state-dir", str(root / "state"), cwd=root)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["local-small (default)  reads text", "local-large  reads text"]
    as_json = cli("models", "--instance", "loc", "--json", "--state-dir", str(root / "state"), cwd=root)
    assert [json.loads(line)["id"] for line in as_json.stdout.splitlines()] == ["local-small", "local-large"]
    missing = cli("models", "--instance", "nope", "--state-dir", str(root / "state"), cwd=root)
    assert missing.returncode == 1 and "nope" in missing.stderr


def test_run_attaches_files(place):
    root, ws = place
    done = cli("run", "--instance", "loc", "--cwd", str(ws), "--state-dir", str(root / "state"),
               "--attach", "ws/red.png", "--attach", str(ws / "notes.txt"), "@reply got them", cwd=root)
    assert done.returncode == 0, done.stderr
    assert (f"received: image image/png {len(PNG)} bytes; resource file://{ws.resolve()}/notes.txt text/plain 6 chars"
            in done.stdout)
    assert "got them" in done.stdout
    outside = cli("run", "--instance", "loc", "--cwd", str(ws), "--state-dir", str(root / "state"),
                  "--attach", "paddock.toml", "@reply no", cwd=root)
    assert outside.returncode == 1 and "outside the session's workspace" in outside.stderr


def test_chat_models_and_attach(place):
    root, ws = place
    chat = Pty("chat", "--instance", "loc", "--cwd", str(ws), "--state-dir", str(root / "state"), "--thread", "c1",
               cwd=root, environ=env(TERM="xterm"))
    try:
        chat.expect(b"you> ")
        chat.send(b"/models\n")
        chat.expect(b"local-large  reads text")
        chat.expect(b"you> ")
        chat.send(b"/attach ws/red.png\n")
        chat.expect(b"1 attached")
        chat.expect(b"you> ")
        chat.send(b"@reply looked\n")
        out = chat.expect(b"turn completed")
        assert f"received: image image/png {len(PNG)} bytes".encode() in out
        chat.expect(b"you> ")
        chat.send(b"@reply again\n")  # the attachment went with one message only
        assert b"received:" not in chat.expect(b"turn completed")
        chat.expect(b"you> ")
        chat.send(b"/quit\n")
        assert chat.wait() == 0
    finally:
        chat.close()
