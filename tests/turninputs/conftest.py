"""Shared by the model-catalog and attachment tests: a real PNG, and turns run to their end."""

from __future__ import annotations

import struct
import zlib

import pytest


def _png(width: int = 2, height: int = 2) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


PNG = _png()
"""A valid 2x2 red RGB PNG."""


@pytest.fixture
def png_file(tmp_path):
    """A workspace folder holding ``red.png``; returns (workspace, path)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    path = ws / "red.png"
    path.write_bytes(PNG)
    return ws, path


def run_turn(rt, thread_id: str, text: str, *, timeout: float = 30.0, **kwargs):
    """Send a turn and collect its events until its ``turn.completed``; returns (result, events)."""
    with rt.subscribe(thread_id=thread_id) as sub:
        turn = rt.send_turn(thread_id, text, **kwargs)
        events = []
        while True:
            event = sub.get(timeout=timeout)
            assert event is not None, f"no turn.completed within {timeout} s; got {[e.type for e in events]}"
            events.append(event)
            if event.type == "turn.completed" and event.turn_id == turn.turn_id:
                return turn, events


def text_of(events) -> str:
    return "".join(e.delta for e in events if e.type == "content.delta" and e.stream == "assistant_text")
