"""Shared pieces of the native-MCP acceptance tests (claude, codex, opencode): the test MCP server
over stdio or HTTP, a scripted model that also calls its tools by server, a scan of every
process's command line during a turn, and the checks every driver must pass.

The secrets are fresh per test run; a test fails when one shows up in a command line (other than
the test's own HTTP server, which takes its expected header on argv) or in an event.
"""

from __future__ import annotations

import contextlib
import secrets
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import msgspec
import psutil
import pytest

from paddock.contract import McpHttpServer, McpStdioServer
from paddock.testing import McpCall, ModelServer, Script
from paddock.testing.mcp_server import read_record
from tests.adapter_harness import etype, of_type

SECRET_ENV = f"env-secret-{secrets.token_hex(8)}"
SECRET_HEADER = f"header-secret-{secrets.token_hex(8)}"
SECRET_VAR = "PADDOCK_MCP_SECRET"
ECHO_ARGS = {"text": "ping from the model"}

SCRIPT = Script(scenarios={
    # The built-in mcp_echo calls the first offered tool ending in `echo`; these name the server.
    "mcp_env": (McpCall(tool="env_has", arguments={"name": SECRET_VAR}, server="paddock-test"),),
    "mcp_http": (McpCall(tool="echo", arguments={"text": "over http"}, server="paddock-http"),),
})


@pytest.fixture
def model_server(tmp_path, workspace):
    """The scripted model server on :data:`SCRIPT` (a fixture: import it into the test module)."""
    with ModelServer(SCRIPT, workspace=workspace, log_path=tmp_path / "model-requests.jsonl") as server:
        yield server


def stdio_server(record: Path, name: str = "paddock-test", *, in_cwd: bool = False) -> McpStdioServer:
    """The test MCP server as the agent's stdio child, with the env secret. ``in_cwd``: it runs
    in the record's folder (``cwd``) and is given the record by its bare name, so the record
    appears only if the agent honoured ``cwd``."""
    if in_cwd:
        record.parent.mkdir(parents=True, exist_ok=True)
    return McpStdioServer(name=name, command=sys.executable,
                          args=("-m", "paddock.testing.mcp_server", "--record", record.name if in_cwd else str(record),
                                "--name", name),
                          env={SECRET_VAR: SECRET_ENV}, cwd=str(record.parent) if in_cwd else None)


def missing_server() -> McpStdioServer:
    return McpStdioServer(name="missing", command="/nonexistent/paddock-mcp-server", env={SECRET_VAR: SECRET_ENV})


@contextlib.contextmanager
def http_server(record: Path, transport: str = "http") -> Iterator[tuple[McpHttpServer, int]]:
    """The test MCP server over HTTP (or SSE) on 127.0.0.1, answering 401 without the header
    secret; yields the server entry and the server's pid (its argv holds the expected header)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "paddock.testing.mcp_server", "--record", str(record), "--name", "paddock-http",
         "--sse" if transport == "sse" else "--http", "--require-header", f"Authorization=Bearer {SECRET_HEADER}"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), f"the test MCP server printed {url!r}"
        yield McpHttpServer(name="paddock-http", url=url, headers={"Authorization": f"Bearer {SECRET_HEADER}"},
                            transport="sse" if transport == "sse" else "http"), proc.pid
    finally:
        proc.kill()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


class CmdlineScan:
    """Reads ``/proc/<pid>/cmdline`` of every process, over and over on its own thread, until
    the block ends; ``hits`` are (pid, argv) holding a secret, ``seen`` every pid read."""

    def __init__(self, exclude: tuple[int, ...] = ()) -> None:
        self.exclude = set(exclude)
        self.hits: list[tuple[int, list[str]]] = []
        self.seen: set[int] = set()
        self.rounds = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cmdline-scan", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for proc in psutil.process_iter():
                try:
                    argv = proc.cmdline()
                except (psutil.Error, OSError):
                    continue
                self.seen.add(proc.pid)
                if proc.pid in self.exclude:
                    continue
                joined = "\0".join(argv)
                if SECRET_ENV in joined or SECRET_HEADER in joined:
                    self.hits.append((proc.pid, argv))
            self.rounds += 1
            self._stop.wait(0.02)

    def __enter__(self) -> CmdlineScan:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)


def assert_no_secret(events) -> None:
    text = b"\n".join(msgspec.json.encode(e) for e in events).decode()
    assert SECRET_ENV not in text and SECRET_HEADER not in text, "a secret reached an event"


def assert_no_secret_in_files(root: Path) -> None:
    """No file under ``root`` (the test's whole tmp folder: homes, config and data dirs, logs,
    transcripts, the model's request log) holds a secret."""
    leaked = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()
              and (SECRET_ENV.encode() in (data := p.read_bytes()) or SECRET_HEADER.encode() in data)]
    assert leaked == [], f"secrets written to {leaked}"


def status_events(events, server: str) -> list:
    return [e for e in events if etype(e) == "mcp.status.updated" and e.server == server]


def assert_connected_at_start(events, turn_id: str, server: str) -> None:
    """``mcp.status.updated(connected)`` for ``server`` came before the turn started: the
    session was ready only once its servers had settled."""
    start = next(i for i, e in enumerate(events) if etype(e) == "turn.started" and e.turn_id == turn_id)
    assert any(etype(e) == "mcp.status.updated" and e.server == server and e.status == "connected"
               for e in events[:start]), [(etype(e), getattr(e, "status", None)) for e in events[:start]]


def assert_connected_before_end(events, turn_id: str, server: str) -> None:
    """``mcp.status.updated(connected)`` for ``server`` came before the turn's ``turn.completed``."""
    end = next(i for i, e in enumerate(events) if etype(e) == "turn.completed" and e.turn_id == turn_id)
    connected = [i for i, e in enumerate(events[:end]) if etype(e) == "mcp.status.updated" and e.server == server
                 and e.status == "connected"]
    assert connected, f"no mcp.status.updated(connected) for {server} before the turn ended: " \
                      f"{[(e.status, e.detail) for e in status_events(events, server)]}"
    first = events[connected[0]]
    assert first.tools is None or first.tools >= 3  # echo, add, env_has


def assert_tool_call(events, turn_id: str, record: Path, model_server, *, server: str, tool: str,
                     arguments: dict, result: str) -> None:
    """The agent called ``tool`` of ``server``: the server's record shows it with its arguments,
    the model's next request carries the result, and the call is an ``mcp_tool_call`` item."""
    calls = read_record(record)
    assert [(c["tool"], c["arguments"]) for c in calls] == [(tool, arguments)]
    follow = [r for r in model_server.requests if r.kind == "follow_up" and r.tool_output and result in r.tool_output]
    assert follow, f"no model request carried {result!r}: {[(r.kind, r.tool_output) for r in model_server.requests]}"
    items = [e for e in events if etype(e) == "item.completed" and e.turn_id == turn_id and e.kind == "mcp_tool_call"]
    assert len(items) == 1, [(etype(e), getattr(e, "kind", None)) for e in events]
    [item] = items
    assert item.status == "completed"
    assert item.data["server"] == server and item.data["tool"] == tool and item.data["arguments"] == arguments
    assert result in (item.text or ""), f"the item does not carry the result: {item.text!r}"


# -- the checks every driver's test_live_mcp.py runs the same way ------------------------------


def check_stdio_echo_turn(h, model_server, record: Path, caplog) -> tuple:
    """Run the echo turn in the started harness ``h`` (its stdio server records to ``record``)
    under a command-line scan, and check what every driver must show: the call end to end,
    ``connected`` before the turn began and before it ended, no warning, the server's pid seen
    and no secret in any command line, event or log line. Returns (turn, events, server pid)."""
    with CmdlineScan() as scan:
        res, evs = h.turn("use the echo tool SCENARIO:mcp_echo")
    assert of_type(evs, "turn.completed")[-1].state == "completed"
    assert_tool_call(evs, res.turn_id, record, model_server, server="paddock-test", tool="echo",
                     arguments=ECHO_ARGS, result="echo: ping from the model")
    assert_connected_before_end(evs, res.turn_id, "paddock-test")
    assert_connected_at_start(evs, res.turn_id, "paddock-test")
    assert not of_type(evs, "runtime.warning")
    # The scan ran while the server lived, and found the secret in no command line.
    server_pid = read_record(record)[0]["pid"]
    assert server_pid in scan.seen and not scan.hits
    assert_no_secret(evs)
    assert SECRET_ENV not in caplog.text
    return res, evs, server_pid


def check_env_secret_and_cwd(make, model_server, tmp_path: Path) -> None:
    """The env secret reaches the server only, and the server runs in its ``cwd``."""
    record = tmp_path / "server-cwd" / "calls.jsonl"  # written relative to the server's cwd
    h = make()
    h.start(runtime_mode="full-access", mcp_servers=(stdio_server(record, in_cwd=True),))
    res, evs = h.turn("is it set? SCENARIO:mcp_env")
    assert read_record(record)[0]["arguments"] == {"name": SECRET_VAR}
    assert any(r.tool_output and "set" in r.tool_output and "unset" not in r.tool_output
               for r in model_server.requests if r.kind == "follow_up")
    assert_no_secret(evs)


def check_http_server_with_header_secret(make, model_server, tmp_path: Path, transport: str) -> None:
    """An HTTP (or SSE) server reached with its header secret, which shows up in no command
    line (but the test server's own), event or file."""
    record = tmp_path / "http-calls.jsonl"
    with http_server(record, transport) as (server, server_pid):
        h = make()
        h.start(runtime_mode="full-access", mcp_servers=(server,))
        with CmdlineScan(exclude=(server_pid,)) as scan:
            res, evs = h.turn("over http SCENARIO:mcp_http")
        assert_tool_call(evs, res.turn_id, record, model_server, server="paddock-http", tool="echo",
                         arguments={"text": "over http"}, result="echo: over http")
        assert_connected_before_end(evs, res.turn_id, "paddock-http")
        assert scan.rounds > 0 and not scan.hits
        assert_no_secret(evs)
        h.close()
        assert_no_secret_in_files(tmp_path)


def check_missing_command(make, model_server, tmp_path: Path, reason: str) -> None:
    """A server whose command does not exist is ``failed`` with ``reason`` in its detail and
    warned once (``mcp.not_connected``); the other server still connects and the turn completes."""
    record = tmp_path / "calls.jsonl"
    h = make()
    h.start(runtime_mode="full-access", mcp_servers=(missing_server(), stdio_server(record)))
    res, evs = h.turn("say hi SCENARIO:text")
    assert of_type(evs, "turn.completed")[-1].state == "completed"
    failed = [e for e in status_events(evs, "missing") if e.status == "failed"]
    assert failed and reason in failed[0].detail
    [warning] = [e for e in of_type(evs, "runtime.warning") if e.code == "mcp.not_connected"]
    assert warning.detail == {"server": "missing", "status": "failed"} and warning.turn_id == res.turn_id
    assert_connected_before_end(evs, res.turn_id, "paddock-test")
    # Reported once: a second turn repeats neither the status nor the warning.
    res2, evs2 = h.turn("again SCENARIO:text")
    assert not status_events(evs2, "missing") and not of_type(evs2, "runtime.warning")
    assert_no_secret(evs + evs2)


def check_call_asks_in_approval_mode(make, model_server, tmp_path: Path):
    """In approval-required mode the MCP call opens a request, nothing runs before the answer,
    and once accepted the call completes end to end. Returns the ``request.opened`` event (its
    payload is the driver's own)."""
    record = tmp_path / "calls.jsonl"
    h = make()
    h.start(runtime_mode="approval-required", mcp_servers=(stdio_server(record),))
    res = h.send("use the echo tool SCENARIO:mcp_echo")
    evs = h.events_until(lambda e: etype(e) in ("request.opened", "turn.completed"))
    [opened] = of_type(evs, "request.opened")
    assert read_record(record) == []  # nothing ran before the answer
    h.adapter.respond_to_request("t1", opened.request_id, "accept", timeout=10)
    evs += h.events_until(lambda e: etype(e) == "turn.completed" and e.turn_id == res.turn_id)
    assert_tool_call(evs, res.turn_id, record, model_server, server="paddock-test", tool="echo",
                     arguments=ECHO_ARGS, result="echo: ping from the model")
    return opened


def gone(pid: int, timeout: float) -> bool:
    """``pid`` ended within ``timeout`` seconds (or was gone already)."""
    try:
        psutil.Process(pid).wait(timeout)
    except psutil.NoSuchProcess:
        pass
    except psutil.TimeoutExpired:
        return False
    return True
