"""``cursor``: Cursor's CLI agent in ACP mode: ``agent [-e <endpoint>] acp`` (older installs
name the command ``cursor-agent``; set ``binary``). Replay only: the CLI cannot be installed
here.

Facts (T3 Code's Cursor support): ``authenticate{methodId:"cursor_login"}`` (the CLI's own
login, ``agent login``); ``endpoint`` is Cursor's own API endpoint, passed as ``-e`` before
``acp`` (it is not a model API: no version suffix is added); ``api_key`` -> ``CURSOR_API_KEY``;
the model is chosen per session (its ``model`` config option, else ``session/set_model``).
The command is a launcher script that starts node in the background of its own process: the
runtime's teardown takes the whole process tree and group (never just the launcher).

| runtime / interaction mode | native mode | answered without asking the host |
|---|---|---|
| approval-required | the agent's default | read, search, think |
| auto-accept-edits | same | also edit, delete, move (client boundary) |
| full-access | same | everything |
| plan interaction | a mode named ``plan`` when offered | as the runtime mode says |
"""

from __future__ import annotations

from paddock.drivers._access import ModelAccess
from paddock.drivers._binary import BinaryLocation, find_binary
from paddock.drivers._registry import InstanceContext
from paddock.drivers.acp import AcpFlavor

__all__ = ["CURSOR_FLAVOR"]


def _locate(ctx: InstanceContext) -> BinaryLocation | str:
    where = find_binary(ctx.config.binary, peer=None, command="agent", env=ctx.env)
    if isinstance(where, str):
        return (f"{where}; Cursor's CLI (`agent`, formerly `cursor-agent`) is installed by Cursor's own "
                "installer; set `binary` to it")
    return where


def _command(ctx: InstanceContext) -> list[str]:
    where = _locate(ctx)
    if isinstance(where, str):
        raise LookupError(where)
    endpoint = ["-e", ctx.access.endpoint] if ctx.access.endpoint else []
    return [*where.argv, *ctx.config.args, *endpoint, "acp"]


def _access_env(access: ModelAccess) -> dict[str, str]:
    return {"CURSOR_API_KEY": access.api_key} if access.api_key else {}


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
