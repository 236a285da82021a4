"""The instance table: the configured instances of a runtime, each with its driver, decoded
config, private home and environment, secrets, availability and (created on first use) adapter.

Thread-safe: the table is built by the opener; adapters are created under each instance's lock.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import msgspec

from paddock._instances._confinement import ConfinementPlan, describe_confinement, plan_confinement
from paddock._instances._config import InstanceEntry, RuntimeConfig, issue_from
from paddock._instances._handoff import InstanceHandoff, ThreadHandoff, ThreadHandoffFiles
from paddock._instances._isolation import build_env, instance_home, secret_values
from paddock._instances._limits import plan_limits
from paddock._instances._probes import credentials_present, endpoint_reachable
from paddock._state._dir import private_dir
from paddock.actors import HubHandle, Redactor, SessionAdapter
from paddock.contract import (
    Capabilities,
    ConfigError,
    ConfinementInfo,
    DriverError,
    InstanceNotFoundError,
    ModelInfo,
    PaddockError,
    ProviderAdapter,
    mcp_secrets,
)
from paddock.drivers import BUILT_IN_DRIVERS, DriverConfig, DriverSpec, InstanceContext, ModelAccess, model_access
from paddock.drivers.ray import Prepared, placed_spec
from paddock.supervisors import LeaseStore, LimitsInfo, describe_limits, run_command

__all__ = ["InstanceInfo", "InstanceSlot", "InstanceTable", "mask_error"]

_PROBE_TTL = 300.0
_CLOSERS = 32  # threads closing instances at once in close_all
_probe_cache: dict[tuple[str, str], tuple[float, str | None]] = {}
_probe_lock = threading.Lock()


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
    placement: Literal["local", "ray"] = "local"
    node: str | None = None
    """A placed instance's Ray node (id prefix, address, worker pid) once placed."""
    ray: str | None = None
    """A placed instance's Ray status: ``not placed``, ``placing``, ``alive``, ``restarting``,
    ``failed: ...``, ``unavailable: ...``, ``closed``."""
    confinement: ConfinementInfo | None = None
    """What the kernel confines the instance's agents to (``None``: not planned here, e.g. a
    placed instance or an unknown driver)."""
    limits: LimitsInfo | None = None
    """The instance's resource limits and what enforces them (``None``: no ``limits`` key)."""


class _Instance:
    """Book-keeping for one configured instance (its adapter is set under ``lock``)."""

    def __init__(self, instance_id: str, driver: str) -> None:
        self.id = instance_id
        self.driver = driver
        self.spec: DriverSpec | None = None
        self.config: DriverConfig | None = None
        self.reason: str | None = None
        self.home: Path | None = None
        self.env: dict[str, str] = {}
        self.access: ModelAccess = ModelAccess()
        self.adapter: ProviderAdapter | None = None
        self.lock = threading.Lock()
        self.redactor: Redactor | None = None
        self.secrets: set[str] = set()
        self.handoff = InstanceHandoff()
        self.workspace: Literal["shared", "worktree"] = "shared"
        self.threads: ThreadHandoffFiles | None = None
        self.placement: Literal["local", "ray"] = "local"
        self.confinement: ConfinementPlan | None = None
        self.limits: LimitsInfo | None = None


class InstanceSlot:
    """One available instance as a session start needs it, looked up once
    (:meth:`InstanceTable.slot`): its adapter (created), driver, the hand-off its config gives
    every session and its threads' persisted hand-offs, and its secrets and masking. Thread: the
    caller's; the methods are thread-safe."""

    __slots__ = ("_inst", "_table", "adapter", "confinement", "driver", "files", "handoff", "instance_id", "workspace")

    def __init__(self, table: InstanceTable, inst: _Instance, adapter: ProviderAdapter) -> None:
        assert inst.threads is not None  # set by _prepare for every instance the table can start
        self._table, self._inst = table, inst
        self.instance_id = inst.id
        self.driver = inst.driver
        self.adapter = adapter
        self.handoff: InstanceHandoff = inst.handoff
        self.files: ThreadHandoffFiles = inst.threads
        self.workspace: Literal["shared", "worktree"] = inst.workspace
        """The instance's ``workspace`` key: where its threads run unless a start says otherwise."""
        self.confinement: ConfinementPlan | None = inst.confinement
        """The instance's confinement (``None``: not planned here, e.g. placed on Ray)."""

    def add_secrets(self, values: set[str] | tuple[str, ...]) -> None:
        """As :meth:`InstanceTable.add_secrets`, for this instance."""
        self._table.add_secrets(self._inst, values)

    def mask(self, exc: PaddockError) -> PaddockError:
        """``exc`` with the instance's secrets masked (in place)."""
        return mask_error(exc, self._inst.redactor)


class InstanceTable:
    """Config entries -> instances. Unknown drivers and unusable binaries are listed as
    unavailable with a reason; each instance's secrets are registered with the hub for redaction
    before anything of it runs."""

    def __init__(self, config: RuntimeConfig, *, state_dir: Path, hub: HubHandle) -> None:
        self._config = config
        self._state_dir = state_dir
        self._hub = hub
        self._by_id: dict[str, _Instance] = {}
        for entry in config.instances:
            self._by_id[entry.instance_id] = self._prepare(entry)
        self._plan_confinement(os.getcwd())

    def _plan_confinement(self, opened_in: str) -> None:
        """Each local instance's confinement, knowing every other instance's home; a
        ``"required"`` one the kernel cannot confine becomes unavailable, naming why."""
        homes = {inst.id: str(inst.home) for inst in self._by_id.values() if inst.home is not None}
        for inst in self._by_id.values():
            if inst.home is None or inst.config is None or inst.placement != "local":
                continue
            urls = [u for u in (getattr(s, "url", None) for s in inst.handoff.mcp_servers) if isinstance(u, str)]
            inst.confinement = plan_confinement(
                inst.id, inst.config, home=str(inst.home), env=inst.env, state_dir=str(self._state_dir),
                other_homes=[h for i, h in homes.items() if i != inst.id], opened_in=opened_in, mcp_urls=urls)
            if inst.confinement.unavailable and inst.reason is None:
                inst.reason = inst.confinement.unavailable

    def _prepare(self, entry: InstanceEntry) -> _Instance:
        inst = _Instance(entry.instance_id, entry.driver)
        inst.handoff = entry.handoff
        inst.workspace = entry.workspace
        spec = BUILT_IN_DRIVERS.get(entry.driver)
        if spec is None:
            inst.reason = f"unknown driver {entry.driver!r}; known drivers: {', '.join(sorted(BUILT_IN_DRIVERS))}"
            return inst
        inst.spec = spec
        try:
            inst.config = msgspec.convert(entry.table, spec.config_type)
        except msgspec.ValidationError as exc:
            raise ConfigError(self._config.path, issue_from(exc, entry.instance_id)) from None
        if entry.placement is not None:
            # Placed on Ray: home, environment, probe and model access are built on the node
            # (prepare_instance runs there); the host masks what the config itself holds.
            inst.spec = placed_spec(spec, entry.placement, entry.table, prepare_instance)
            inst.placement = "ray"
            secrets = secret_values(dict(getattr(inst.config, "env", {}) or {}),
                                    args=getattr(inst.config, "args", ()) or ())
            try:
                secrets |= set(model_access(inst.config, os.environ).secrets)
            except LookupError:
                pass  # the variable is the node's to have
        else:
            prepared = prepare_instance(inst.id, inst.config, str(self._state_dir))
            inst.home = Path(prepared.home)
            inst.env = prepared.env
            inst.access = prepared.access
            inst.reason = prepared.reason
            secrets = set(prepared.secrets)
        if entry.limits is not None:
            inst.limits, limits_env = plan_limits(entry.limits, placed=entry.placement is not None)
            inst.env = {**inst.env, **limits_env}
        secrets |= set(mcp_secrets(inst.handoff.mcp_servers))  # every env and headers value
        # The thread's merged MCP servers stay on the host, in the home this host would give the
        # instance (a placed instance's agent home is on its node).
        inst.threads = ThreadHandoffFiles(
            inst.home if inst.home is not None
            else instance_home(self._state_dir, entry.instance_id, getattr(inst.config, "home", None)))
        self.add_secrets(inst, secrets)
        if inst.reason is None:
            inst.reason = self._probe(inst)
        return inst

    def _probe(self, inst: _Instance) -> str | None:
        """Why the instance is unavailable, or ``None``. Cached per (binary, home) for 5 minutes;
        a probe never starts a session."""
        probe = inst.spec.probe if inst.spec is not None else None
        if probe is None:
            return None
        if inst.placement != "local":
            return probe(self._context(inst))  # on the host it only checks Ray is installed: no cache
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
        assert inst.config is not None  # _prepare decoded it before any probe or create
        return InstanceContext(
            instance_id=inst.id, driver=inst.driver, config=inst.config, home=str(inst.home),
            env=dict(inst.env), state_dir=str(self._state_dir), hub=self._hub, access=inst.access,
            confinement=inst.confinement.rules if inst.confinement is not None else None,
        )

    def add_secrets(self, inst: _Instance | str, values: set[str] | tuple[str, ...]) -> None:
        """Mask ``values`` from now on in the instance's events (the hub), its errors and every
        ``paddock`` log record (thread: the caller's). A session's MCP ``env`` and ``headers``
        values are added before the session starts."""
        inst = self._by_id[inst] if isinstance(inst, str) else inst
        new = set(values) - inst.secrets
        if not new and inst.redactor is not None:
            return
        inst.secrets |= new
        self._hub.add_secrets(inst.id, new)
        inst.redactor = Redactor(inst.secrets)

    @property
    def state_dir(self) -> Path:
        return self._state_dir

    def scratch_dir(self, instance_id: str) -> Path:
        """A private folder for one-shot sessions of the instance (``generate_text``, a catalog
        read): inside the instance's own home, the one place beside its roots a confined agent may
        use (the state dir is hidden from it); in the state dir for an instance whose home is on
        another node. Created 0700 if missing (thread: the caller's)."""
        inst = self._by_id.get(instance_id)
        base = inst.home if inst is not None and inst.home is not None else self._state_dir
        return private_dir(base / "generate")

    def driver(self, instance_id: str) -> str:
        return self._by_id[instance_id].driver

    def configured_model(self, instance_id: str) -> str | None:
        """The instance's configured ``model`` key, or ``None`` (none set, or no such instance)."""
        inst = self._by_id.get(instance_id)
        model = getattr(inst.config, "model", None) if inst is not None else None
        return model if isinstance(model, str) else None

    def thread_handoff(self, instance_id: str, thread_id: str) -> ThreadHandoff | None:
        """The persisted hand-off of ``thread_id`` on ``instance_id``, or ``None`` (an instance
        no longer configured, no file, or an unreadable one)."""
        inst = self._by_id.get(instance_id)
        loaded = inst.threads.load(thread_id) if inst is not None and inst.threads is not None else None
        return loaded if isinstance(loaded, ThreadHandoff) else None

    def handoff(self, instance_id: str) -> tuple[InstanceHandoff, ThreadHandoffFiles]:
        """The instance's own hand-off (config) and its threads' persisted ones."""
        inst = self._by_id[instance_id]
        assert inst.threads is not None  # set by _prepare for every instance the table can start
        return inst.handoff, inst.threads

    def adapter(self, instance_id: str) -> ProviderAdapter:
        """The instance's adapter, created on first use (thread: the caller's). Raises
        :class:`InstanceNotFoundError` for an unknown or unavailable instance."""
        inst = self._by_id.get(instance_id)
        if inst is None:
            raise InstanceNotFoundError(
                instance_id, f"it is not configured; configured: {', '.join(self._by_id) or 'none'}"
            )
        if inst.reason:
            raise InstanceNotFoundError(instance_id, inst.reason, driver=inst.driver)
        with inst.lock:
            if inst.adapter is None:
                assert inst.spec is not None  # an instance without a reason has a known driver
                try:
                    inst.adapter = inst.spec.create(self._context(inst))
                except PaddockError as exc:
                    raise mask_error(exc, inst.redactor)
                except Exception as exc:  # a driver bug must not escape as a foreign error
                    error = DriverError(inst.driver, inst.id, f"could not start: {exc!r}")
                    raise mask_error(error, inst.redactor) from exc
            return inst.adapter

    def slot(self, instance_id: str) -> InstanceSlot:
        """The instance with its adapter (created on first use), in one look-up for a session
        start. Raises like :meth:`adapter`."""
        adapter = self.adapter(instance_id)
        return InstanceSlot(self, self._by_id[instance_id], adapter)

    @contextlib.contextmanager
    def adapter_once(self, instance_id: str, *, close_timeout: float = 10.0) -> Iterator[ProviderAdapter]:
        """For a one-shot call: the instance's adapter when it was created already, else a
        throwaway one (not in the table, closed on exit with every process it started), so the
        call leaves no process beyond those the instance already ran. Raises like
        :meth:`adapter` (thread: the caller's)."""
        existing = self.created(instance_id)
        if existing is not None:
            yield existing
            return
        inst = self._by_id.get(instance_id)
        if inst is None or inst.reason:
            self.adapter(instance_id)  # raises the InstanceNotFoundError that names why
        assert inst is not None and inst.spec is not None
        try:
            adapter = inst.spec.create(self._context(inst))
        except PaddockError as exc:
            raise mask_error(exc, inst.redactor)
        except Exception as exc:  # a driver bug must not escape as a foreign error
            error = DriverError(inst.driver, inst.id, f"could not start: {exc!r}")
            raise mask_error(error, inst.redactor) from exc
        try:
            yield adapter
        finally:
            adapter.close(timeout=close_timeout)

    def created(self, instance_id: str) -> ProviderAdapter | None:
        """The instance's adapter if it was created, else ``None`` (creates nothing)."""
        inst = self._by_id.get(instance_id)
        return inst.adapter if inst is not None else None

    def endpoint_of(self, instance_id: str) -> tuple[str, float] | None:
        """``(endpoint, endpoint_timeout)`` of an instance running on this host with a model
        endpoint (the endpoint watch checks it from here), else ``None`` (thread: any)."""
        inst = self._by_id.get(instance_id)
        endpoint = getattr(inst.config, "endpoint", None) if inst is not None else None
        if inst is None or endpoint is None or inst.placement != "local":
            return None
        return endpoint, float(getattr(inst.config, "endpoint_timeout", 30.0))

    def adapters(self) -> list[ProviderAdapter]:
        """Every adapter created so far."""
        return [inst.adapter for inst in self._by_id.values() if inst.adapter is not None]

    def mask(self, instance_id: str, exc: PaddockError) -> PaddockError:
        """``exc`` with the instance's secrets masked (in place)."""
        inst = self._by_id.get(instance_id)
        return mask_error(exc, inst.redactor if inst is not None else None)

    def infos(self) -> list[InstanceInfo]:
        """Every configured instance with its status and, once known, its capabilities."""
        out = []
        for inst in self._by_id.values():
            caps = None
            models = None
            if inst.adapter is None and inst.placement != "local" and not inst.reason:
                with contextlib.suppress(PaddockError):  # a placed one's proxy places nothing
                    self.adapter(inst.id)
            if inst.adapter is not None:
                caps = inst.adapter.capabilities()
                catalog = getattr(inst.adapter, "models", None)  # optional adapter hook
                models = catalog() if callable(catalog) else None
            elif inst.spec is not None and inst.reason is None:
                caps = inst.spec.capabilities
            placed = _placement_info(inst)
            reason = inst.reason or placed.get("reason")  # a placed instance: its cluster answers?
            out.append(InstanceInfo(
                id=inst.id, driver=inst.driver, status="unavailable" if reason else "available",
                reason=reason, capabilities=caps,
                home=placed.get("home") or (str(inst.home) if inst.home else None),
                binary=getattr(inst.config, "binary", None), models=models,
                placement=inst.placement, node=placed.get("node"), ray=placed.get("ray"),
                confinement=inst.confinement.info if inst.confinement is not None else None,
                limits=inst.limits,
            ))
        return out

    def diagnose(self, timeout: float) -> list[dict[str, Any]]:
        """For each instance: id, driver, status, reason, binary, version, auth state and home
        (the driver's ``diagnose`` hook, else ``<binary> --version``), the login state where the
        agent reports one, whether its model endpoint answers (TCP and HTTP), where its
        credentials come from (names only), and ``problems``: what will keep it from working.
        Never starts a session; every instance is checked at once (caller's thread plus one
        worker per instance, at most 16), each probe bounded by ``timeout``."""
        infos = self.infos()
        if not infos:
            return []
        with ThreadPoolExecutor(max_workers=min(16, len(infos)), thread_name_prefix="paddock-doctor") as pool:
            return list(pool.map(lambda info: self._diagnose_one(info, timeout), infos))

    def _diagnose_one(self, info: InstanceInfo, timeout: float) -> dict[str, Any]:
        inst = self._by_id[info.id]
        report: dict[str, Any] = {
            "id": info.id, "driver": info.driver, "status": info.status, "reason": info.reason,
            "binary": info.binary, "version": None, "auth": "unknown", "home": info.home,
            "placement": info.placement, "node": info.node, "ray": info.ray,
            "confinement": describe_confinement(info.confinement) if info.confinement is not None else None,
            "limits": describe_limits(info.limits) if info.limits is not None else None,
        }
        hook = inst.spec.diagnose if inst.spec is not None else None
        if info.placement != "local":
            # Its binary and version are the node's (the node's probe checks them at
            # placement); before that, the hook says whether the cluster can place it.
            if hook is not None and info.status == "available" and info.ray == "not placed":
                report.update(hook(self._context(inst)))
            report["problems"] = []
            return report
        if hook is not None and info.status == "available":
            try:
                report.update(hook(self._context(inst)))
            except PaddockError as exc:
                report["reason"] = str(exc)
        elif info.binary and info.status == "available":
            binary = shutil.which(info.binary, path=inst.env.get("PATH")) or info.binary
            try:
                res = run_command([binary, "--version"], env=inst.env, timeout=timeout)
                text = (res.stdout or res.stderr).strip()
                report["version"] = text.splitlines()[0] if text else None
            except PaddockError as exc:
                report["version"] = f"unknown ({exc})"
        self._check(inst, report, timeout)
        return report

    @staticmethod
    def _check(inst: _Instance, report: dict[str, Any], timeout: float) -> None:
        """Add what doctor checks rather than reports: endpoint, credentials, problems."""
        problems: list[str] = []
        if inst.access.endpoint and report["status"] == "available":
            ok, said = endpoint_reachable(inst.access.endpoint, min(timeout, 5.0))
            report["endpoint_check"] = said
            if not ok:
                problems.append(f"the model endpoint {inst.access.endpoint} does not answer: {said}")
        if inst.driver != "local":
            found = credentials_present(inst.access.api_key, inst.env)
            report["credentials"] = found or "none in the config or the instance env"
            if found is None and str(report.get("login", "")).startswith("not logged in"):
                problems.append("no credentials and the agent is not logged in")
        report["problems"] = problems

    def close_all(self, kill_at: float, until: float) -> tuple[int, ...]:
        """Close every created adapter at once and confirm that no process is left; returns the
        pids still alive at ``until`` (empty: none). Thread: the closer, plus up to 32 short-lived
        closer threads taking adapters in turn.

        Each teardown waits out its own graces (the shim gives leftovers 1 s); done one after
        another they would add up past any timeout, and hundreds at once lag under load. So the
        graceful close has until ``kill_at`` (deadline-driven, not what is left after it): then
        every instance is told to restart nothing (its supervisors stop their children at once),
        and every process this host's leases cover, or covered when the close began, is SIGKILLed
        at once. That kill always runs, as the final check: it waits (until ``until``) for every
        one to be gone, killing again what was spawned meanwhile. The closers then get until
        ``until`` to finish their bookkeeping (``session.exited``)."""
        todo = list(reversed(self.adapters()))

        def worker() -> None:
            while True:
                try:
                    adapter = todo.pop()  # list.pop is atomic: no lock needed
                except IndexError:
                    return
                try:
                    adapter.close(timeout=max(0.0, kill_at - time.monotonic()))
                except Exception:  # a driver bug must not stop the others from closing
                    pass

        # A bounded pool: hundreds of teardowns polling at once would starve each other (and
        # this thread) of the GIL; past kill_at the rest go at once (SIGKILL) anyway.
        threads = [threading.Thread(target=worker, name="paddock-close", daemon=True)
                   for _ in range(min(len(todo), _CLOSERS))]
        for t in threads:
            t.start()
        leases = LeaseStore(self._state_dir)
        leases.remember()  # the trees as they are now: a process re-parented away is still found
        for t in threads:
            t.join(max(0.0, kill_at - time.monotonic()))
        if any(t.is_alive() for t in threads):
            for adapter in self.adapters():  # again: one a start in flight created meanwhile too
                if isinstance(adapter, SessionAdapter):
                    adapter.request_close(kill_at)  # restart nothing the kill ends
        survivors = leases.kill_all(until=until)
        for t in threads:
            t.join(max(0.0, until - time.monotonic()))
        return survivors


def prepare_instance(instance_id: str, config: DriverConfig, state_dir: str) -> Prepared:
    """An instance's private home, child environment, model access and secrets, built against
    this process's environment (thread: caller). A placed instance runs it on its node."""
    home = instance_home(Path(state_dir), instance_id, getattr(config, "home", None))
    pass_env = getattr(config, "pass_env", ()) or ()
    env = build_env(home=home, configured=getattr(config, "env", {}) or {}, pass_env=pass_env)
    reason = None
    try:
        access = model_access(config, os.environ)
    except LookupError as exc:
        access, reason = ModelAccess(), str(exc)
    secrets = secret_values(env, pass_env=pass_env, args=getattr(config, "args", ()) or ())
    secrets |= set(access.secrets)  # the configured key (api_key / api_key_env)
    return Prepared(home=str(home), env=env, access=access, secrets=sorted(secrets), reason=reason)


def _placement_info(inst: _Instance) -> dict[str, Any]:
    """``node``/``ray``/``home`` of a placed instance's proxy (empty for a local one)."""
    info = getattr(inst.adapter, "placement_info", None)
    if callable(info):
        result: dict[str, Any] = info()
        return result
    return {"ray": "not placed"} if inst.placement == "ray" else {}


def mask_error(exc: PaddockError, redactor: Redactor | None) -> PaddockError:
    """Mask the instance's secrets in ``exc`` (its message and every text attribute, such as a
    ProcessError's ``stderr_tail``), in place; returns it."""
    if redactor is not None:
        for name, value in list(vars(exc).items()):
            if isinstance(value, str):
                setattr(exc, name, redactor.mask(value))
        exc.args = tuple(redactor.mask(a) if isinstance(a, str) else a for a in exc.args)
    return exc
