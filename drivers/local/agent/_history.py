"""Per-session history on disk, so ``session/load`` works in a fresh agent process.

Layout: ``<state dir>/sessions/<sessionId>.jsonl``. The first line is the session header
``{"sessionId", "cwd"}``; every later line is one finished turn ``{"user", "agent", "usage"?}``
(cancelled and crashed turns included, with the answer streamed so far). Their texts are written
masked (``_mask``): a file never holds the agent's key or another secret in clear.
The state dir is ``$PADDOCK_LOCAL_STATE_DIR``, else ``$XDG_STATE_HOME/paddock-local``, else
``~/.local/state/paddock-local``.
"""

from __future__ import annotations

import os
import re

import msgspec

from ._mask import secret_mask

__all__ = ["Turn", "History", "state_dir"]

_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


def state_dir() -> str:
    """The state directory for this process's environment (not created here)."""
    explicit = os.environ.get("PADDOCK_LOCAL_STATE_DIR")
    if explicit:
        return explicit
    xdg = os.environ.get("XDG_STATE_HOME")
    if xdg:
        return os.path.join(xdg, "paddock-local")
    return os.path.join(os.path.expanduser("~"), ".local", "state", "paddock-local")


class Turn(msgspec.Struct, frozen=True, omit_defaults=True):
    """One finished turn: the user's prompt text, the streamed answer, reported usage."""

    user: str
    agent: str
    usage: tuple[int, int] | None = None


class _Header(msgspec.Struct, frozen=True):
    sessionId: str
    cwd: str


_turn_decoder = msgspec.json.Decoder(Turn)
_header_decoder = msgspec.json.Decoder(_Header)


class History:
    """Reads and appends session files. Methods are safe from any thread for distinct sessions;
    callers serialise appends per session."""

    def __init__(self, root: str | None = None) -> None:
        self._root = root
        self._mask = secret_mask()

    @property
    def root(self) -> str:
        if self._root is None:
            self._root = state_dir()
        return self._root

    def _path(self, session_id: str) -> str | None:
        if not _SAFE_ID.match(session_id):
            return None
        return os.path.join(self.root, "sessions", session_id + ".jsonl")

    def create(self, session_id: str, cwd: str) -> None:
        path = self._path(session_id)
        assert path is not None
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(msgspec.json.encode(_Header(session_id, cwd)) + b"\n")

    def append(self, session_id: str, turn: Turn) -> None:
        path = self._path(session_id)
        if path is None:
            return
        masked = Turn(self._mask(turn.user), self._mask(turn.agent), turn.usage)
        line = msgspec.json.encode(masked) + b"\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

    def load(self, session_id: str) -> list[Turn] | None:
        """The stored turns, or None when the session is unknown. Damaged lines are skipped."""
        path = self._path(session_id)
        if path is None:
            return None
        try:
            with open(path, "rb") as f:
                lines = f.read().splitlines()
        except (FileNotFoundError, NotADirectoryError):
            return None
        turns: list[Turn] = []
        for line in lines[1:]:
            try:
                turns.append(_turn_decoder.decode(line))
            except msgspec.DecodeError:
                continue
        return turns
