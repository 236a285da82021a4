"""A tiny HTTP + SSE client over http.client for speaking the dialects directly in tests."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit


def connect(url: str, timeout: float = 10.0) -> http.client.HTTPConnection:
    parts = urlsplit(url)
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)


def post(url: str, path: str, body: object, *, headers: dict | None = None, timeout: float = 10.0):
    """POST JSON; returns (status, headers, raw body bytes)."""
    conn = connect(url, timeout)
    try:
        conn.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json", **(headers or {})})
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def post_json(url: str, path: str, body: object, **kw):
    status, headers, raw = post(url, path, body, **kw)
    return status, json.loads(raw)


def parse_sse(raw: bytes) -> list[tuple[str | None, str]]:
    """Split an SSE body into (event name or None, data) pairs."""
    events = []
    for block in raw.decode().replace("\r\n", "\n").split("\n\n"):
        if not block.strip():
            continue
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip())
        events.append((name, "\n".join(data)))
    return events


def post_sse(url: str, path: str, body: object, **kw):
    """POST and parse an SSE answer; returns (status, headers, [(event, decoded data or raw str)])."""
    status, headers, raw = post(url, path, body, **kw)
    events = []
    for name, data in parse_sse(raw):
        try:
            events.append((name, json.loads(data)))
        except ValueError:
            events.append((name, data))
    return status, headers, events
