"""``grok``: xAI's Grok CLI in ACP mode: ``grok agent stdio``. Replay only: the CLI cannot be
installed here.

Facts (T3 Code's Grok support): ``authenticate`` with ``xai.api_key`` when ``XAI_API_KEY`` is
set (``api_key`` -> ``XAI_API_KEY``), else ``cached_token`` (the CLI's own login); the model is
chosen per session (default ``grok-build``).

Traps:
- after an interrupt Grok restarts work by itself (a background task "wakes" the session with a
  prompt of its own) unless the cancel says it came from the user: every ``session/cancel``
  carries ``_meta: {"cancelTrigger": "ctrl_c"}``, and updates that still arrive after the
  cancelled prompt's result are late updates (attached to no turn, never a new item);
- tools run in detached process groups of their own: teardown must take the whole process tree
  and every group in it (the runtime's teardown snapshots the tree before signalling).

Runtime modes have no native mode: the runtime enforces them at the client boundary, as for
any ACP agent (``GENERIC_FLAVOR`` in ``_flavor.py``); the ``plan`` interaction uses a mode named
``plan`` when the agent offers one.
"""

from __future__ import annotations

from paddock.drivers._access import ModelAccess
from paddock.drivers._registry import InstanceContext
from paddock.drivers.acp import AcpFlavor
from paddock.drivers.acp._flavor import on_path

__all__ = ["GROK_FLAVOR"]


def _access_env(access: ModelAccess) -> dict[str, str]:
    return access.variables(api_key="XAI_API_KEY")


def _auth(ctx: InstanceContext) -> str:
    return "xai.api_key" if ctx.access.api_key or ctx.env.get("XAI_API_KEY", "").strip() else "cached_token"


GROK_FLAVOR = AcpFlavor(
    kind="grok",
    locator=on_path("grok", "install xAI's Grok CLI and set `binary`"),
    protocol_args=("agent", "stdio"),
    access_env=_access_env,
    auth=_auth,
    cancel_meta={"cancelTrigger": "ctrl_c"},
    native_modes={"plan": "plan"},
)
