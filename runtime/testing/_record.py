"""``record()``: run one scenario against a pinned CLI through our transports and save the
transcript (the engine behind ``paddock record``)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import msgspec

from ._offline import build_offline_env
from paddock.drivers._peers import default_peers_dir, load_pins, peer_argv
from ._sessions import SESSIONS
from ._transcript import Recorder
from .model_server import ModelServer

__all__ = ["RecordResult", "record"]


class RecordResult(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    cli: str
    version: str
    scenario: str
    frames: int
    seconds: float
    model_calls: int


def record(cli: str, scenario: str, out: str | Path, *, peers_dir: Path | None = None,
           timeout: float = 60.0) -> RecordResult:
    """Record ``scenario`` (a model-server scenario name, sent as ``SCENARIO:<name>``) with the
    pinned ``cli``. Raises ``ValueError`` for an unknown or unsupported CLI, ``LookupError`` when
    it is not installed, and the session's error (``ProcessError``, ``OperationTimeout``, ...) when
    the run fails; nothing is written then."""
    pins = load_pins()
    if cli not in pins:
        raise ValueError(f"unknown CLI {cli!r}; pinned: {', '.join(pins)}")
    if cli not in SESSIONS:
        raise ValueError(f"recording {cli!r} is not supported yet (supported: {', '.join(SESSIONS)})")
    peer = pins[cli]
    root = default_peers_dir() if peers_dir is None else Path(peers_dir)
    argv = peer_argv(peer, root)
    if argv is None:
        raise LookupError(f"{peer.package}@{peer.version} is not installed; run: {peer.install_hint}")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="paddock-record-") as tmp:
        workspace = Path(tmp) / "workspace"
        workspace.mkdir()
        with ModelServer(workspace=workspace) as server:
            offline = build_offline_env(cli, Path(tmp) / "env", model_url=server.url)
            replacements = [(str(Path(tmp) / "env"), "<tmp>"), (offline.home, "<home>"), (str(root), "<peers>")]
            for key, placeholder in (("CODEX_HOME", "<codex-home>"), ("CLAUDE_CONFIG_DIR", "<config-dir>")):
                if key in offline.env:
                    replacements.append((offline.env[key], placeholder))
            recorder = Recorder(cli=cli, version=peer.version, scenario=scenario, protocol=peer.protocol,
                                workspace=str(workspace), replacements=replacements)
            SESSIONS[cli](argv, offline.env, str(workspace), f"Paddock recording. SCENARIO:{scenario}",
                          tap=recorder, timeout=timeout)
            calls = len(server.model_calls())
    path = recorder.write(out)
    return RecordResult(path=str(path), cli=cli, version=peer.version, scenario=scenario,
                        frames=len(recorder.frames), seconds=round(time.monotonic() - started, 2), model_calls=calls)
