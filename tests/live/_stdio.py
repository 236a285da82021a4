"""A deliberately minimal line-JSON peer for live tests (not a driver): spawn, send lines, collect
decoded stdout lines on a reader thread, wait for a matching message, and kill the process group."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable

import psutil

_LOOPBACK_PREFIXES = ("127.", "::1", "::ffff:127.")


class LoopbackGuard:
    """Samples the socket table of a process tree every 20 ms and remembers every remote address
    that is not loopback (a second tripwire next to the proxy; it catches direct connections)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.foreign: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="loopback-guard", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            try:
                root = psutil.Process(self.pid)
                procs = [root, *root.children(recursive=True)]
            except psutil.Error:
                continue
            for proc in procs:
                try:
                    conns = proc.net_connections(kind="inet")
                except psutil.Error:
                    continue
                for conn in conns:
                    if conn.raddr and not str(conn.raddr.ip).startswith(_LOOPBACK_PREFIXES):
                        self.foreign.add(f"{conn.raddr.ip}:{conn.raddr.port}")

    def stop(self) -> set[str]:
        self._stop.set()
        self._thread.join(2)
        return self.foreign


class StdioPeer:
    def __init__(self, argv: list[str], *, env: dict[str, str], cwd: str,
                 on_request: Callable[[dict], dict] | None = None) -> None:
        """``on_request(msg)`` answers requests FROM the peer on the reader thread; it returns the
        reply object (``{"result": ...}`` or ``{"error": ...}``) that is sent back with the id."""
        self.started = time.monotonic()
        self._on_request = on_request
        self._send_lock = threading.Lock()
        self.proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, start_new_session=True)
        self.guard = LoopbackGuard(self.proc.pid)
        self.messages: list[dict] = []
        self._cond = threading.Condition()
        self.stderr = bytearray()
        self._next_id = 0
        self._threads = [threading.Thread(target=self._read, daemon=True),
                         threading.Thread(target=self._drain, daemon=True)]
        for t in self._threads:
            t.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            with self._cond:
                self.messages.append(msg)
                self._cond.notify_all()
            if self._on_request and isinstance(msg, dict) and "method" in msg and "id" in msg:
                try:
                    self.send({"jsonrpc": "2.0", "id": msg["id"], **self._on_request(msg)})
                except OSError:
                    pass
        with self._cond:
            self._cond.notify_all()

    def _drain(self) -> None:
        for chunk in iter(lambda: self.proc.stderr.read(4096), b""):
            self.stderr += chunk

    def send(self, msg: dict) -> None:
        with self._send_lock:
            self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
            self.proc.stdin.flush()

    def wait_for(self, predicate: Callable[[dict], bool], *, timeout: float, what: str = "message") -> dict:
        deadline = time.monotonic() + timeout
        with self._cond:
            seen = 0
            while True:
                for msg in self.messages[seen:]:
                    if predicate(msg):
                        return msg
                seen = len(self.messages)
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None and not self._threads[0].is_alive():
                    tail = bytes(self.stderr[-2000:]).decode("utf-8", "replace")
                    raise AssertionError(f"no {what} within {timeout} s (rc={self.proc.poll()}); "
                                         f"last messages: {self.messages[-5:]}\nstderr tail:\n{tail}")
                self._cond.wait(min(left, 0.5))

    def request(self, method: str, params: dict | None = None, *, timeout: float = 30.0, jsonrpc: bool = True) -> dict:
        """Send a JSON-RPC request; return the response (answers nothing the peer asks meanwhile)."""
        self._next_id += 1
        rid = self._next_id
        msg = {"id": rid, "method": method, "params": params or {}}
        if jsonrpc:
            msg = {"jsonrpc": "2.0", **msg}
        self.send(msg)
        reply = self.wait_for(lambda m: m.get("id") == rid and "method" not in m, timeout=timeout, what=f"{method} reply")
        assert "error" not in reply, f"{method} failed: {reply['error']}"
        return reply["result"]

    def close(self, *, timeout: float = 5.0) -> None:
        """Close stdin, give the process ``timeout`` seconds, then kill its whole group."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        for t in self._threads:
            t.join(2)
        self.proc.stdout.close()
        self.proc.stderr.close()
        self.guard.stop()
