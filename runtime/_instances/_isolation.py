"""Per-instance isolation: a private home and an environment built from an allow-list.

Ambient provider credentials never reach an agent unless its instance config names them in
``pass_env`` or sets them in ``env``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from paddock._state._dir import private_dir

__all__ = ["AMBIENT_ALLOW", "CREDENTIAL_PATTERN", "build_env", "instance_home", "secret_values"]

AMBIENT_ALLOW = (
    "PATH",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "USER",
    "LOGNAME",
    "SHELL",
    "SYSTEMROOT",
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    # The host's proxy settings: an agent behind a proxy needs them, and NO_PROXY keeps loopback
    # model servers direct (a proxy URL holding user-info is the host's own choice).
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
)
"""Ambient variables every instance inherits (plus ``LC_*``)."""

CREDENTIAL_PATTERN = re.compile(
    r"^(OPENAI|ANTHROPIC|GEMINI|GOOGLE|CODEX|CLAUDE|COPILOT|GITHUB|GH|AWS|AZURE|OPENROUTER|QWEN|"
    r"DASHSCOPE|XAI|GROK|CURSOR|KIRO|MISTRAL|DEEPSEEK|GROQ|OPENCODE|VERTEX|HF|HUGGINGFACE)(_|$)"
    r"|(_API_KEY|_TOKEN|_SECRET|_PASSWORD)$"
)
"""Names treated as provider credentials: stripped unless an instance passes them on."""


def instance_home(state_dir: Path, instance_id: str, configured: str | None) -> Path:
    """The instance's private home: its configured ``home``, else ``state_dir/instances/<id>``.
    The directory exists when this returns. The default one is 0700 (CLIs keep credentials
    there); a configured one is created 0700 when missing and otherwise left as the user made it."""
    if configured:
        home = Path(configured).expanduser().resolve()
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        return home
    private_dir(state_dir / "instances")
    return private_dir((state_dir / "instances" / instance_id).resolve())


def build_env(
    *,
    home: Path,
    configured: Mapping[str, str] = {},
    pass_env: Iterable[str] = (),
    ambient: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment for an instance's processes.

    It holds the allow-listed ambient variables (never a credential), the ambient variables named
    in ``pass_env``, ``HOME``/XDG/``TMPDIR`` under ``home``, then ``configured`` on top.
    """
    ambient = os.environ if ambient is None else ambient
    env = {
        k: v
        for k, v in ambient.items()
        if (k in AMBIENT_ALLOW or k.startswith("LC_")) and not CREDENTIAL_PATTERN.search(k)
    }
    for name in pass_env:
        if name in ambient:
            env[name] = ambient[name]
    tmp = home / "tmp"
    tmp.mkdir(parents=True, exist_ok=True, mode=0o700)
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        XDG_CACHE_HOME=str(home / ".cache"),
        TMPDIR=str(tmp),
    )
    env.setdefault("PATH", os.defpath)
    env.update({str(k): str(v) for k, v in configured.items()})
    return env


_NOT_SECRET = frozenset({*AMBIENT_ALLOW, "HOME", "TMPDIR", "PWD", "NODE_OPTIONS", "PYTHONPATH"})
_ALWAYS_SECRET = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH)$", re.IGNORECASE)
_KEY_ARG = re.compile(r"key|token|secret|password|passwd|credential|auth", re.IGNORECASE)
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/@\s]*$|^[A-Za-z][A-Za-z0-9+.-]*://[^@\s]*/")


def secret_values(env: Mapping[str, str], *, pass_env: Iterable[str] = (), args: Iterable[str] = ()) -> set[str]:
    """The values of an instance that the event hub masks (``EventHub.add_secrets``).

    - every variable of the instance's ``env`` whose name is a credential
      (:data:`CREDENTIAL_PATTERN`, or ending in ``KEY``/``TOKEN``/``SECRET``/``PASSWORD``/
      ``CREDENTIALS``/``AUTH``), whether configured or passed on;
    - every value passed on with ``pass_env`` (that is what it is for), except the allow-listed
      ambient names, ``HOME``/``TMPDIR``/``XDG_*``/``LC_*``, absolute paths and URLs without
      credentials in them;
    - the value of every key-like option in ``args`` (``--api-key X``, ``--token=X``).

    A configured ``env`` value under an ordinary name (``NODE_ENV = "production"``) is not
    masked: masking ordinary words would mask them in every tool output. Values shorter than
    six characters are never masked (``paddock.actors.MIN_SECRET_CHARS``).
    """
    out: set[str] = set()
    passed = set(pass_env)
    for name, value in env.items():
        if not value or name in _NOT_SECRET or name.startswith(("XDG_", "LC_")):
            continue
        credential = bool(CREDENTIAL_PATTERN.search(name) or _ALWAYS_SECRET.search(name))
        if not credential and name not in passed:
            continue
        if not _ALWAYS_SECRET.search(name) and (os.path.isabs(value) or _URL.match(value)):
            continue
        out.add(value)
    items = list(args)
    for i, arg in enumerate(items):
        if arg.startswith("-") and _KEY_ARG.search(arg.split("=", 1)[0]):
            if "=" in arg:
                out.add(arg.split("=", 1)[1])
            elif i + 1 < len(items):
                out.add(items[i + 1])
    return out
