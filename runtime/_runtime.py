"""The embedding API: :class:`Runtime`.

A Runtime owns an EventHub (durable, sequenced event log), a binding store, and one adapter per
configured instance, created on first use. Every public method is thread-safe, takes an optional
keyword-only ``timeout`` in seconds where it blocks, and raises only ``PaddockError``s.
"""

from __future__ import annotations

import atexit
import os
import shutil
import threading
import time
import weakref
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from paddock.contract import (
    DECISIONS,
    INTERACTION_MODES,
    MAX_PROMPT_CHARS,
    ModelInfo,
    RUNTIME_MODES,
    Capabilities,
    CapabilityUnsupportedError,
    ConfigError,
    Decision,
    DriverError,
    InstanceNotFoundError,
    InteractionMode,
    OperationTimeout,
    PaddockError,
    PersistenceError,
    ProviderAdapter,
    RuntimeMode,
    SendTurnInput,
    Session,
    SessionClosedError,
    SessionNotFoundError,
    StartSessionInput,
    ThreadSnapshot,
    TurnStartResult,
    ValidationError,
    decide_steering,
    decode_event,
    fold_thread,
)
from paddock.contract._construct import NoPublicConstructor
from paddock._config import RuntimeConfig, issue_from, load_config
from paddock._isolation import build_env, instance_home, secret_values
from paddock.drivers._access import ModelAccess, model_access
from paddock._pending import PendingRequest, PendingRequests
from paddock._state_dir import StateDirLock, private_dir, private_file, tighten
from paddock.store import RESUMABLE, Binding, BindingStore

if TYPE_CHECKING:
    from paddock.actors import Subscription
    from paddock.drivers import DriverConfig, DriverSpec, InstanceContext

__all__ = ["InstanceInfo", "Runtime"]

DEFAULT_TIMEOUT = 30.0


class InstanceInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A configured instance as the runtime sees it. ``reason`` says why it is unavailable."""

    id: str
    driver: str
    status: Literal["available", "unavailable"]
    reason: str | None = None
    capabilities: Capabilities | None = None
    home: str | None = None
    binary: str | None = None
    models: tuple[ModelInfo, ...] | None = None
    """The instance's model catalog, once its agent listed one (drivers with an optional
    ``models()`` method, e.g. ``codex``'s ``model/list``); ``None`` when unknown."""


class _Instance:
    """Book-keeping for one configured instance (guarded by its own lock)."""

    def __init__(self, instance_id: str, driver: str) -> None:
        self.id = instance_id
        self.driver = driver
        self.spec: DriverSpec | None = None
        self.config: DriverConfig | None = None
        self.reason: str | None = None
        self.home: Path | None = None
        self.env: dict[str, str] | None = None
        self.access: ModelAccess = ModelAccess()
        self.adapter: ProviderAdapter | None = None
        self.lock = threading.Lock()
        self.probe: tuple[float, str | None] | None = None
        self.redactor: Any = None  # paddock.actors.Redactor of its secrets, set by _prepare


_PROBE_TTL = 300.0
_CLOSERS = 32  # threads closing instances at once in Runtime.close
_probe_cache: dict[tuple[str, str], tuple[float, str | None]] = {}
_probe_lock = threading.Lock()


class Runtime(metaclass=NoPublicConstructor):
    """Run agent sessions and publish what they do as one canonical event stream.

    Build one with :meth:`open`; use it as a context manager or call :meth:`close`. Closing stops
    every session (each emits ``session.exited``) and every process the runtime started.
    """

    _public_factory = "Runtime.open(...)"

    def __init__(self, *, config: RuntimeConfig, state_dir: Path, owner: StateDirLock) -> None:
        from paddock.actors import EventHub  # the hub lives in the actor layer

        self._config = config
        self._settings = config.settings
        self.state_dir = state_dir
        self._owner = owner
        self._closed = False
        self._hub_failed: str | None = None
        self._lock = threading.RLock()
        try:
            self._store = BindingStore(private_file(state_dir / "paddock.db"))
        except BaseException:
            owner.release()
            raise
        try:
            log_path = private_file(state_dir / "events.db") if self._settings.event_log else None
            self._hub = EventHub.start(
                log_path=str(log_path) if log_path is not None else None,
                max_bytes=self._settings.event_log_max_bytes,
            )
        except BaseException:
            self._store.close()
            owner.release()
            raise
        try:
            self._end_turns_left_open()
            self._setup(config)
        except BaseException:
            self._hub.close()
            self._store.close()
            owner.release()
            raise
        _open_runtimes.add(self)

    def _end_turns_left_open(self) -> None:
        """Rule 1 across a host crash or a lost log write (thread: the opener, before any session
        starts).

        A host that died without closing leaves its live bindings ``starting/ready/running``; a
        host whose log could not be written when a turn ended leaves that turn open in the log
        under any status (``close()`` marks the binding ``closed`` all the same). For every
        thread, every turn the log shows started and never completed is ended with
        ``turn.completed(state="failed")`` whose error says why, after its open requests are
        resolved as ``expired``; a live binding becomes ``exited`` (it resumes on demand). One
        pass over the log's turn and request events.
        """
        if self._hub.log_path is None:
            return
        from paddock.actors import LogReader
        from paddock.contract import RequestResolved, TurnCompleted, UserInputResolved

        kinds = ("turn.started", "turn.completed", "request.opened", "request.resolved",
                 "user-input.requested", "user-input.resolved")
        crashed = "the host stopped before the turn ended (it was not closed: killed or crashed)"
        unlogged = "the turn's end was never logged (the event log could not be written before the host closed)"
        reader = LogReader(self._hub.log_path, types=kinds)
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
        for binding in self._store.list():
            live = binding.status in ("starting", "ready", "running")
            open_turns = turns.get(binding.thread_id, {})
            if not live and not open_turns:
                continue
            why = crashed if live else unlogged
            out: list[Any] = []
            for rid, (tid, user_input) in requests.get(binding.thread_id, {}).items():
                if live or tid in open_turns:
                    kind = UserInputResolved if user_input else RequestResolved
                    out.append(kind(driver="", instance_id="", thread_id="", turn_id=tid, request_id=rid,
                                    resolution="expired"))
            for tid in open_turns:
                out.append(TurnCompleted(driver="", instance_id="", thread_id="", turn_id=tid,
                                         state="failed", error=why))
            if out:
                self._hub.emitter(binding.driver, binding.instance_id, binding.thread_id).emit(out)
            if live:
                self._store.update(binding.thread_id, status="exited", last_error="the host stopped")
        self._hub.flush()

    def _setup(self, config: RuntimeConfig) -> None:
        self._instances: dict[str, _Instance] = {}
        self._live: dict[str, str] = {}  # thread id -> instance id
        self._last_used: dict[str, float] = {}
        self._thread_locks: dict[str, threading.Lock] = {}  # serialise start/stop per thread
        for entry in config.instances:
            self._instances[entry.instance_id] = self._prepare(entry)
        self._tracker = self._hub.subscribe(types=("turn.completed", "session.exited", "session.started"))
        self._pending = PendingRequests(self._hub)
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._track, name="paddock-tracker", daemon=True),
            threading.Thread(target=self._reap_idle, name="paddock-reaper", daemon=True),
        ]
        for t in self._threads:
            t.start()

    # construction -------------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
        *,
        state_dir: str | os.PathLike[str] | None = None,
    ) -> Runtime:
        """Open a runtime.

        ``config`` is a TOML path, a mapping of the same shape, or ``None`` for one built-in
        ``local`` instance. ``state_dir`` (default ``$PADDOCK_STATE_DIR`` or ``./.paddock``) holds
        the binding store, the event log and each instance's private home. Raises
        :class:`ConfigError` for malformed configuration; an instance whose driver is unknown or
        whose binary is missing is listed as unavailable instead.

        When called in the main thread of a host that left SIGTERM and SIGHUP at their defaults,
        those signals raise ``SystemExit`` there, so ``with`` blocks unwind and every open
        runtime closes in order (an interpreter exit closes them too). A host with its own
        handlers keeps them.
        """
        cfg = load_config(config if not isinstance(config, os.PathLike) else os.fspath(config))
        folder = Path(state_dir or os.environ.get("PADDOCK_STATE_DIR") or ".paddock").resolve()
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
            from paddock.supervisors import sweep_leases  # crash leftovers of a dead host

            sweep_leases(folder)
            from paddock.supervisors import exit_on_signals

            exit_on_signals(keep_custom=True)
        except OSError as exc:
            owner.release()
            raise PersistenceError("prepare the state directory", f"{folder}: {exc}") from None
        except BaseException:
            owner.release()
            raise
        return cls._create(config=cfg, state_dir=folder, owner=owner)

    def _prepare(self, entry) -> _Instance:
        from paddock.drivers import BUILT_IN_DRIVERS

        inst = _Instance(entry.instance_id, entry.driver)
        spec = BUILT_IN_DRIVERS.get(entry.driver)
        if spec is None:
            inst.reason = (
                f"unknown driver {entry.driver!r}; known drivers: {', '.join(sorted(BUILT_IN_DRIVERS))}"
            )
            return inst
        inst.spec = spec
        try:
            inst.config = msgspec.convert(entry.table, spec.config_type)
        except msgspec.ValidationError as exc:
            raise ConfigError(self._config.path, issue_from(exc, entry.instance_id)) from None
        inst.home = instance_home(self.state_dir, entry.instance_id, getattr(inst.config, "home", None))
        inst.env = build_env(
            home=inst.home,
            configured=getattr(inst.config, "env", {}) or {},
            pass_env=getattr(inst.config, "pass_env", ()) or (),
        )
        from paddock.actors import Redactor

        try:
            inst.access = model_access(inst.config, os.environ)
        except LookupError as exc:
            inst.reason = str(exc)
        secrets = secret_values(
            inst.env or {},
            pass_env=getattr(inst.config, "pass_env", ()) or (),
            args=getattr(inst.config, "args", ()) or (),
        ) | set(inst.access.secrets)  # the configured key (api_key / api_key_env)
        self._hub.add_secrets(inst.id, secrets)
        inst.redactor = Redactor(secrets)
        if inst.reason is not None:
            return inst
        inst.reason = self._probe(inst)
        return inst

    def _probe(self, inst: _Instance) -> str | None:
        """Why the instance is unavailable, or ``None``. Cached per (binary, home) for 5 minutes;
        a probe never starts a session."""
        probe = getattr(inst.spec, "probe", None)
        if probe is None:
            return None
        key = (str(getattr(inst.config, "binary", None) or inst.driver), str(inst.home))
        with _probe_lock:
            hit = _probe_cache.get(key)
            if hit and time.monotonic() - hit[0] < _PROBE_TTL:
                return hit[1]
        try:
            reason = probe(self._context(inst))
        except PaddockError as exc:
            reason = str(exc)
        with _probe_lock:
            _probe_cache[key] = (time.monotonic(), reason)
        return reason

    def _context(self, inst: _Instance) -> InstanceContext:
        from paddock.drivers import InstanceContext

        assert inst.config is not None  # _prepare decoded it before any probe or create
        return InstanceContext(
            instance_id=inst.id,
            driver=inst.driver,
            config=inst.config,
            home=str(inst.home),
            env=dict(inst.env or {}),
            state_dir=str(self.state_dir),
            hub=self._hub,
            access=inst.access,
        )

    # instances ----------------------------------------------------------------------------------

    def instances(self) -> list[InstanceInfo]:
        """Every configured instance with its status and, once known, its capabilities."""
        out = []
        for inst in self._instances.values():
            caps = None
            models = None
            if inst.adapter is not None:
                caps = inst.adapter.capabilities()
                catalog = getattr(inst.adapter, "models", None)  # optional adapter hook
                models = catalog() if callable(catalog) else None
            elif inst.spec is not None and inst.reason is None:
                caps = getattr(inst.spec, "capabilities", None)
            out.append(
                InstanceInfo(
                    id=inst.id,
                    driver=inst.driver,
                    status="unavailable" if inst.reason else "available",
                    reason=inst.reason,
                    capabilities=caps,
                    home=str(inst.home) if inst.home else None,
                    binary=getattr(inst.config, "binary", None),
                    models=models,
                )
            )
        return out

    def diagnose(self, *, timeout: float = 10.0) -> list[dict[str, Any]]:
        """For each instance: id, driver, status, reason, binary, version, auth state and home.

        Uses the driver's ``diagnose`` hook when it has one, else runs ``<binary> --version``.
        Never starts a session.
        """
        from paddock.supervisors import run_command

        out = []
        for info in self.instances():
            inst = self._instances[info.id]
            report: dict[str, Any] = {
                "id": info.id, "driver": info.driver, "status": info.status, "reason": info.reason,
                "binary": info.binary, "version": None, "auth": "unknown", "home": info.home,
            }
            hook = getattr(inst.spec, "diagnose", None)
            if hook is not None and info.status == "available":
                try:
                    report.update(hook(self._context(inst)))
                except PaddockError as exc:
                    report["reason"] = str(exc)
            elif info.binary and info.status == "available":
                binary = shutil.which(info.binary, path=(inst.env or {}).get("PATH")) or info.binary
                try:
                    res = run_command([binary, "--version"], env=inst.env or {}, timeout=timeout)
                    report["version"] = (res.stdout or res.stderr).strip().splitlines()[0] if (res.stdout or res.stderr).strip() else None
                except PaddockError as exc:
                    report["version"] = f"unknown ({exc})"
            out.append(report)
        return out

    def _adapter(self, instance_id: str):
        self._check_open()
        inst = self._instances.get(instance_id)
        if inst is None:
            raise InstanceNotFoundError(
                instance_id, f"it is not configured; configured: {', '.join(self._instances) or 'none'}"
            )
        if inst.reason:
            raise InstanceNotFoundError(instance_id, inst.reason, driver=inst.driver)
        with inst.lock:
            if inst.adapter is None:
                assert inst.spec is not None  # an instance without a reason has a known driver
                try:
                    inst.adapter = inst.spec.create(self._context(inst))
                except PaddockError as exc:
                    raise _mask_error(exc, inst.redactor)
                except Exception as exc:  # a driver bug must not escape as a foreign error
                    raise _mask_error(DriverError(inst.driver, inst.id, f"could not start: {exc!r}"), inst.redactor) from exc
            return inst.adapter

    # sessions -----------------------------------------------------------------------------------

    def start_session(
        self,
        thread_id: str,
        *,
        instance: str,
        cwd: str | os.PathLike[str],
        runtime_mode: RuntimeMode = "full-access",
        interaction_mode: InteractionMode = "default",
        model: str | None = None,
        resume: Literal["auto", "require", "never"] | None = None,
        timeout: float | None = None,
    ) -> Session:
        """Bind ``thread_id`` to ``instance`` and start its session.

        A thread that has a binding resumes from its cursor (``session.started`` has
        ``resumed=True``). A failed resume emits ``runtime.warning`` and starts fresh, unless
        ``resume="require"`` (or the config's ``[runtime] resume``) where it raises. A thread live on
        another instance is stopped there first; one live on this instance with the same cwd,
        modes and model is returned as it is, and restarted from its cursor when they differ.
        Returns when the session is ready.
        """
        self._check_open()
        _check_id("start_session", "thread_id", thread_id)
        _check_text("start_session", "instance", instance, thread_id)
        if model is not None:
            _check_text("start_session", "model", model, thread_id)
        if runtime_mode not in RUNTIME_MODES:
            raise ValidationError("start_session", f"runtime_mode must be one of {RUNTIME_MODES}, got {runtime_mode!r}", thread_id=thread_id)
        if interaction_mode not in INTERACTION_MODES:
            raise ValidationError("start_session", f"interaction_mode must be one of {INTERACTION_MODES}, got {interaction_mode!r}", thread_id=thread_id)
        folder = Path(cwd).expanduser()
        if not folder.is_dir():
            raise ValidationError("start_session", f"cwd {str(cwd)!r} is not a directory", thread_id=thread_id)
        adapter = self._adapter(instance)
        resume = resume or self._settings.resume
        with self._thread_lock(thread_id):
            current = self._live.get(thread_id)
            if current is not None and current != instance:
                self._stop_live(thread_id, reason=f"moved to instance {instance!r}", timeout=timeout)
            elif current == instance and adapter.has_session(thread_id):
                live = next((x for x in adapter.list_sessions() if x.thread_id == thread_id), None)
                wanted = (str(folder.resolve()), runtime_mode, interaction_mode, model)
                if live is not None and (live.cwd, live.runtime_mode, live.interaction_mode, live.model) == wanted:
                    return live  # already running as asked: starting it again is a no-op
                # Other settings: restart it from its cursor with them.
                adapter.stop_session(thread_id, timeout=_t(timeout))
                self._live.pop(thread_id, None)
            binding = self._store.get(thread_id)
            cursor = None
            if binding is not None and binding.instance_id == instance and resume != "never":
                cursor = binding.resume_cursor
            request = StartSessionInput(
                thread_id=thread_id,
                cwd=str(folder.resolve()),
                runtime_mode=runtime_mode,
                interaction_mode=interaction_mode,
                model=model,
                resume_cursor=cursor,
                workspace_roots=(str(folder.resolve()),),
            )
            inst = self._instances[instance]
            self._store.put(
                Binding(
                    thread_id=thread_id,
                    instance_id=instance,
                    driver=inst.driver,
                    status="starting",
                    cwd=request.cwd,
                    runtime_mode=runtime_mode,
                    interaction_mode=interaction_mode,
                    model=model,
                    resume_cursor=cursor,
                )
            )
            try:
                session = adapter.start_session(request, timeout=_t(timeout, self._settings.start_timeout))
            except PaddockError as exc:
                _mask_error(exc, inst.redactor)  # its stderr may hold the key the CLI refused
                self._store.update(thread_id, status="error", last_error=str(exc))
                raise
            if cursor is not None and resume == "require" and not _resumed(session, cursor):
                adapter.stop_session(thread_id, timeout=_t(timeout))
                self._store.update(thread_id, status="error", last_error="resume failed")
                raise SessionClosedError(thread_id, "resume was required but the agent could not resume it")
            self._live[thread_id] = instance
            self._last_used[thread_id] = time.monotonic()
            self._store.update(
                thread_id, status="ready", resume_cursor=session.resume_cursor or cursor, last_error=None
            )
            return session

    def send_turn(
        self,
        thread_id: str,
        text: str,
        *,
        interaction_mode: InteractionMode | None = None,
        model: str | None = None,
        timeout: float | None = None,
    ) -> TurnStartResult:
        """Send a user message; returns when the agent accepted the turn.

        The turn's progress arrives as events carrying ``turn_id``. A thread whose session was
        reaped or closed (or whose host died) resumes transparently. Raises
        :class:`ValidationError` for an empty or oversized prompt, an invalid mode, or a turn
        sent while another runs; :class:`SessionNotFoundError` for an unknown thread;
        :class:`SessionClosedError` for a thread stopped with ``stop_session``.
        """
        self._check_open()
        _check_text("send_turn", "thread_id", thread_id)
        if not isinstance(text, str) or not text.strip():
            raise ValidationError("send_turn", "the prompt is empty", thread_id=thread_id)
        _check_text("send_turn", "the prompt", text, thread_id)
        if model is not None:
            _check_text("send_turn", "model", model, thread_id)
        if len(text) > MAX_PROMPT_CHARS:
            raise ValidationError(
                "send_turn", f"the prompt has {len(text)} characters; the limit is {MAX_PROMPT_CHARS}", thread_id=thread_id
            )
        if interaction_mode is not None and interaction_mode not in INTERACTION_MODES:
            raise ValidationError("send_turn", f"interaction_mode must be one of {INTERACTION_MODES}", thread_id=thread_id)
        adapter = self._session_adapter(thread_id, "send_turn", timeout=timeout)
        # "running" goes in before the turn can end, so the tracker's running -> ready sticks.
        before = self._store.get(thread_id)
        running = self._store.update(thread_id, status="running")
        try:
            result = adapter.send_turn(
                SendTurnInput(thread_id=thread_id, text=text, interaction_mode=interaction_mode, model=model),
                timeout=_t(timeout),
            )
        except BaseException as exc:
            if before is not None:
                self._store.update(thread_id, only_if={"running"}, status=before.status)
            if isinstance(exc, PaddockError) and before is not None:
                _mask_error(exc, self._instances[before.instance_id].redactor)
            raise
        self._last_used[thread_id] = time.monotonic()
        if result.resume_cursor is not None and (running is None or running.resume_cursor != result.resume_cursor):
            self._store.update(thread_id, resume_cursor=result.resume_cursor)  # only a new cursor is written
        return result

    def interrupt_turn(self, thread_id: str, turn_id: str | None = None, *, timeout: float | None = None) -> None:
        """Ask the agent to stop the running turn (``turn_id`` or the current one). The turn then
        ends with ``turn.completed(state="interrupted")``; a finished turn is left alone."""
        adapter = self._live_adapter(thread_id, "interrupt_turn")
        if turn_id is not None:
            _check_text("interrupt_turn", "turn_id", turn_id, thread_id)
        caps = adapter.capabilities()
        if not caps.turns.interrupt:
            raise CapabilityUnsupportedError("turns.interrupt", "interrupting a turn", thread_id=thread_id)
        adapter.interrupt_turn(thread_id, turn_id, timeout=_t(timeout))
        self._last_used[thread_id] = time.monotonic()

    def steer_turn(self, thread_id: str, text: str, *, timeout: float | None = None) -> TurnStartResult:
        """Add ``text`` to the running turn, following ``decide_steering``: steer it when the agent
        can, else interrupt it, wait for its completion and start a new turn with ``text``."""
        adapter = self._live_adapter(thread_id, "steer_turn")
        if isinstance(text, str):
            _check_text("steer_turn", "the prompt", text, thread_id)
        if not isinstance(text, str) or not text.strip():
            raise ValidationError("steer_turn", "the prompt is empty", thread_id=thread_id)
        if len(text) > MAX_PROMPT_CHARS:
            raise ValidationError("steer_turn", f"the prompt is over {MAX_PROMPT_CHARS} characters", thread_id=thread_id)
        strategy = decide_steering(adapter.capabilities())
        request = SendTurnInput(thread_id=thread_id, text=text)
        if strategy == "active_steering":
            return adapter.steer_turn(thread_id, request, timeout=_t(timeout))
        deadline = time.monotonic() + _t(timeout)
        with self._hub.subscribe(thread_id=thread_id, types=("turn.completed", "turn.started")) as sub:
            session = next((s for s in adapter.list_sessions() if s.thread_id == thread_id), None)
            running = session.active_turn_id if session else None
            if running:
                adapter.interrupt_turn(thread_id, running, timeout=_t(timeout))
                while True:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise OperationTimeout("steer_turn (waiting for the interrupted turn)", _t(timeout), thread_id=thread_id)
                    event = sub.get(timeout=left)
                    if event is not None and event.type == "turn.completed" and event.turn_id == running:
                        break
        return self.send_turn(thread_id, text, timeout=max(0.1, deadline - time.monotonic()))

    def respond_to_request(self, thread_id: str, request_id: str, decision: Decision, *, timeout: float | None = None) -> None:
        """Answer an open ``request.opened``. Raises :class:`ValidationError` for an unknown
        decision and :class:`RequestError` for an unknown or already resolved request."""
        if decision not in DECISIONS:
            raise ValidationError("respond_to_request", f"decision must be one of {DECISIONS}, got {decision!r}", thread_id=thread_id)
        _check_text("respond_to_request", "request_id", request_id, thread_id)
        adapter = self._live_adapter(thread_id, "respond_to_request")
        adapter.respond_to_request(thread_id, request_id, decision, timeout=_t(timeout))
        self._last_used[thread_id] = time.monotonic()

    def respond_to_user_input(self, thread_id: str, request_id: str, answers: Mapping[str, Any], *, timeout: float | None = None) -> None:
        """Answer an open ``user-input.requested`` with ``answers`` keyed by question id."""
        if not isinstance(answers, Mapping):
            raise ValidationError("respond_to_user_input", "answers must be a mapping of question id to answer", thread_id=thread_id)
        _check_text("respond_to_user_input", "request_id", request_id, thread_id)
        _check_text("respond_to_user_input", "answers", answers, thread_id)
        adapter = self._live_adapter(thread_id, "respond_to_user_input")
        if not adapter.capabilities().approvals.user_input:
            raise CapabilityUnsupportedError("approvals.user_input", "structured user input", thread_id=thread_id)
        adapter.respond_to_user_input(thread_id, request_id, dict(answers), timeout=_t(timeout))

    def stop_session(self, thread_id: str, *, timeout: float | None = None) -> None:
        """Stop the thread's session on purpose. Its binding stays (status ``stopped``):
        ``start_session`` resumes it, ``send_turn`` raises :class:`SessionClosedError`."""
        self._check_open()
        _check_text("stop_session", "thread_id", thread_id)
        with self._thread_lock(thread_id):
            if thread_id not in self._live:
                if self._store.get(thread_id) is None:
                    raise SessionNotFoundError(thread_id)
                self._store.update(thread_id, status="stopped")
                return
            self._stop_live(thread_id, reason="stopped", timeout=timeout)
            self._store.update(thread_id, status="stopped")

    def stop_all(self, *, timeout: float | None = None) -> None:
        """Stop every live session (bindings stay, status ``stopped``)."""
        for thread_id in list(self._live):
            try:
                self.stop_session(thread_id, timeout=timeout)
            except SessionNotFoundError:
                pass

    def list_sessions(self) -> list[Session]:
        """The live sessions of every instance."""
        out: list[Session] = []
        for inst in self._instances.values():
            if inst.adapter is not None:
                out.extend(inst.adapter.list_sessions())
        return out

    def has_session(self, thread_id: str) -> bool:
        """Whether ``thread_id`` has a live session."""
        _check_text("has_session", "thread_id", thread_id)
        instance_id = self._live.get(thread_id)
        if instance_id is None:
            return False
        adapter = self._instances[instance_id].adapter
        return adapter is not None and adapter.has_session(thread_id)

    def read_thread(self, thread_id: str, *, timeout: float | None = None) -> ThreadSnapshot:
        """The thread's turns and their items, folded from the event log by
        :func:`paddock.contract.fold_thread` (works for every driver, live or not; an item not
        completed yet shows its last status and the text streamed so far). Raises
        :class:`SessionNotFoundError` for a thread never started."""
        _check_text("read_thread", "thread_id", thread_id)
        if self._store.get(thread_id) is None and thread_id not in self._live:
            raise SessionNotFoundError(thread_id)
        last = self._hub.flush(timeout=_t(timeout))
        if self._hub.log_path is None:
            raise CapabilityUnsupportedError("event_log", "reading a thread needs the event log ([runtime] event_log = true)")
        from paddock.actors import LogReader

        reader = LogReader(self._hub.log_path, thread_id=thread_id)
        try:
            rows = reader.read(0, last, 10_000_000)
        finally:
            reader.close()
        return fold_thread(thread_id, (decode_event(body) for _, body in rows))

    def rollback_thread(self, thread_id: str, num_turns: int, *, timeout: float | None = None) -> ThreadSnapshot:
        """Drop the last ``num_turns`` turns, where the agent supports it
        (``threads.rollback``); raises :class:`CapabilityUnsupportedError` otherwise."""
        if not isinstance(num_turns, int) or num_turns < 1:
            raise ValidationError("rollback_thread", "num_turns must be a positive integer", thread_id=thread_id)
        adapter = self._live_adapter(thread_id, "rollback_thread")
        if not adapter.capabilities().threads.rollback:
            raise CapabilityUnsupportedError("threads.rollback", "rolling back turns", thread_id=thread_id)
        return adapter.rollback_thread(thread_id, num_turns, timeout=_t(timeout))

    # pending requests and thread bindings (what `paddock requests` and `paddock sessions` list) ---

    def pending_requests(self, thread_id: str | None = None, *, timeout: float | None = None) -> list[PendingRequest]:
        """The approval (``request.opened``) and user-input (``user-input.requested``) requests
        still open, across threads or for ``thread_id``, oldest first. Every request opened before
        the call is included; one resolved, whose turn completed or whose session exited is not."""
        self._check_open()
        open_now = self._pending.snapshot(timeout=_t(timeout))
        return [e for e in open_now if thread_id is None or e.thread_id == thread_id]

    def list_threads(self) -> list[Binding]:
        """Every thread bound in the state directory (live or not), as persisted."""
        self._check_open()
        return self._store.list()

    # events -------------------------------------------------------------------------------------

    def subscribe(
        self,
        thread_id: str | None = None,
        instance_id: str | None = None,
        types: Iterable[str] | None = None,
        from_seq: int | None = None,
        assistant_delivery: Literal["streaming", "buffered"] = "streaming",
        *,
        max_buffered: int | None = None,
    ) -> Subscription:
        """Subscribe to canonical events, optionally filtered; ``from_seq`` replays from the log
        first, then continues live with no gap and no duplicate. See :class:`paddock.actors.Subscription`.

        ``max_buffered`` bounds the events held in memory for this subscriber (default 20,000).
        Beyond it a subscriber that falls behind reads the event log to catch up; with the log
        off, the newest events are dropped for it and a ``runtime.warning``
        (``subscription.gap``) says how many."""
        self._check_open()
        for name, value in (("thread_id", thread_id), ("instance_id", instance_id)):
            if value is not None:
                _check_text("subscribe", name, value)
        return self._hub.subscribe(
            thread_id=thread_id,
            instance_id=instance_id,
            types=tuple(types) if types is not None else None,
            from_seq=from_seq,
            assistant_delivery=assistant_delivery,
            max_buffered=max_buffered,
        )

    def compact_events(self, before_seq: int) -> int:
        """Delete logged events with ``seq < before_seq``; returns how many were removed."""
        return self._hub.compact(before_seq)

    # closing ------------------------------------------------------------------------------------

    def close(self, *, timeout: float = 10.0) -> None:
        """Stop every session and process, flush the event log, and release the state directory.

        After it returns no process the runtime started is alive and every live session has
        emitted ``session.exited``. Bindings stay (status ``closed``) so threads resume on demand
        after the next :meth:`open`. Idempotent.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
        deadline = time.monotonic() + timeout
        self._stop.set()
        live = dict(self._live)
        self._close_adapters(deadline)
        try:
            self._store.set_status(live, "closed")  # one commit for every live thread
        except PaddockError:
            pass
        self._live.clear()
        try:
            self._hub.flush(timeout=max(0.25, deadline - time.monotonic()))
        except PaddockError:
            pass
        self._tracker.close()
        self._pending.close()
        self._hub.close(timeout=max(0.25, deadline - time.monotonic()))
        for t in self._threads:
            t.join(timeout=1.0)
        self._store.close()
        self._owner.release()  # last: the next owner finds the log and bindings complete
        _open_runtimes.discard(self)

    def _close_adapters(self, deadline: float) -> None:
        """Close every instance at once, all under the one ``deadline`` (thread: the closer,
        plus up to 32 short-lived closer threads taking instances in turn). Each instance's
        teardown waits out its own graces (the shim gives leftovers 1 s); done one after
        another they would add up past any timeout. If closers are still running at the
        deadline (hundreds of teardowns at once lag under load), every process this host holds a
        lease for is SIGKILLed at once; the closers then get 0.5 s more to finish their
        bookkeeping."""
        adapters = [inst.adapter for inst in self._instances.values() if inst.adapter is not None]

        def close_one(adapter: Any) -> None:
            try:
                adapter.close(timeout=max(0.0, deadline - time.monotonic()))
            except PaddockError:
                pass
            except Exception:  # a driver bug must not stop the others from closing
                pass

        todo = list(reversed(adapters))

        def worker() -> None:
            while True:
                try:
                    adapter = todo.pop()  # list.pop is atomic: no lock needed
                except IndexError:
                    return
                close_one(adapter)

        # A bounded pool: hundreds of teardowns polling at once would starve each other (and
        # this thread) of the GIL; past the deadline the rest close at once (SIGKILL) anyway.
        threads = [threading.Thread(target=worker, name="paddock-close", daemon=True)
                   for _ in range(min(len(adapters), _CLOSERS))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        if any(t.is_alive() for t in threads):
            # Backstop: under load, hundreds of teardowns at once lag behind the deadline.
            # Every process this host started has a lease: kill them all now, at once.
            from paddock.supervisors import LeaseStore

            try:
                LeaseStore(self.state_dir).kill_all()
            except OSError:
                pass
            for t in threads:
                t.join(max(0.0, deadline + 0.5 - time.monotonic()))

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # internals ----------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosedError(None, "the runtime is closed")
        failed = self._hub_failed or self._hub.failure
        if failed is not None:
            # Without the hub no event can be logged or delivered: refuse work instead of losing it.
            raise PersistenceError("publish events", f"{failed}; close this runtime and open it again")

    def _thread_lock(self, thread_id: str) -> threading.Lock:
        with self._lock:
            return self._thread_locks.setdefault(thread_id, threading.Lock())

    def _live_adapter(self, thread_id: str, operation: str):
        self._check_open()
        _check_text(operation, "thread_id", thread_id)
        instance_id = self._live.get(thread_id)
        if instance_id is None:
            binding = self._store.get(thread_id)
            if binding is None:
                raise SessionNotFoundError(thread_id)
            raise SessionClosedError(thread_id, f"its session is {binding.status}")
        return self._adapter(instance_id)

    def _session_adapter(self, thread_id: str, operation: str, *, timeout: float | None):
        """The adapter of a live session, resuming a reaped/closed/exited one on demand."""
        instance_id = self._live.get(thread_id)
        if instance_id is not None:
            adapter = self._adapter(instance_id)
            if adapter.has_session(thread_id):
                return adapter
        binding = self._store.get(thread_id)
        if binding is None:
            raise SessionNotFoundError(thread_id)
        if binding.status not in RESUMABLE:
            raise SessionClosedError(thread_id, f"it was {binding.status}; call start_session() to resume it")
        self.start_session(
            thread_id,
            instance=binding.instance_id,
            cwd=binding.cwd,
            runtime_mode=binding.runtime_mode,  # type: ignore[arg-type]
            interaction_mode=binding.interaction_mode,  # type: ignore[arg-type]
            model=binding.model,
            timeout=timeout,
        )
        return self._adapter(binding.instance_id)

    def _stop_live(self, thread_id: str, *, reason: str, timeout: float | None) -> None:
        instance_id = self._live.pop(thread_id, None)
        self._last_used.pop(thread_id, None)
        if instance_id is None:
            return
        adapter = self._instances[instance_id].adapter
        if adapter is not None and adapter.has_session(thread_id):
            adapter.stop_session(thread_id, timeout=_t(timeout))

    def _track(self) -> None:
        """Tracker thread: keeps binding statuses in step with the event stream."""
        while not self._stop.is_set():
            try:
                event = self._tracker.get(timeout=0.5)
            except PaddockError:
                return
            if event is None:
                if self._tracker.ended:  # the hub stopped: nothing more will come
                    if not self._stop.is_set():
                        self._hub_failed = self._hub.failure or "the event hub stopped (its log could not be written)"
                    return
                continue
            try:
                if event.type == "turn.completed":
                    if event.thread_id in self._live:
                        self._last_used[event.thread_id] = time.monotonic()
                    # Only a running turn becomes ready: a stop racing the turn's end wins.
                    self._store.update(
                        event.thread_id, only_if={"running"}, status="ready", last_error=event.error
                    )
                elif event.type == "session.exited":
                    if event.reason not in ("stopped", "closed") and event.thread_id in self._live:
                        self._store.update(
                            event.thread_id, only_if={"ready", "running"}, status="exited", last_error=event.reason
                        )
            except PaddockError:
                pass

    def _reap_idle(self) -> None:
        """Reaper thread: stops sessions idle for longer than ``idle_timeout``."""
        idle = self._settings.idle_timeout
        period = max(0.05, min(idle / 4, 30.0))
        while not self._stop.wait(period):
            now = time.monotonic()
            for thread_id, instance_id in list(self._live.items()):
                if now - self._last_used.get(thread_id, now) < idle:
                    continue
                adapter = self._instances[instance_id].adapter
                if adapter is None:
                    continue
                session = next((s for s in adapter.list_sessions() if s.thread_id == thread_id), None)
                if session is not None and session.active_turn_id:
                    continue
                lock = self._thread_lock(thread_id)
                if not lock.acquire(timeout=0.1):
                    continue
                try:
                    if self._live.get(thread_id) == instance_id:
                        self._stop_live(thread_id, reason="idle", timeout=10.0)
                        self._store.update(thread_id, status="idle")
                except PaddockError:
                    pass
                finally:
                    lock.release()


_open_runtimes: weakref.WeakSet[Runtime] = weakref.WeakSet()


@atexit.register
def _close_open_runtimes() -> None:
    for rt in list(_open_runtimes):
        try:
            rt.close(timeout=5.0)
        except Exception:
            pass


def _mask_error(exc: PaddockError, redactor: Any) -> PaddockError:
    """Mask the instance's secrets in ``exc`` (its message and every text attribute, such as a
    ProcessError's ``stderr_tail``), in place; returns it."""
    if redactor is not None:
        for name, value in list(vars(exc).items()):
            if isinstance(value, str):
                setattr(exc, name, redactor.mask(value))
        exc.args = tuple(redactor.mask(a) if isinstance(a, str) else a for a in exc.args)
    return exc


def _t(timeout: float | None, default: float = DEFAULT_TIMEOUT) -> float:
    return default if timeout is None else timeout


def _check_id(operation: str, name: str, value: object) -> None:
    if not isinstance(value, str) or not value or len(value) > 256:
        raise ValidationError(operation, f"{name} must be a non-empty string of at most 256 characters")
    _check_text(operation, name, value)


def _check_text(operation: str, name: str, value: object, thread_id: str | None = None) -> None:
    """Refuse text that cannot be encoded as UTF-8 (a lone surrogate such as ``"\\ud800"``):
    it would fail later, in a store, a pipe or an agent, with a foreign error. Strings nested in
    mappings and sequences (answers) are checked too."""
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                where = {"thread_id": thread_id} if thread_id is not None and thread_id is not value else {}
                raise ValidationError(
                    operation, f"{name} is not valid text: {exc.reason} at index {exc.start}", **where
                ) from None
        elif isinstance(item, Mapping):
            todo.extend(item.keys())
            todo.extend(item.values())
        elif isinstance(item, (list, tuple)):
            todo.extend(item)


def _resumed(session: Session, cursor) -> bool:
    return session.resumed
