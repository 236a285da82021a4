"""The ``local`` flavor: the built-in agent (``python -m paddock.drivers.local``) through the ACP adapter.

Runtime modes (the agent's own modes are ``default`` and ``plan``; it asks before every @run and
@write, so the runtime enforces the mode when it answers):

| runtime / interaction mode | native mode | answered without asking the host |
|---|---|---|
| approval-required | default | read, search, think |
| auto-accept-edits | default | also edit, delete, move (@write) |
| full-access | default | everything (allow_always) |
| plan interaction | plan | as the runtime mode says |

Model keys: the local agent calls no model; ``endpoint``, ``api_key`` and ``model`` are passed on
as ``PADDOCK_MODEL_ENDPOINT``, ``PADDOCK_MODEL_API_KEY`` and ``PADDOCK_MODEL`` so that a prompt
like ``@env PADDOCK_MODEL_ENDPOINT`` shows what an instance was given (the hub redacts the key
wherever it would appear in an event).
"""

from __future__ import annotations

import os
import sys

import msgspec

from paddock.contract import Capabilities
from paddock.drivers._access import ModelAccess
from paddock.drivers._registry import InstanceContext
from paddock.drivers.acp import AcpConfig, AcpFlavor

__all__ = ["LOCAL_FLAVOR", "LocalConfig"]


class LocalConfig(AcpConfig, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``[instances.<id>]`` of a ``local`` instance. ``binary`` is the Python interpreter
    (default: the runtime's own); ``args`` are appended (e.g. ``["--buffered"]``)."""

    client_fs: bool | None = True


def _access_env(access: ModelAccess) -> dict[str, str]:
    values = {"PADDOCK_MODEL_ENDPOINT": access.endpoint, "PADDOCK_MODEL_API_KEY": access.api_key,
              "PADDOCK_MODEL": access.model}
    return {k: v for k, v in values.items() if v}


def _command(ctx: InstanceContext) -> list[str]:
    return [ctx.config.binary or sys.executable, "-m", "paddock.drivers.local", *ctx.config.args]


def _env(ctx: InstanceContext) -> dict[str, str]:
    env = {"PADDOCK_LOCAL_STATE_DIR": os.path.join(ctx.home, "local-agent")}
    # The agent is this package's own module: make it importable from a checkout too.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = ctx.env.get("PYTHONPATH")
    env["PYTHONPATH"] = root if not path else f"{root}{os.pathsep}{path}"
    return env


def _capabilities(caps: Capabilities) -> Capabilities:
    # The local agent reports usage (usage_update and PromptResponse.usage, with @usage, per
    # turn; a cost with @cost),
    # offers a "plan" mode in session/new, and answers initialize with loadSession: true (known
    # before the first start, so the runtime can plan a resume).
    return msgspec.structs.replace(
        caps,
        sessions=msgspec.structs.replace(caps.sessions, load=True, resume=True),
        streaming=msgspec.structs.replace(caps.streaming, token_usage=True),
        usage=msgspec.structs.replace(caps.usage, source="per_turn", cost=True),
        planning=msgspec.structs.replace(caps.planning, plan_mode=True),
    )


def _probe(ctx: InstanceContext) -> str | None:
    python = ctx.config.binary or sys.executable
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        return f"Python interpreter {python!r} not found"
    return None


LOCAL_FLAVOR = AcpFlavor(
    kind="local",
    command=_command,
    env=_env,
    access_env=_access_env,
    probe=_probe,
    capability_overrides=_capabilities,
    native_modes={
        "approval-required": "default",
        "auto-accept-edits": "default",
        "full-access": "default",
        "plan": "plan",
    },
    # The local agent streams its first update at once; a short guard suffices.
    cancel_guard=0.5,
    client_fs=True,
    config_type=LocalConfig,
)
