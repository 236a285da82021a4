"""Recovery from a host that died without closing: taking the state directory over at open
(leftover processes of its leases), ending the turns it left open, and the lease backstop of a
close that overran its deadline. Runs in the opener's (or the closer's) thread.
"""

from __future__ import annotations

from pathlib import Path

from paddock._state_dir import StateDirLock, private_dir, tighten
from paddock.actors import HubHandle, LogReader
from paddock.contract import (
    ConfigError,
    Event,
    PersistenceError,
    RequestResolved,
    TurnCompleted,
    UserInputResolved,
    decode_event,
)
from paddock.store import BindingStore
from paddock.supervisors import LeaseStore, exit_on_signals, sweep_leases

__all__ = ["claim_state_dir", "end_turns_left_open", "kill_leased_processes"]

_KINDS = ("turn.started", "turn.completed", "request.opened", "request.resolved",
          "user-input.requested", "user-input.resolved")
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
    """Rule 1 across a host crash (before any session starts).

    A host that died without closing leaves its live bindings ``starting/ready/running``. For
    each such thread, every turn the log shows started and never completed is ended with
    ``turn.completed(state="failed")`` whose error says the host stopped, after its open requests
    are resolved as ``expired``; the binding becomes ``exited`` (it resumes on demand). Only those
    threads' turn and request events are read.
    """
    if hub.log_path is None:
        return
    for binding in store.list():
        if binding.status not in ("starting", "ready", "running"):
            continue
        reader = LogReader(hub.log_path, thread_id=binding.thread_id, types=_KINDS)
        try:
            rows = reader.read(0, 2**62, 10_000_000)
        finally:
            reader.close()
        turns: dict[str, None] = {}
        requests: dict[str, tuple[str | None, bool]] = {}
        for _, body in rows:
            ev = decode_event(body)
            t = ev.type
            if t == "turn.started" and ev.turn_id:
                turns[ev.turn_id] = None
            elif t == "turn.completed" and ev.turn_id:
                turns.pop(ev.turn_id, None)
            elif t in ("request.opened", "user-input.requested") and ev.request_id:
                requests[ev.request_id] = (ev.turn_id, t == "user-input.requested")
            elif t in ("request.resolved", "user-input.resolved") and ev.request_id:
                requests.pop(ev.request_id, None)
        out: list[Event] = []
        for rid, (tid, user_input) in requests.items():
            kind = UserInputResolved if user_input else RequestResolved
            out.append(kind(driver="", instance_id="", thread_id="", turn_id=tid, request_id=rid,
                            resolution="expired"))
        for tid in turns:
            out.append(TurnCompleted(driver="", instance_id="", thread_id="", turn_id=tid, state="failed", error=_WHY))
        if out:
            hub.emitter(binding.driver, binding.instance_id, binding.thread_id).emit(out)
        store.update(binding.thread_id, status="exited", last_error="the host stopped")
    hub.flush()


def kill_leased_processes(state_dir: Path) -> None:
    """SIGKILL every process this host holds a lease for, at once: the backstop of a close whose
    teardowns lag behind its deadline."""
    try:
        LeaseStore(state_dir).kill_all()
    except OSError:
        pass
