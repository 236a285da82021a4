"""The shim's Landlock layer, driven through the real spawner: a confined child is refused by
the kernel (EACCES/EPERM) outside its rules, and the same command without rules succeeds."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from paddock.supervisors import Confinement, SpawnRequest, landlock_abi, spawn

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(not sys.platform.startswith("linux") or landlock_abi() < 1, reason="needs Linux with Landlock"),
]

SYSTEM = ("/usr", "/lib", "/lib64", "/bin", "/etc")
PROBE = r"""
import os, socket, sys
def attempt(label, fn):
    try:
        fn()
        print(label, "ok")
    except OSError as exc:
        print(label, exc.errno)
attempt("read", lambda: open(sys.argv[1]).read())
attempt("write", lambda: open(sys.argv[2], "w").write("x"))
attempt("write-allowed", lambda: open(sys.argv[3], "w").write("x"))
attempt("signal", lambda: os.kill(int(sys.argv[4]), 0))
def connect():
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect(("127.0.0.1", int(sys.argv[5])))
    finally:
        s.close()
attempt("connect", connect)
"""


def _run(tmp_path, confinement: Confinement | None) -> dict[str, str]:
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret")
    allowed = tmp_path / "allowed"
    allowed.mkdir(exist_ok=True)
    server = __import__("socket").socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    try:
        argv = [sys.executable, "-I", "-S", "-c", PROBE, str(secret), str(tmp_path / "outside.txt"),
                str(allowed / "in.txt"), str(os.getpid()), str(server.getsockname()[1])]
        proc = spawn(SpawnRequest(argv, env={"PATH": "/usr/bin:/bin"}, stdin=subprocess.DEVNULL,
                                  confinement=confinement))
        out, err = proc.communicate(timeout=30)
    finally:
        server.close()
    assert proc.returncode == 0, err
    return dict(line.split(" ", 1) for line in out.decode().splitlines())


def _rules(tmp_path) -> Confinement:
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    return Confinement(read=(*SYSTEM, *prefixes), write=(str(tmp_path / "allowed"),), connect=())


def test_confined_child_is_refused_by_the_kernel(tmp_path) -> None:
    seen = _run(tmp_path, _rules(tmp_path))
    assert seen["read"] == str(13)
    assert seen["write"] == str(13)
    assert seen["write-allowed"] == "ok"
    if landlock_abi() >= 6:
        assert seen["signal"] == str(1)
    if landlock_abi() >= 4:
        assert seen["connect"] == str(13)


def test_unconfined_child_succeeds(tmp_path) -> None:
    seen = _run(tmp_path, None)
    assert seen == {"read": "ok", "write": "ok", "write-allowed": "ok", "signal": "ok", "connect": "ok"}


def test_rules_that_cannot_be_applied_stop_the_exec(tmp_path) -> None:
    """An agent the host asked to confine never runs unconfined: a rule the kernel refuses (a
    bind port above 65535) makes the shim exit 126 without exec, saying why on stderr."""
    marker = tmp_path / "ran"
    rules = Confinement(read=SYSTEM, write=(str(tmp_path),), connect=(), bind=(70000,))
    proc = spawn(SpawnRequest(["/bin/sh", "-c", f"touch {marker}"], env={"PATH": "/usr/bin:/bin"},
                              stdin=subprocess.DEVNULL, confinement=rules))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 126
    assert b"paddock: cannot confine the agent:" in err
    assert not marker.exists()


def test_a_hidden_path_stays_unreachable_beneath_a_granted_folder(tmp_path) -> None:
    """``hide`` covers the state dir inside a granted workspace (a private mount namespace): its
    files cannot be read or written, while a new file beside it can be created and the instance
    home inside it stays writable."""
    work = tmp_path / "work"
    state = work / "state"
    home = state / "instances" / "a"
    home.mkdir(parents=True)
    (state / "events.db").write_text("transcripts")
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    rules = Confinement(read=(*SYSTEM, *prefixes), write=(str(work), str(home)), hide=(str(state),))
    script = ("import sys\nfor mode, p in zip(sys.argv[1::2], sys.argv[2::2]):\n    try:\n"
              "        open(p, mode).close(); print('ok')\n    except OSError as e:\n        print('refused')\n")
    argv = [sys.executable, "-I", "-S", "-c", script, "r", str(state / "events.db"), "a", str(state / "events.db"),
            "w", str(work / "new-beside.txt"), "w", str(home / "mine.txt")]
    proc = spawn(SpawnRequest(argv, env={"PATH": "/usr/bin:/bin"}, stdin=subprocess.DEVNULL, confinement=rules))
    out, err = proc.communicate(timeout=30)
    assert out.decode().split() == ["refused", "refused", "ok", "ok"], err
    assert (state / "events.db").read_text() == "transcripts"
    assert (home / "mine.txt").exists()
