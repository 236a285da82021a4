"""How an instance reaches its model: the common ``endpoint``, ``api_key``/``api_key_env`` and
``model`` keys, resolved once by the runtime into a :class:`ModelAccess`.

Every driver maps a :class:`ModelAccess` onto its CLI's own variables or config file, so one
config shape points any agent at a proxy, a self-hosted gateway or the scripted model server. A
driver knows its API's version suffix: :meth:`ModelAccess.base_url` accepts the configured URL
with or without it (``http://h:1/v1`` and ``http://h:1`` give the same result).

The key is a secret: :class:`ModelAccess` never shows it in its ``repr``, and
:attr:`ModelAccess.secrets` lists it for the hub's redactor.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping

import msgspec

__all__ = ["ModelAccess", "check_endpoint", "model_access"]

# Version suffixes of the model APIs our drivers speak: OpenAI Responses and Chat Completions
# (`/v1`), Anthropic Messages (`/v1`, appended by the SDK), Gemini (`/v1beta`, `/v1alpha`).
_VERSION_SUFFIX = re.compile(r"/v\d+(?:alpha|beta)?\d*$")


def check_endpoint(url: str) -> str:
    """``url`` without its trailing slash, or ``ValueError`` naming what is wrong: an endpoint
    is an ``http(s)`` URL with a host and no user-info, query or fragment."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"key 'endpoint': expected an http(s) URL with a host, got {url!r}")
    if parts.username is not None or parts.password is not None:
        raise ValueError("key 'endpoint': user-info is not allowed in the URL; use `api_key` or `api_key_env`")
    if parts.query or parts.fragment:
        raise ValueError(f"key 'endpoint': no query or fragment allowed, got {url!r}")
    return url.rstrip("/")


class ModelAccess(msgspec.Struct, frozen=True, kw_only=True):
    """The resolved model keys of one instance. Each field may be ``None``: the agent then uses
    its own default (its own login, its own endpoint, its own model)."""

    endpoint: str | None = None
    """The configured URL, checked, without a trailing slash (possibly with a version suffix)."""
    api_key: str | None = None
    """The key itself (from ``api_key``, or the host variable named by ``api_key_env``)."""
    model: str | None = None

    def __repr__(self) -> str:
        key = "None" if self.api_key is None else "'***'"
        return f"ModelAccess(endpoint={self.endpoint!r}, api_key={key}, model={self.model!r})"

    __str__ = __repr__

    @property
    def root(self) -> str | None:
        """The endpoint without any API version suffix."""
        return None if self.endpoint is None else _VERSION_SUFFIX.sub("", self.endpoint)

    def base_url(self, version: str = "") -> str | None:
        """The endpoint with exactly the API version suffix ``version`` (``"/v1"``, or ``""`` for
        SDKs that append it themselves); ``None`` when no endpoint is configured."""
        root = self.root
        return None if root is None else root + version

    def variables(self, *, endpoint: str | None = None, version: str = "", api_key: str | None = None,
                  model: str | None = None) -> dict[str, str]:
        """The configured keys under a CLI's own variable names: the variable named ``endpoint``
        gets :meth:`base_url` (``version``), ``api_key`` the key, ``model`` the model. A key that
        is not configured (or a variable not named) is left out."""
        env: dict[str, str] = {}
        base = self.base_url(version)
        if endpoint is not None and base is not None:
            env[endpoint] = base
        if api_key is not None and self.api_key:
            env[api_key] = self.api_key
        if model is not None and self.model:
            env[model] = self.model
        return env

    @property
    def secrets(self) -> tuple[str, ...]:
        """Values that must never appear in a log, an event or an error."""
        return (self.api_key,) if self.api_key else ()


def model_access(config: object, host_env: Mapping[str, str]) -> ModelAccess:
    """Resolve an instance config's common keys against the host's environment.

    ``api_key`` wins over ``api_key_env``; an ``api_key_env`` naming an unset (or empty) host
    variable raises ``LookupError`` with a sentence saying so (the runtime lists the instance as
    unavailable with it). Never reads ``os.environ`` itself: the caller passes the host env.
    """
    endpoint = getattr(config, "endpoint", None)
    key = getattr(config, "api_key", None)
    key_env = getattr(config, "api_key_env", None)
    if key is None and key_env:
        key = host_env.get(key_env) or None
        if key is None:
            raise LookupError(f"`api_key_env` names the host variable {key_env!r}, which is not set")
    return ModelAccess(endpoint=endpoint, api_key=key, model=getattr(config, "model", None))
