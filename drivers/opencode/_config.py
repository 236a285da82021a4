"""The ``[instances.<id>]`` table of an ``opencode`` instance, the generated server config and
the runtime-mode permission rules."""

from __future__ import annotations

import urllib.parse

from paddock.contract import JsonObject
from paddock.drivers._access import ModelAccess
from paddock.drivers._registry import SHARED_IDLE_TIMEOUT, TimedDriverConfig

__all__ = ["API_KEY_VAR", "PROVIDER_ID", "QUIET_ENV", "OpencodeConfig", "check_server_url", "permission_rules",
           "server_config"]

PROVIDER_ID = "paddock"
"""The provider id of the generated config (``endpoint``/``api_key``/``model`` as an
OpenAI-compatible provider)."""

API_KEY_VAR = "PADDOCK_OPENCODE_API_KEY"
"""The child variable holding the key; the config file names it (``{env:…}``), never the key."""

QUIET_ENV: dict[str, str] = {
    # opencode-server.md section 7 and the offline recordings: no update check, no models.dev
    # catalog fetch (a bundled snapshot is used), no LSP downloads, no default plugins, no
    # Claude Code / external skill discovery, no share, and no project config from the cwd's
    # parents (a stray opencode.json there would change the provider).
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
}


def check_server_url(url: str) -> str:
    """``url`` as a bare origin (``http(s)://host[:port]``), or ``ValueError`` naming what is
    wrong: no user-info, path, query or fragment (the password has its own key)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"key 'server_url': expected an http(s) origin such as http://127.0.0.1:4096, got {url!r}")
    if parts.username is not None or parts.password is not None:
        raise ValueError("key 'server_url': user-info is not allowed in the URL; use the `password` key")
    if parts.path not in ("", "/") or parts.query or parts.fragment or url.endswith("?") or url.endswith("#"):
        raise ValueError(f"key 'server_url': a bare origin has no path, query or fragment, got {url!r}")
    try:
        parts.port
    except ValueError:
        raise ValueError(f"key 'server_url': bad port in {url!r}") from None
    return f"{parts.scheme}://{parts.netloc}"


class OpencodeConfig(TimedDriverConfig, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The common keys (:class:`paddock.drivers.DriverConfig`; ``binary`` defaults to the pinned
    ``opencode`` in the peers dir, then ``opencode`` on PATH; ``args`` go right after the binary;
    ``endpoint``/``api_key``/``model`` become the generated config's provider) plus:

    - ``server_url``: external mode: a bare ``http(s)`` origin of a server someone else runs (we
      never start or stop it; redirects are not followed); ``None``: spawn ``opencode serve``;
    - ``password``: the server password (spawned: generated when ``None``; external: sent as HTTP
      Basic auth). A secret: never in an event, a log, an error or ``doctor``;
    - ``agent``: the OpenCode agent of every prompt (``None``: the server's default, ``build``);
    - ``start_timeout``: seconds from spawn to the ``opencode server listening on`` line;
    - ``request_timeout``: seconds one HTTP call may take;
    - ``interrupt_timeout``: seconds after ``abort`` before a turn the server never ends is
      completed ``interrupted`` by the driver;
    - ``shutdown_timeout``: seconds between SIGTERM to the server's process group and SIGKILL
      (SIGTERM has been seen ignored on a fresh data dir);
    - ``idle_timeout``: seconds a spawned server keeps running with no session before it is
      stopped (the next ``start_session`` spawns it again); an external server is never stopped.
    """

    server_url: str | None = None
    password: str | None = None
    agent: str | None = None
    interrupt_timeout: float = 10.0
    shutdown_timeout: float = 3.0
    idle_timeout: float = SHARED_IDLE_TIMEOUT

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.server_url is not None:
            check_server_url(self.server_url)
        for key in ("start_timeout", "request_timeout", "interrupt_timeout", "shutdown_timeout", "idle_timeout"):
            if getattr(self, key) <= 0:
                raise ValueError(f"key {key!r}: expected seconds > 0")

    def __repr__(self) -> str:
        text = super().__repr__()
        return text.replace(f"password={self.password!r}", "password='***'") if self.password else text

    __str__ = __repr__


def server_config(access: ModelAccess) -> JsonObject:
    """The generated ``opencode.json`` of a spawned server (``OPENCODE_CONFIG``). With an
    ``endpoint`` it is an OpenAI-compatible provider ``paddock`` at ``endpoint/v1``, the only one
    enabled (else the built-in Zen provider, a public endpoint, is on: section 7, pitfall 1), and
    ``model``/``small_model`` point at it. Without one OpenCode keeps its own providers (a login
    under the instance home). The key stays in the environment: ``{env:PADDOCK_OPENCODE_API_KEY}``."""
    config: JsonObject = {"autoupdate": False, "share": "disabled"}
    base = access.base_url("/v1")
    if base is not None:
        model = _model_id(access.model) or "default"
        options: JsonObject = {"baseURL": base}
        if access.api_key:
            options["apiKey"] = "{env:%s}" % API_KEY_VAR
        config.update(
            enabled_providers=[PROVIDER_ID],
            model=f"{PROVIDER_ID}/{model}",
            small_model=f"{PROVIDER_ID}/{model}",
            provider={PROVIDER_ID: {
                "npm": "@ai-sdk/openai-compatible", "name": "Paddock endpoint", "options": options,
                "models": {model: {"name": model, "tool_call": True, "limit": {"context": 128000, "output": 8192},
                                   # Without these OpenCode drops an image part ("does not support image input").
                                   "attachment": True, "modalities": {"input": ["text", "image"], "output": ["text"]}}},
            }},
        )
    elif access.model:
        config.update(model=access.model)
    return config


def _model_id(model: str | None) -> str | None:
    if not model:
        return None
    provider, _, name = model.partition("/")
    return name if provider == PROVIDER_ID and name else model


def model_ref(model: str | None, *, endpoint: bool) -> dict[str, str] | None:
    """A prompt's ``model: {providerID, modelID}``: ``provider/model``, or a bare name on the
    generated provider when an endpoint is configured; ``None``: the server's default."""
    if not model:
        return None
    provider, _, name = model.partition("/")
    if name:
        return {"providerID": provider, "modelID": name}
    return {"providerID": PROVIDER_ID, "modelID": model} if endpoint else None


_ASK = ("*", "bash", "edit", "webfetch", "websearch", "codesearch", "external_directory", "doom_loop")


def permission_rules(runtime_mode: str) -> list[dict[str, str]]:
    """The session's ``permission`` ruleset for a runtime mode (section 6, the T3 Code mapping):
    full-access allows everything; otherwise every tool asks and ``question`` is allowed (a
    question is the host's own user-input request); auto-accept-edits also allows ``edit``.
    Later rules win."""
    if runtime_mode == "full-access":
        return [{"permission": "*", "pattern": "*", "action": "allow"}]
    rules = [{"permission": p, "pattern": "*", "action": "ask"} for p in _ASK]
    rules.append({"permission": "question", "pattern": "*", "action": "allow"})
    if runtime_mode == "auto-accept-edits":
        rules.append({"permission": "edit", "pattern": "*", "action": "allow"})
    return rules
