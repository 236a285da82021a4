"""Unit: the wire pieces shared by server and client (error documents, bodies, SSE frames,
listen addresses)."""

from __future__ import annotations

import msgspec
import pytest

from paddock._operations._wire import ErrorDocument, decode_body, error_document, error_from_document, status_of
from paddock.client import _Frames
from paddock.contract import (
    CapabilityUnsupportedError,
    ConfigError,
    ContentDelta,
    DriverError,
    InstanceNotFoundError,
    OperationTimeout,
    PaddockError,
    PersistenceError,
    ProcessError,
    RequestError,
    RuntimeWarningEvent,
    SessionClosedError,
    SessionNotFoundError,
    ValidationError,
)
from paddock.server import parse_listen
from paddock.server._app import _frame

ERRORS = [
    (ValidationError("send_turn", "the prompt is empty", thread_id="t"), "validation", 400),
    (ConfigError("/x.toml", "instances.a: bad key"), "config", 400),
    (InstanceNotFoundError("nope", "not configured"), "instance_not_found", 404),
    (SessionNotFoundError("t"), "session_not_found", 404),
    (SessionClosedError("t", "stopped"), "session_closed", 409),
    (SessionClosedError(None, "the runtime is closed"), "session_closed", 409),
    (RequestError("session/prompt", -32602, "bad params", thread_id="t"), "request_failed", 409),
    (CapabilityUnsupportedError("threads.rollback", "rolling back turns"), "capability_unsupported", 422),
    (OperationTimeout("send_turn", 2.5, thread_id="t"), "timeout", 504),
    (ProcessError("agent exited", -9, stderr_tail="boom"), "process_failed", 502),
    (DriverError("claude", "c1", "handshake failed"), "driver_failed", 502),
    (PersistenceError("write the log", "disk full"), "persistence_failed", 503),
    (PaddockError("something"), "paddock_error", 500),
]


@pytest.mark.parametrize(("error", "code", "status"), ERRORS, ids=[type(e).__name__ + str(i) for i, (e, _, _) in enumerate(ERRORS)])
def test_every_error_crosses_the_wire_as_itself(error, code, status):
    got_status, doc = error_document(error)
    assert (got_status, doc.error.code) == (status, code) and status_of(error) == (code, status)
    back = error_from_document(msgspec.json.decode(msgspec.json.encode(doc), type=ErrorDocument).error)
    assert type(back) is type(error) and str(back) == str(error)
    assert (back.thread_id, back.instance_id, back.driver) == (error.thread_id, error.instance_id, error.driver)
    assert {k: v for k, v in vars(back).items() if k != "field"} == vars(error)


def test_a_later_subclass_maps_to_its_nearest_known_ancestor():
    class StateDirBusyError(PersistenceError):
        pass

    status, doc = error_document(StateDirBusyError("open the state dir", "another process owns it"))
    assert (status, doc.error.code, doc.error.type) == (503, "persistence_failed", "StateDirBusyError")
    back = error_from_document(doc.error)
    assert isinstance(back, PersistenceError) and "another process owns it" in str(back)


def test_bodies_name_the_bad_field():
    with pytest.raises(ValidationError) as exc:
        decode_body("send_turn", b'{"thread_id": "t", "text": ["x"]}')
    assert exc.value.field == "text" and "at `$.text`" in str(exc.value)
    with pytest.raises(ValidationError) as exc:
        decode_body("send_turn", b'{"text": "x"}')
    assert exc.value.field == "thread_id"
    assert decode_body("stop_all", b"").timeout is None


def test_frames_split_anywhere_and_keep_the_last_id():
    events = [ContentDelta(driver="d", instance_id="i", thread_id="t", seq=n, stream="assistant_text", delta=f"x{n}\n")
              for n in range(1, 40)]
    gap = RuntimeWarningEvent(driver="paddock", instance_id="", thread_id="", code="subscription.gap", message="m")
    data = b": paddock events\n\n" + b"".join(_frame(e) for e in events[:20]) + _frame(gap) + \
        b": keep-alive\n\n" + b"".join(_frame(e) for e in events[20:])
    for size in (1, 7, 64, len(data)):
        frames = _Frames()
        got = []
        for i in range(0, len(data), size):
            got += frames.feed(data[i:i + size])
        assert got == [*events[:20], gap, *events[20:]] and frames.last_id == 39


@pytest.mark.parametrize(("listen", "want"), [("127.0.0.1:0", ("127.0.0.1", 0)), ("localhost:8765", ("127.0.0.1", 8765)),
                                             ("[::1]:9", ("::1", 9)), ("127.9.9.9:80", ("127.9.9.9", 80))])
def test_loopback_listen_addresses(listen, want):
    assert parse_listen(listen) == want


@pytest.mark.parametrize("listen", ["0.0.0.0:80", "192.168.1.2:80", "[::]:80", "host:80", "127.0.0.1", "127.0.0.1:99999"])
def test_other_listen_addresses_are_refused(listen):
    with pytest.raises(ConfigError):
        parse_listen(listen)


def test_json_attributes_cross_and_others_are_left_out():
    err = RequestError("session/prompt", -32603, "internal", thread_id="t")
    err.data = {"details": ["quota", 3]}  # what an agent put in the JSON-RPC error's data
    err.handle = object()
    _, doc = error_document(err)
    back = error_from_document(doc.error)
    assert back.data == {"details": ["quota", 3]} and not hasattr(back, "handle") and str(back) == str(err)
