from __future__ import annotations

import threading

import msgspec
import pytest

from paddock.actors import (
    METHOD_NOT_FOUND,
    JsonRpcConnection,
    JsonRpcNotification,
    JsonRpcRequest,
    ProcessSpec,
)
from paddock.contract import OperationTimeout, ProcessError, RequestError
from tests.helpers import helper

PEER = ProcessSpec(argv=helper("jsonrpc_peer"), name="peer", max_line_bytes=4096, shutdown_timeout=2.0)


class Tap:
    def __init__(self) -> None:
        self.inbound: list[bytes] = []
        self.outbound: list[bytes] = []
        self.threads: set[str] = set()

    def on_inbound(self, line: bytes) -> None:
        self.inbound.append(line)
        self.threads.add(threading.current_thread().name)

    def on_outbound(self, line: bytes) -> None:
        self.outbound.append(line)
        self.threads.add(threading.current_thread().name)


@pytest.fixture
def warnings():
    return []


def open_peer(warnings, **kwargs) -> JsonRpcConnection:
    return JsonRpcConnection.open(PEER, on_warning=lambda *w: warnings.append(w), **kwargs)


def test_request_response_without_jsonrpc_field_and_raw_results(warnings):
    tap = Tap()
    conn = open_peer(warnings, tap=tap)
    try:
        raw = conn.request("echo", {"a": [1, 2]}, timeout=5).result(10)
        assert isinstance(raw, msgspec.Raw)
        assert msgspec.json.decode(raw) == {"a": [1, 2]}
        assert tap.outbound == [b'{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":[1,2]}}']
        assert tap.inbound == [b'{"id": 1, "result": {"a": [1, 2]}}']
        # the pipe took the request at once: written (and tapped) on the caller's thread
        assert tap.threads == {threading.current_thread().name, "stdout-peer"}
    finally:
        conn.close(timeout=2)
    assert warnings == []


def test_error_response_raises_request_error(warnings):
    conn = open_peer(warnings)
    try:
        with pytest.raises(RequestError) as caught:
            conn.request("fail").result(10)
        assert caught.value.method == "fail" and caught.value.code == -32000
        assert "it failed" in str(caught.value)
    finally:
        conn.close(timeout=2)


def test_requests_and_notifications_from_the_child_reach_the_handler_in_order(warnings):
    seen: list[list] = []

    def handler(batch):
        seen.append(batch)
        for message in batch:
            if isinstance(message, JsonRpcRequest):
                conn.respond(message.id, {"ok": True})

    conn = open_peer(warnings, handler=handler)
    try:
        answer = msgspec.json.decode(conn.request("ask", {}).result(10))
        assert answer == {"answer": {"ok": True}, "error": None}
        flat = [m for batch in seen for m in batch]
        assert [type(m) for m in flat] == [JsonRpcNotification, JsonRpcRequest]
        assert flat[1].id == "q1" and flat[1].method == "host/question"
        assert msgspec.json.decode(flat[0].params) == {"n": 1}
    finally:
        conn.close(timeout=2)


def test_unknown_requests_are_answered_with_method_not_found(warnings):
    conn = open_peer(warnings)  # no handler: every request is rejected
    try:
        answer = msgspec.json.decode(conn.request("ask", {}).result(10))
        assert answer["answer"] is None
        assert answer["error"]["code"] == METHOD_NOT_FOUND
    finally:
        conn.close(timeout=2)


def test_notifications_arrive_in_batches(warnings):
    counts: list[int] = []
    conn = open_peer(warnings, handler=lambda batch: counts.append(len(batch)))
    try:
        assert msgspec.json.decode(conn.request("spam", {"count": 5000}).result(10)) == 5000
        assert sum(counts) == 5000
        assert len(counts) < 5000 / 10  # one call per read batch, not one per message
    finally:
        conn.close(timeout=2)


def test_malformed_and_over_long_lines_are_counted_and_not_fatal(warnings):
    conn = open_peer(warnings)
    try:
        result = conn.request("garbage", {"long": 100_000}).result(10)
        assert msgspec.json.decode(result) == "after garbage"
        assert conn.request("echo", 7).result(10) == msgspec.Raw(b"7")
    finally:
        conn.close(timeout=2)
    codes = sorted(code for code, _, _ in warnings)
    assert codes == ["jsonrpc.malformed_line"] * 3 + ["line_too_long"]
    assert conn.malformed_lines == 3


def test_child_dying_mid_request_fails_it_with_exit_code_and_stderr(warnings):
    conn = open_peer(warnings)
    slow = conn.request("slow")
    crash = conn.request("crash")
    for future in (slow, crash):
        with pytest.raises(ProcessError) as caught:
            future.result(10)
        err = caught.value
        assert err.exit_code == 3
        assert "fatal: the peer crashed on purpose" in err.stderr_tail
        assert "'peer' exited before answering 'crash', 'slow'" in str(err)
    with pytest.raises(ProcessError) as later:
        conn.request("echo", 1).result(10)
    assert later.value.exit_code == 3
    conn.close(timeout=2)


def test_request_timeout(warnings):
    conn = open_peer(warnings)
    try:
        with pytest.raises(OperationTimeout):
            conn.request("slow", timeout=0.2).result(10)
        assert conn.request("echo", 1, timeout=5).result(10) == msgspec.Raw(b"1")
    finally:
        conn.close(timeout=2)


def test_close_fails_pending_requests(warnings):
    conn = open_peer(warnings)
    pending = conn.request("slow")
    conn.close(timeout=2)
    with pytest.raises(ProcessError):
        pending.result(10)
