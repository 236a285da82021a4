"""Path confinement of fs/read_text_file and fs/write_text_file (pure functions, real files)."""

from __future__ import annotations

import os

import pytest

from paddock.drivers.acp._fs import FsError, read_text_file, write_text_file


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\ntwo\nthree\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    return root, outside


def refused(fn, *args) -> FsError:
    with pytest.raises(FsError) as info:
        fn(*args)
    return info.value


def test_reads_inside_and_relative(ws):
    root, _ = ws
    assert read_text_file([str(root)], str(root), str(root / "a.txt")) == "one\ntwo\nthree\n"
    assert read_text_file([str(root)], str(root), "a.txt", 2, 1) == "two\n"


def test_missing_file_is_resource_not_found(ws):
    root, _ = ws
    err = refused(read_text_file, [str(root)], str(root), str(root / "nope.txt"))
    assert err.code == -32002 and err.message == f"Resource not found: {root / 'nope.txt'}"


@pytest.mark.parametrize("op", ["read", "write"])
def test_dotdot_escape_refused(ws, op):
    root, outside = ws
    path = str(root / ".." / "outside.txt")
    err = refused(read_text_file, [str(root)], str(root), path) if op == "read" else refused(
        write_text_file, [str(root)], str(root), path, "x")
    assert "outside the session's workspace" in err.message
    assert outside.read_text() == "secret"


@pytest.mark.parametrize("op", ["read", "write"])
def test_absolute_outside_refused(ws, op):
    root, outside = ws
    if op == "read":
        refused(read_text_file, [str(root)], str(root), str(outside))
    else:
        refused(write_text_file, [str(root)], str(root), str(outside), "x")
    assert outside.read_text() == "secret"


@pytest.mark.parametrize("op", ["read", "write"])
def test_symlink_out_refused(ws, op):
    root, outside = ws
    (root / "link").symlink_to(outside)
    (root / "dirlink").symlink_to(outside.parent)
    for p in ("link", "dirlink/outside.txt"):
        if op == "read":
            refused(read_text_file, [str(root)], str(root), str(root / p))
        else:
            refused(write_text_file, [str(root)], str(root), str(root / p), "x")
    assert outside.read_text() == "secret"


def test_proc_self_environ_refused_even_under_root_slash(ws):
    root, _ = ws
    for roots in ([str(root)], ["/"]):
        err = refused(read_text_file, roots, str(root), "/proc/self/environ")
        assert err.code == -32602


@pytest.mark.parametrize("op", ["read", "write"])
def test_fifo_refused_without_blocking(ws, op):
    root, _ = ws
    os.mkfifo(root / "fifo")
    if op == "read":
        err = refused(read_text_file, [str(root)], str(root), str(root / "fifo"))
    else:
        err = refused(write_text_file, [str(root)], str(root), str(root / "fifo"), "x")
    assert "not a regular file" in err.message


def test_directory_refused(ws):
    root, _ = ws
    (root / "sub").mkdir()
    refused(read_text_file, [str(root)], str(root), str(root / "sub"))
    refused(read_text_file, [str(root)], str(root), str(root))


def test_write_creates_parents_and_truncates(ws):
    root, _ = ws
    write_text_file([str(root)], str(root), str(root / "new" / "deep" / "f.txt"), "héllo")
    assert (root / "new" / "deep" / "f.txt").read_text() == "héllo"
    write_text_file([str(root)], str(root), "a.txt", "x")
    assert (root / "a.txt").read_text() == "x"


def test_second_root_allowed(ws, tmp_path):
    root, _ = ws
    other = tmp_path / "other"
    other.mkdir()
    write_text_file([str(root), str(other)], str(root), str(other / "f"), "ok")
    assert (other / "f").read_text() == "ok"


def test_symlink_inside_workspace_is_followed(ws):
    root, _ = ws
    (root / "alias").symlink_to(root / "a.txt")
    assert read_text_file([str(root)], str(root), str(root / "alias")).startswith("one")


def test_a_hardlink_to_a_file_outside_is_refused_for_reads(ws):
    root, outside = ws
    os.link(outside, root / "hard.txt")
    err = refused(read_text_file, [str(root)], str(root), str(root / "hard.txt"))
    assert "hardlink" in err.message
    (root / "one.txt").write_text("inside")
    os.link(root / "one.txt", root / "two.txt")
    assert read_text_file([str(root)], str(root), str(root / "two.txt")) == "inside"
