"""The API mirrors the Runtime one to one: every public Runtime method has a RemoteRuntime method
with the same parameters (and AsyncRuntime / AsyncRemoteRuntime likewise) and an HTTP route. A
method added to the Runtime later fails here until the server and clients have it too."""

from __future__ import annotations

import inspect

import pytest

from paddock import Runtime
from paddock.aio import AsyncRuntime
from paddock.client import AsyncRemoteRuntime, RemoteRuntime
from paddock.server import openapi_document

ROUTE_OF = {  # reads are GET /v1/<noun>; everything else is POST /v1/<method>
    "instances": "/v1/instances", "diagnose": "/v1/diagnose", "list_sessions": "/v1/sessions",
    "list_threads": "/v1/threads", "pending_requests": "/v1/requests", "has_session": "/v1/has_session",
    "read_thread": "/v1/read_thread", "subscribe": "/v1/events",
}
LOCAL_ONLY = {"open", "close"}  # construction and closing are per side (connect / close the client)


def _public(cls) -> set[str]:
    return {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}


def _params(fn) -> list[tuple[str, object, object]]:
    sig = inspect.signature(fn)
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


@pytest.mark.parametrize(("local", "remote"), [(Runtime, RemoteRuntime), (AsyncRuntime, AsyncRemoteRuntime)])
def test_every_runtime_method_has_a_remote_twin(local, remote):
    missing = _public(local) - _public(remote) - LOCAL_ONLY
    assert not missing, f"{remote.__name__} lacks {sorted(missing)}"
    for name in _public(local) - LOCAL_ONLY:
        assert _params(getattr(local, name)) == _params(getattr(remote, name)), name
        assert inspect.iscoroutinefunction(getattr(local, name)) == inspect.iscoroutinefunction(getattr(remote, name)), name


def test_every_runtime_method_has_a_route():
    paths = openapi_document()["paths"]
    for name in _public(Runtime) - LOCAL_ONLY:
        route = ROUTE_OF.get(name, f"/v1/{name}")
        assert route in paths, f"no route for Runtime.{name}"
        assert ("get" if name in ROUTE_OF else "post") in paths[route], name
