"""An instance's ``CODEX_HOME``: a private folder, or a shadow of a main home, and the generated
``config.toml`` in it.

Shadow homes (two accounts sharing one history): the shadow holds its own ``config.toml``,
``auth.json`` and ``models_cache.json`` as real files, and symlinks for :data:`SHARED_ENTRIES`
into the main home. SQLite state is shared through Codex's own ``sqlite_home`` key rather than
file links: Codex opens several versioned databases (``state_5.sqlite``, ``logs_2.sqlite``...)
with WAL side files, and a new version name would silently stop being shared.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from paddock.contract import ConfigError, JsonObject, JsonValue, deep_merge

from paddock.drivers._toml import dumps

__all__ = [
    "API_KEY_VAR",
    "OFFLINE_SAFE",
    "PRIVATE_FILES",
    "PROVIDER_ID",
    "SHARED_ENTRIES",
    "build_config",
    "check_shadow",
    "prepare_home",
    "write_config",
]

SHARED_ENTRIES = ("sessions", "archived_sessions", "skills", "plugins", "cache", "log")
"""Folders of a shadow home that are symlinks into the main home."""
PRIVATE_FILES = ("auth.json", "models_cache.json")
"""Files a shadow home keeps for itself (never links)."""
PROVIDER_ID = "paddock"
"""The ``model_providers`` entry built from the common ``endpoint`` key."""
API_KEY_VAR = "PADDOCK_CODEX_API_KEY"
"""The child variable holding the instance's key (the provider's ``env_key``)."""

OFFLINE_SAFE: JsonObject = {
    # codex-app-server.md section 8: without the three feature flags the app-server syncs
    # curated plugins from github.com and chatgpt.com at start; the rest is telemetry.
    "check_for_update_on_startup": False,
    "features": {"plugins": False, "remote_plugin": False, "apps": False},
    "analytics": {"enabled": False},
    "feedback": {"enabled": False},
    "otel": {"exporter": "none", "trace_exporter": "none", "metrics_exporter": "none"},
}
"""The defaults of every generated ``config.toml`` (override any of them with ``config``)."""


def _private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)


def _abs(path: Path | str) -> Path:
    return Path(os.path.abspath(os.path.expanduser(path)))


def check_shadow(codex_home: Path | str, main_home: Path | str) -> None:
    """Refuse a shadow home that :func:`prepare_home` would refuse (:class:`ConfigError`),
    without changing anything on disk: a shadow equal to or inside the main home, a real file or
    folder where a shared link belongs, an ``auth.json`` that is a symlink."""
    shadow, main = _abs(codex_home), _abs(main_home)
    if shadow == main or (shadow.exists() and main.exists() and shadow.resolve() == main.resolve()):
        raise ConfigError(str(shadow), "the shadow home is the main home itself; set `shadow_home` to another folder")
    if main in shadow.parents:
        raise ConfigError(str(shadow), f"the shadow home lies inside the main home {str(main)!r}")
    auth = shadow / "auth.json"
    if auth.is_symlink():
        raise ConfigError(str(auth), "auth.json of a shadow home is a symlink; a shadow keeps its own credentials "
                                     "as a real file")
    for name in SHARED_ENTRIES:
        link = shadow / name
        if link.exists() and not link.is_symlink():
            kind = "folder" if link.is_dir() else "file"
            raise ConfigError(str(link), f"a real {kind} where a link to {str(main / name)!r} belongs; move it away")


def prepare_home(codex_home: Path | str, main_home: Path | str | None = None) -> Path:
    """Create ``codex_home`` (0700); with ``main_home``, make it a shadow of it.

    Refused with :class:`ConfigError` (see :func:`check_shadow`). Links pointing elsewhere are
    re-pointed; running it again changes nothing (idempotent). Returns the absolute
    ``codex_home``. Thread: the caller's.
    """
    home = _abs(codex_home)
    if main_home is None:
        _private_dir(home)
        return home
    main = _abs(main_home)
    check_shadow(home, main)
    _private_dir(main)
    _private_dir(home)
    for name in SHARED_ENTRIES:
        link = home / name
        target = main / name
        _private_dir(target)
        if link.is_symlink():
            if os.readlink(link) == str(target):
                continue
            link.unlink()  # a link to somewhere else (or a dangling one): re-point it
        link.symlink_to(target, target_is_directory=True)
    cache = home / "models_cache.json"
    if cache.is_symlink():
        cache.unlink()  # a shared model cache would show one account's catalog to the other
    return home


def build_config(
    *,
    endpoint: str | None,
    has_key: bool,
    model: str | None,
    sqlite_home: str | None,
    overrides: Mapping[str, JsonValue],
) -> JsonObject:
    """The ``config.toml`` content: :data:`OFFLINE_SAFE`, the ``model_providers`` entry for
    ``endpoint`` (the Responses API at ``<endpoint>/v1``, key from :data:`API_KEY_VAR`), the
    default ``model``, ``sqlite_home`` for shadow homes, then ``overrides`` merged deeply."""
    data = dict(OFFLINE_SAFE)
    if model:
        data["model"] = model
    if sqlite_home:
        data["sqlite_home"] = sqlite_home
    if endpoint:
        provider: JsonObject = {
            "name": PROVIDER_ID,
            "base_url": endpoint,
            "wire_api": "responses",
            "requires_openai_auth": False,
        }
        if has_key:
            provider["env_key"] = API_KEY_VAR
        data["model_provider"] = PROVIDER_ID
        data["model_providers"] = {PROVIDER_ID: provider}
    return deep_merge(data, overrides)


def write_config(codex_home: Path, data: Mapping[str, JsonValue]) -> Path:
    """Write ``config.toml`` (0600) atomically; returns its path."""
    path = codex_home / "config.toml"
    tmp = codex_home / ".config.toml.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(dumps(data))
    os.replace(tmp, path)
    return path
