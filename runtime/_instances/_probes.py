"""``paddock doctor``'s checks of what it reports: is an instance's model endpoint reachable (TCP,
then HTTP), and are credentials present (never their values). Each check is bounded by its
timeout; the instance table runs them for every instance at once."""

from __future__ import annotations

import http.client
import socket
import ssl
from urllib.parse import urlsplit

__all__ = ["CREDENTIAL_VARIABLES", "credentials_present", "endpoint_reachable", "tcp_unreachable"]

CREDENTIAL_VARIABLES = (
    "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "OPENAI_API_KEY", "CODEX_API_KEY",
    "GEMINI_API_KEY", "GOOGLE_API_KEY", "DASHSCOPE_API_KEY", "GITHUB_TOKEN", "GH_TOKEN", "COPILOT_GITHUB_TOKEN",
    "XAI_API_KEY", "OPENROUTER_API_KEY",
)
"""Variables of an instance's env that hold a model credential for some agent."""


def endpoint_reachable(url: str, timeout: float) -> tuple[bool, str]:
    """``(ok, what happened)`` for a model endpoint: a TCP connection to its host and port, then
    one HTTP ``GET`` of the URL. Any HTTP answer (even 401 or 404) means reachable: the server is
    there; the agent's own request decides the rest."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False, f"not an http(s) URL: {url!r}"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    where = f"{parts.hostname}:{port}"
    why = tcp_unreachable(url, timeout)
    if why is not None:
        return False, f"unreachable: {why}"
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        conn = http.client.HTTPSConnection(parts.hostname, port, timeout=timeout, context=ssl.create_default_context())
    else:
        conn = http.client.HTTPConnection(parts.hostname, port, timeout=timeout)
    try:
        conn.request("GET", parts.path or "/", headers={"User-Agent": "paddock-doctor"})
        status = conn.getresponse().status
    except (OSError, http.client.HTTPException) as exc:
        return False, f"TCP {where} connects, but HTTP fails: {exc}"
    finally:
        conn.close()
    return True, f"reachable (TCP {where}, HTTP {status})"


def tcp_unreachable(url: str, timeout: float) -> str | None:
    """Why the host and port of the http(s) ``url`` take no TCP connection within ``timeout``
    seconds (``"TCP host:port: Connection refused"``), or ``None`` when they take one."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"not an http(s) URL: {url!r}"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            pass
    except OSError as exc:
        return f"TCP {parts.hostname}:{port}: {exc.strerror or exc}"
    return None


def credentials_present(api_key: str | None, env: dict[str, str]) -> str | None:
    """Where an instance's credentials come from (``api_key`` in the config, or variables of its
    env, by name only), or ``None`` when there are none."""
    names = [name for name in CREDENTIAL_VARIABLES if env.get(name)]
    if api_key:
        names.insert(0, "api_key in the config")
    return ", ".join(names) or None
