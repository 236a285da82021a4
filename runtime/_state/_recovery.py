"""Recovery from a host that died without closing: taking the state directory over at open
(leftover processes of its leases) and ending the turns it left open. Runs in the opener's
thread.
"""

from __future__ import annotations

from pathlib import Path

from paddock._state._dir import StateDirLock, private_dir, tighten
from paddock.actors import HubHandle, LogReader
from paddock.contract import (
    ConfigError,
    Event,
    PersistenceError,
    RequestResolved,
    TO_BE_STAMPED,
    TurnCompleted,
    UserInputResolved,
    decode_event,
)
from paddock._state._store import BindingStore
from paddock.supervisors import exit_on_signals, sweep_leases

__all__ = ["claim_state_dir", "end_turns_left_open"]

_KINDS = ("turn.started", "turn.completed", "request.opened", "request.resolved",
          "user-input.requested", "user-input.resolved")
_UNLOGGED = "the turn's end was never logged (the event log could not be written before the host closed)"
_WHY = "the host stopped before the turn ended (it was not closed: killed or crashed)"


def claim_state_dir(folder: Path) -> StateDirLock:
    """Create ``folder`` (0700), lock it for this process, and kill what a dead host's leases
    left running. Installs the SIGTERM/SIGHUP -> ``SystemExit`` handlers when the host kept the
    defaults. Raises :class:`ConfigError` (cannot create) or :class:`PersistenceError`."""
    try:
        private_dir(folder)
    except OSError as exc:
        raise ConfigError(str(folder), f"the state directory cannot be created: {exc}") from None
    try:
        owner = StateDirLock.acquire(folder)  # before anything in it is read or written
    except OSError as exc:
        raise PersistenceError("lock the state directory", f"{folder}: {exc}") from None
    try:
        tighten(folder)
        private_dir(folder / "leases")
        sweep_leases(folder)  # crash leftovers of a dead host
        exit_on_signals(keep_custom=True)
    except OSError as exc:
        owner.release()
        raise PersistenceError("prepare the state directory", f"{folder}: {exc}") from None
    except BaseException:
        owner.release()
        raise
    return owner


def end_turns_left_open(hub: HubHandle, store: BindingStore) -> None:
    """Rule 1 across a host crash or a lost log write (before any session starts).

    A host that died without closing leaves its live bindings ``starting/ready/running``; a host
    whose log could not be written when a turn ended leaves that turn open in the log under any
    status (``close()`` marks the binding ``closed`` all the same). For every thread, every turn
    the log shows started and never completed is ended with ``turn.completed(state="failed")``
    whose error says why, after its open requests are resolved as ``expired``; a live binding
    becomes ``exited`` (it resumes on demand). One pass over the log's turn and request events.
    """
    if hub.log_path is None:
        return
    reader = LogReader(hub.log_path, types=_KINDS)
    try:
        rows = reader.read(0, 2**62, 2**62)
    finally:
        reader.close()
    turns: dict[str, dict[str, None]] = {}
    requests: dict[str, dict[str, tuple[str | None, bool]]] = {}
    for _, body in rows:
        ev = decode_event(body)
        t = ev.type
        if t == "turn.started" and ev.turn_id:
            turns.setdefault(ev.thread_id, {})[ev.turn_id] = None
        elif t == "turn.completed" and ev.turn_id:
            turns.get(ev.thread_id, {}).pop(ev.turn_id, None)
        elif t in ("request.opened", "user-input.requested") and ev.request_id:
            requests.setdefault(ev.thread_id, {})[ev.request_id] = (ev.turn_id, t == "user-input.requested")
        elif t in ("request.resolved", "user-input.resolved") and ev.request_id:
            requests.get(ev.thread_id, {}).pop(ev.request_id, None)
    for binding in store.list():
        live = binding.status in ("starting", "ready", "running")
        open_turns = turns.get(binding.thread_id, {})
        if not live and not open_turns:
            continue
        why = _WHY if live else _UNLOGGED
        out: list[Event] = []
        for rid, (tid, user_input) in requests.get(binding.thread_id, {}).items():
            if live or tid in open_turns:
                kind = UserInputResolved if user_input else RequestResolved
                out.append(kind(**TO_BE_STAMPED, turn_id=tid, request_id=rid,
                                resolution="expired"))
        for tid in open_turns:
            out.append(TurnCompleted(**TO_BE_STAMPED, turn_id=tid, state="failed", error=why))
        if out:
            hub.emitter(binding.driver, binding.instance_id, binding.thread_id).emit(out)
        if live:
            store.update(binding.thread_id, status="exited", last_error="the host stopped")
    hub.flush()

