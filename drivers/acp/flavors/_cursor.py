"""``cursor``: Cursor's CLI agent in ACP mode: ``agent [-e <endpoint>] acp`` (older installs
name the command ``cursor-agent``; set ``binary``). Replay only: the CLI cannot be installed
here.

Facts (T3 Code's Cursor support): ``authenticate{methodId:"cursor_login"}`` (the CLI's own
login, ``agent login``); ``endpoint`` is Cursor's own API endpoint, passed as ``-e`` before
``acp`` (it is not a model API: no version suffix is added); ``api_key`` -> ``CURSOR_API_KEY``;
the model is chosen per session (its ``model`` config option, else ``session/set_model``).
The command is a launcher script that starts node in the background of its own process: the
runtime's teardown takes the whole process tree and group (never just the launcher).

Runtime modes have no native mode: the runtime enforces them at the client boundary, as for
any ACP agent (``GENERIC_FLAVOR`` in ``_flavor.py``); the ``plan`` interaction uses a mode named
``plan`` when the agent offers one.
"""

from __future__ import annotations

from paddock.drivers._access import ModelAccess
from paddock.drivers._registry import InstanceContext
from paddock.drivers.acp import AcpFlavor
from paddock.drivers.acp._flavor import on_path

__all__ = ["CURSOR_FLAVOR"]


_locate = on_path("agent", "Cursor's CLI (`agent`, formerly `cursor-agent`) is installed by Cursor's own "
                           "installer; set `binary` to it")


def _command(ctx: InstanceContext) -> list[str]:
    where = _locate(ctx)
    if isinstance(where, str):
        raise LookupError(where)
    endpoint = ["-e", ctx.access.endpoint] if ctx.access.endpoint else []
    return [*where.argv, *ctx.config.args, *endpoint, "acp"]


def _access_env(access: ModelAccess) -> dict[str, str]:
    return access.variables(api_key="CURSOR_API_KEY")


CURSOR_FLAVOR = AcpFlavor(
    kind="cursor",
    command=_command,
    locator=_locate,
    access_env=_access_env,
    auth_method="cursor_login",
    # T3 Code sets Cursor's model with session/set_model, then its config options.
    set_model=True,
    native_modes={"plan": "plan"},
)
