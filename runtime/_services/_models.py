"""Model catalogs: ``Runtime.models(instance)`` and the model-name advice of ``start_session`` and
``send_turn`` (docs/architecture.md, "Models and attachments").

Each instance's catalog is cached for :data:`MODELS_TTL` seconds (like the probe cache). It comes
from the adapter's ``list_models`` hook where the protocol lists models without a session (Codex
``model/list``, OpenCode's providers); otherwise from the catalog a session reported when it
started (Claude's ``initialize`` answer, an ACP session's ``models`` / ``model_config`` option),
opening a throwaway session in an empty private folder when none has run yet. The check uses only
what is known already: it never starts a process, and it never refuses (a model gateway serves
names no catalog lists; only the agent may refuse a model).
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
import uuid

from paddock._instances._table import InstanceTable
from paddock.contract import ModelInfo, PaddockError, ProviderAdapter, StartSessionInput, model_advice

__all__ = ["MODELS_TTL", "ModelCatalogs"]

MODELS_TTL = 300.0
"""Seconds a fetched catalog is reused before ``models()`` asks the agent again."""


class ModelCatalogs:
    """The instances' model catalogs, fetched on demand and cached per instance. Thread-safe."""

    def __init__(self, instances: InstanceTable, ephemeral: set[str]) -> None:
        self._instances = instances
        self._ephemeral = ephemeral
        self._cache: dict[str, tuple[float, tuple[ModelInfo, ...]]] = {}
        self._lock = threading.Lock()

    def models(self, instance: str, *, refresh: bool, timeout: float) -> list[ModelInfo]:
        """The catalog of ``instance`` (fetched again with ``refresh`` or past the TTL); empty
        when the agent lists no models. Raises what starting the instance raises. Thread: the
        caller's; may start the instance's process or a throwaway session."""
        if not refresh:
            with self._lock:
                hit = self._cache.get(instance)
            if hit is not None and time.monotonic() - hit[0] < MODELS_TTL:
                return list(hit[1])
        models = self._fetch(instance, timeout)
        with self._lock:
            self._cache[instance] = (time.monotonic(), models)
        return list(models)

    def known(self, instance: str) -> tuple[ModelInfo, ...]:
        """What is known of the catalog without asking the agent: the cached fetch, else what a
        running adapter reported; empty when nothing is known. Never starts a process."""
        with self._lock:
            hit = self._cache.get(instance)
        if hit is not None and time.monotonic() - hit[0] < MODELS_TTL:
            return hit[1]
        adapter = self._instances.created(instance)
        reported = getattr(adapter, "models", None) if adapter is not None else None  # optional adapter hook
        return (reported() or ()) if callable(reported) else ()

    def advice(self, model: str | None, instance: str) -> str | None:
        """A sentence for a ``runtime.warning`` when the known catalog does not list ``model``
        (naming close matches), else ``None``: also when no catalog is known, or ``model`` is the
        instance's own configured model. Never refuses and never starts a process."""
        if model is None or model == self._instances.configured_model(instance):
            return None
        return model_advice(model, [m.id for m in self.known(instance)])

    def _fetch(self, instance: str, timeout: float) -> tuple[ModelInfo, ...]:
        deadline = time.monotonic() + timeout
        try:
            with self._instances.adapter_once(instance) as adapter:
                listed = getattr(adapter, "list_models", None)  # every SessionAdapter has it
                models = listed(timeout=timeout) if callable(listed) else None
                if models is None:
                    models = self._from_session(instance, adapter, deadline)
                return tuple(models or ())
        except PaddockError as exc:
            raise self._instances.mask(instance, exc)

    def _from_session(self, instance: str, adapter: ProviderAdapter, deadline: float) -> tuple[ModelInfo, ...] | None:
        """Start a throwaway session (no binding, hidden, in an empty private folder) so the agent
        reports its catalog, then stop it."""
        thread_id = f"models-{uuid.uuid4().hex}"
        cwd = tempfile.mkdtemp(prefix="cwd-", dir=self._instances.scratch_dir(instance))
        self._ephemeral.add(thread_id)
        try:
            adapter.start_session(StartSessionInput(
                thread_id=thread_id, cwd=cwd, runtime_mode="approval-required", workspace_roots=(cwd,),
            ), timeout=max(0.1, deadline - time.monotonic()))
            reported = getattr(adapter, "models", None)  # optional adapter hook
            models = reported() if callable(reported) else None
            return None if models is None else tuple(models)
        finally:
            try:
                if adapter.has_session(thread_id):
                    adapter.stop_session(thread_id, timeout=10.0)
            except PaddockError:
                pass
            self._ephemeral.discard(thread_id)
            shutil.rmtree(cwd, ignore_errors=True)
