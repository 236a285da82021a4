"""fs/* requests from a real agent are confined to the session's workspace roots."""

from __future__ import annotations

import os

import pytest

from .conftest import etype


@pytest.fixture
def h(make, tmp_path):
    h = make()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("untouched")
    (h.cwd / "out").symlink_to(outside)
    os.mkfifo(h.cwd / "fifo")
    h.outside = outside
    h.start(runtime_mode="full-access")
    return h


def write_status(h, path: str) -> str:
    res, events = h.turn(f"@write {path} pwned")
    done = [e for e in events if etype(e) == "item.completed" and e.kind == "file_change"]
    assert len(done) == 1 and events[-1].state == "completed"
    if done[0].status == "failed":
        assert "Access denied" in str(done[0].data)  # refused by the client, not the agent
    return done[0].status


@pytest.mark.parametrize("target", ["../outside/victim.txt", "ABS", "out/victim.txt", "/proc/self/environ", "fifo"])
def test_agent_writes_outside_the_workspace_are_refused(h, target):
    path = str(h.outside / "victim.txt") if target == "ABS" else target
    assert write_status(h, path) == "failed"
    assert (h.outside / "victim.txt").read_text() == "untouched"
    assert os.path.exists(h.cwd / "fifo")


def test_agent_write_inside_the_workspace_is_served(h):
    assert write_status(h, "deep/ok.txt") == "completed"
    assert (h.cwd / "deep" / "ok.txt").read_text() == "pwned"


def test_a_hardlink_to_a_file_outside_is_refused(h):
    os.link(h.outside / "victim.txt", h.cwd / "link.txt")
    assert write_status(h, "link.txt") == "failed"
    assert (h.outside / "victim.txt").read_text() == "untouched"


def test_a_hardlink_whose_links_are_all_inside_is_served(h):
    (h.cwd / "a.txt").write_text("a")
    os.link(h.cwd / "a.txt", h.cwd / "b.txt")
    assert write_status(h, "b.txt") == "completed"
    assert (h.cwd / "a.txt").read_text() == "pwned"
