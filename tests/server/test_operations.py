"""Every operation of the table is reachable through every surface: Runtime, AsyncRuntime,
RemoteRuntime and AsyncRemoteRuntime have its method with its body's parameters, the server has
its route with its HTTP method, the OpenAPI document describes it from its body Struct, and a
call through a real ``paddock serve`` gives what the in-process Runtime gives."""

from __future__ import annotations

import inspect
import time

import msgspec
import pytest

from paddock import Runtime
from paddock._operations._table import OPERATIONS, Operation
from paddock.aio import AsyncRuntime
from paddock.client import AsyncRemoteRuntime, RemoteRuntime
from paddock.contract import Budget, PaddockError
from paddock.server import build_app, openapi_document
from tests.runtime.conftest import TWO_LOCAL

SURFACES = [Runtime, AsyncRuntime, RemoteRuntime, AsyncRemoteRuntime]
NOT_IN_THE_TABLE = {"subscribe", "open", "close", "connect", "health"}  # streams and handles, per surface
ops = pytest.mark.parametrize("op", OPERATIONS, ids=[op.name for op in OPERATIONS])


def _params(fn) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values() if p.name != "self"]


def _public(cls) -> set[str]:
    return {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}


@ops
@pytest.mark.parametrize("surface", SURFACES, ids=[s.__name__ for s in SURFACES])
def test_every_surface_has_the_method_with_the_bodys_parameters(op: Operation, surface):
    method = getattr(surface, op.name)
    params = _params(method)
    fields = msgspec.structs.fields(op.body)
    assert {name for name, _, _ in params} == {f.name for f in fields}, op.name
    for name, _, default in params:
        field = next(f for f in fields if f.name == name)
        if field.required:
            assert default is inspect.Parameter.empty, (op.name, name)
        else:
            assert default == field.default, (op.name, name)
    assert params == _params(getattr(Runtime, op.name)), f"{surface.__name__}.{op.name} differs from Runtime's"
    assert inspect.iscoroutinefunction(method) == surface.__name__.startswith("Async"), op.name


def test_no_surface_has_an_operation_outside_the_table():
    names = {op.name for op in OPERATIONS}
    for surface in SURFACES:
        assert _public(surface) - NOT_IN_THE_TABLE == names, surface.__name__


@ops
def test_the_server_routes_it_with_its_http_method(op: Operation):
    app = build_app(None, token=None, transport="unix")  # type: ignore[arg-type]  # routes only
    routes = {route.path: route.methods for route in app.app.routes}  # type: ignore[attr-defined]
    assert op.method in routes[f"/v1/{op.route}"], op.name


@ops
def test_the_openapi_document_describes_it_from_its_body(op: Operation):
    doc = openapi_document()
    spec = doc["paths"][f"/v1/{op.route}"][op.method.lower()]
    assert spec["operationId"] == op.name
    schema = doc["components"]["schemas"][op.body.__name__]
    fields = {f.name for f in msgspec.structs.fields(op.body)}
    if op.reads:
        assert {p["name"] for p in spec["parameters"]} == fields
        assert all(p["in"] == "query" for p in spec["parameters"])
    else:
        assert spec["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(f"/{op.body.__name__}")
        assert set(schema.get("properties", {})) == fields and schema["additionalProperties"] is False


def _outcomes(rt, ws) -> dict[str, str]:
    """Call every operation once; what each gave: its result's type, or the error's class."""
    got: dict[str, str] = {}

    def call(name: str, *args, **kwargs):
        try:
            result = getattr(rt, name)(*args, **kwargs)
        except PaddockError as exc:
            got[name] = type(exc).__name__
            return None
        inner = {type(x).__name__ for x in result} if isinstance(result, list) else set()
        got[name] = type(result).__name__ + (f"[{','.join(sorted(inner))}]" if inner else "")
        return result

    call("instances")
    call("diagnose", timeout=10.0)
    call("start_session", "t1", instance="local-a", cwd=ws, runtime_mode="approval-required")
    with rt.subscribe(thread_id="t1", types=["request.opened", "turn.completed"]) as sub:
        call("send_turn", "t1", f"@write {ws}/f.txt hi")
        opened = sub.get(timeout=20)
        assert opened is not None and opened.type == "request.opened"
        call("pending_requests", "t1")
        call("queue")
        call("respond_to_request", "t1", opened.request_id, "accept")
        while (event := sub.get(timeout=20)) is not None and event.type != "turn.completed":
            pass
    call("respond_to_user_input", "t1", "r1", {"q": "a"})
    call("interrupt_turn", "t1")
    call("steer_turn", "t1", "@reply steered")
    call("list_sessions")
    call("has_session", "t1")
    deadline = time.monotonic() + 20
    while rt.list_threads()[0].status != "ready" and time.monotonic() < deadline:
        time.sleep(0.05)
    call("read_thread", "t1")
    call("rollback_thread", "t1", 1)
    call("fork_thread", "t1", "t1-copy", instance="local-b")
    call("compact_thread", "t1")
    call("restore_files", "t1", "base")  # t1 runs in the shared cwd: refused, the same way everywhere
    call("diff", "t1")
    call("delete_thread", "t1-copy")
    call("list_threads")
    call("generate_text", "local-a", "@reply a title")
    call("models", "local-a")
    call("set_budget", Budget(turns=100), thread_id="t1")
    call("usage", "t1")
    call("stop_session", "t1")
    call("stop_all")
    call("compact_events", 1)
    return got


def test_every_operation_through_a_real_server_gives_what_the_runtime_gives(make_server, short_root):
    served = make_server("unix")
    remote = served.remote()
    try:
        over_http = _outcomes(remote, served.workspace)
    finally:
        remote.close()
    ws = short_root / "local-ws"
    ws.mkdir()
    with Runtime.open(TWO_LOCAL, state_dir=short_root / "local-state") as rt:
        in_process = _outcomes(rt, ws)
    assert set(in_process) == {op.name for op in OPERATIONS}
    assert over_http == in_process
