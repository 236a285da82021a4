"""Transcripts: the NDJSON format shared by the recorder and the replayer.

File layout, one JSON object per line::

    {"type":"header","format":"paddock-transcript/1","cli":"codex","version":"0.171.0",
     "scenario":"text","protocol":"codex-app-server"}
    {"type":"expect_outbound","msg":{...}}     a line our side wrote to the CLI
    {"type":"emit_inbound","msg":{...}}        a line the CLI wrote to us
    {"type":"emit_inbound","line":"..."}       a non-JSON line, kept verbatim

HTTP transports (OpenCode) record one line per exchange step instead of stdio lines:
``{"http":"request","req":n,"method","path","body"}`` outbound, then
``{"http":"response","req":n,"status","body"}`` (``"stream":true`` for an SSE response) and
``{"http":"event","req":n,"data":{...}}`` per SSE event inbound; ``req`` is renumbered like an id.

Normalisation, applied identically when recording and when replaying:

- request ids are renumbered per direction in first-seen order: ids of OUR requests (and the
  CLI's responses to them) become 1, 2, ...; ids of the CLI's requests (and our responses) too,
  in their own space. JSON-RPC ids stay integers; Claude stream-json ``request_id`` strings
  become ``"id-1"``, ...;
- the workspace path becomes ``<workspace>`` (Claude's project slug ``<workspace-slug>``), other
  registered folders their placeholder (``<home>``, ``<codex-home>``, ``<tmp>``);
- a string value equal to the host name becomes ``<host>``;
- timestamps (values of keys such as ``emittedAtMs``, ``timestamp``, ``created``) become ``0``
  (numbers) or ``"<ts>"`` (strings).

In ``expect_outbound`` frames the string ``"<*>"`` matches any value.
"""

from __future__ import annotations

import difflib
import json
import re
import socket
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = [
    "FORMAT",
    "WILDCARD",
    "IdMap",
    "Recorder",
    "Transcript",
    "diff_frames",
    "dumps_line",
    "load_transcript",
    "matches",
]

FORMAT = "paddock-transcript/1"
WILDCARD = "<*>"
_TIMESTAMP_KEYS = frozenset({
    "emittedAtMs", "startedAtMs", "completedAtMs", "createdAt", "updatedAt", "updated_at", "created_at",
    "timestamp", "created", "completed", "durationMs", "duration_ms", "duration_api_ms", "ttft_ms",
    "lastUpdated", "startTime", "endTime", "updated", "next", "recencyAt",
})
PROTOCOL_FRAMING = {"codex-app-server": "jsonrpc", "acp": "jsonrpc", "claude-stream-json": "claude",
                    "opencode-server": "http"}


def dumps_line(obj: Any) -> str:
    """The one encoding used for frames and emitted lines (compact, UTF-8, key order kept)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


class IdMap:
    """First-seen renumbering of one id space (thread-safe)."""

    def __init__(self, as_string: bool) -> None:
        self._as_string = as_string
        self._canon: dict[Any, Any] = {}
        self._actual: dict[Any, Any] = {}
        self._lock = threading.Lock()

    def canon(self, actual: Any) -> Any:
        key = (type(actual).__name__, actual)
        with self._lock:
            if key not in self._canon:
                n = len(self._canon) + 1
                value = f"id-{n}" if self._as_string else n
                self._canon[key] = value
                self._actual[value] = actual
            return self._canon[key]

    def actual(self, canonical: Any) -> Any:
        with self._lock:
            return self._actual.get(canonical, canonical)


class _Ids:
    """Where ids live in one framing, and which id space a message's id belongs to."""

    def __init__(self, framing: str) -> None:
        self.framing = framing
        as_string = framing == "claude"
        self.ours = IdMap(as_string)    # requests we send, and the CLI's answers to them
        self.theirs = IdMap(as_string)  # requests the CLI sends, and our answers

    def _slot(self, msg: dict) -> tuple[dict, str, bool] | None:
        """(container, key, is_request) of the id in ``msg``, or None."""
        if self.framing == "http":
            # {"http":"request"|"response"|"event","req":n,...}: req numbers our requests.
            if "req" not in msg:
                return None
            return msg, "req", msg.get("http") == "request"
        if self.framing == "claude":
            kind = msg.get("type")
            if kind in ("control_request", "control_cancel_request") and "request_id" in msg:
                return msg, "request_id", True
            response = msg.get("response")
            if kind == "control_response" and isinstance(response, dict) and "request_id" in response:
                return response, "request_id", False
            return None
        if "id" not in msg or msg["id"] is None:
            return None
        return msg, "id", "method" in msg

    def normalise(self, msg: dict, outbound: bool) -> None:
        slot = self._slot(msg)
        if slot is None:
            return
        holder, key, is_request = slot
        ours = is_request == outbound  # our request going out, or an answer to ours coming in
        holder[key] = (self.ours if ours else self.theirs).canon(holder[key])

    def denormalise_inbound(self, msg: dict) -> None:
        """Before emitting an inbound frame: answers to our requests get our actual ids back;
        the CLI's own requests keep their canonical ids (registered so answers map back)."""
        slot = self._slot(msg)
        if slot is None:
            return
        holder, key, is_request = slot
        if is_request:
            self.theirs.canon(holder[key])
        else:
            holder[key] = self.ours.actual(holder[key])


class _Paths:
    def __init__(self, replacements: Iterable[tuple[str, str]]) -> None:
        pairs: list[tuple[str, str]] = []
        for path, placeholder in replacements:
            if not path:
                continue
            pairs.append((path, placeholder))
            real = str(Path(path).resolve())
            if real != path:
                pairs.append((real, placeholder))
            if placeholder == "<workspace>":
                # OpenCode also reports the workspace relative to its worktree root "/".
                pairs.append((real.lstrip("/"), "<workspace>"))
                # Claude Code names its project folder after the cwd with every other character as "-".
                pairs.append((re.sub(r"[^A-Za-z0-9]", "-", real), "<workspace-slug>"))
        self.pairs = sorted(set(pairs), key=lambda p: -len(p[0]))

    def apply(self, text: str) -> str:
        for path, placeholder in self.pairs:
            if path in text:
                text = text.replace(path, placeholder)
        return text

    def undo_workspace(self, text: str) -> str:
        for path, placeholder in self.pairs:
            if placeholder in ("<workspace>", "<workspace-slug>") and placeholder in text:
                return self.undo_workspace(text.replace(placeholder, path))
        return text


_HOST = socket.gethostname()


def _walk(value: Any, paths: _Paths, key: str | None = None) -> Any:
    if isinstance(value, dict):
        # Keys too: agents key file changes by path (codex-acp's ``changes``).
        return {paths.apply(k): _walk(v, paths, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, paths) for v in value]
    if isinstance(value, str) and value == _HOST and len(_HOST) > 1:
        return "<host>"
    if key in _TIMESTAMP_KEYS:
        if isinstance(value, bool):
            return value
        if isinstance(value, (int, float)):
            return 0
        if isinstance(value, str):
            return "<ts>"
    if isinstance(value, str):
        return paths.apply(value)
    return value


class Normaliser:
    """Turns raw lines into frames (recording, and the replayer's view of outbound lines)."""

    def __init__(self, framing: str, replacements: Iterable[tuple[str, str]] = ()) -> None:
        self.ids = _Ids(framing)
        self.paths = _Paths(replacements)

    def frame(self, line: bytes, outbound: bool) -> dict:
        kind = "expect_outbound" if outbound else "emit_inbound"
        text = line.decode("utf-8", "replace").rstrip("\r\n")
        try:
            msg = json.loads(text)
        except ValueError:
            return {"type": kind, "line": self.paths.apply(text)}
        if not isinstance(msg, dict):
            return {"type": kind, "line": self.paths.apply(text)}
        msg = _walk(msg, self.paths)
        self.ids.normalise(msg, outbound)
        return {"type": kind, "msg": msg}

    def inbound_line(self, frame: dict) -> bytes:
        """The bytes to emit for an ``emit_inbound`` frame (no newline)."""
        if "line" in frame:
            return self.paths.undo_workspace(frame["line"]).encode()
        msg = json.loads(self.paths.undo_workspace(dumps_line(frame["msg"])))
        self.ids.denormalise_inbound(msg)
        return dumps_line(msg).encode()


class Recorder:
    """A line tap (``paddock.actors.LineTap``) that records a transcript.

    ``on_outbound`` is called on the thread that writes the line (the sender's, or the
    transport's stdin writer thread) and ``on_inbound`` on its stdout reader thread; a lock
    keeps the frames in the order the threads saw them.
    ``replacements`` are ``(path, placeholder)`` pairs; the workspace is given separately.
    """

    def __init__(self, *, cli: str, version: str, scenario: str, protocol: str, workspace: str | None = None,
                 replacements: Iterable[tuple[str, str]] = ()) -> None:
        self.header = {"type": "header", "format": FORMAT, "cli": cli, "version": version,
                       "scenario": scenario, "protocol": protocol}
        pairs = [*replacements] + ([(workspace, "<workspace>")] if workspace else [])
        self._norm = Normaliser(PROTOCOL_FRAMING.get(protocol, "jsonrpc"), pairs)
        self._lock = threading.Lock()
        self.frames: list[dict] = []

    def on_outbound(self, line: bytes) -> None:
        with self._lock:
            self.frames.append(self._norm.frame(line, True))

    def on_inbound(self, line: bytes) -> None:
        if not line.strip():
            return
        with self._lock:
            self.frames.append(self._norm.frame(line, False))

    def dumps(self) -> bytes:
        with self._lock:
            lines = [dumps_line(self.header), *(dumps_line(f) for f in self.frames)]
        return ("\n".join(lines) + "\n").encode()

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.dumps())
        return path


class Transcript:
    def __init__(self, header: dict, frames: list[dict]) -> None:
        self.header = header
        self.frames = frames

    @property
    def framing(self) -> str:
        return PROTOCOL_FRAMING.get(self.header.get("protocol", ""), "jsonrpc")


def load_transcript(path: str | Path) -> Transcript:
    """Read a transcript; raises ``ValueError`` naming the line for a malformed file."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    if not lines:
        raise ValueError(f"{path}: empty transcript")
    try:
        items = [json.loads(x) for x in lines if x.strip()]
    except ValueError as exc:
        raise ValueError(f"{path}: not NDJSON: {exc}") from None
    header, frames = items[0], items[1:]
    if header.get("type") != "header" or header.get("format") != FORMAT:
        raise ValueError(f"{path}: the first line is not a {FORMAT} header")
    for n, frame in enumerate(frames, start=2):
        if frame.get("type") not in ("expect_outbound", "emit_inbound") or ("msg" not in frame and "line" not in frame):
            raise ValueError(f"{path}:{n}: not a frame: {str(frame)[:200]}")
    return Transcript(header, frames)


def matches(expected: Any, actual: Any) -> bool:
    """Structural equality where the string ``"<*>"`` in ``expected`` matches anything."""
    if expected == WILDCARD:
        return True
    if isinstance(expected, dict):
        return isinstance(actual, dict) and expected.keys() == actual.keys() and all(
            matches(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(expected) == len(actual) and all(
            matches(e, a) for e, a in zip(expected, actual))
    return type(expected) is type(actual) and expected == actual


def diff_frames(expected: Any, actual: Any) -> str:
    """A unified diff of two frames (any JSON value; ``None`` for a missing one), pretty-printed
    with sorted keys."""
    a = json.dumps(expected, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    b = json.dumps(actual, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    return "\n".join(difflib.unified_diff(a, b, "recorded (expected)", "sent (actual)", lineterm=""))
