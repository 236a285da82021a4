"""The replayer's HTTP mode: a fake ``opencode serve`` playing an ``http`` transcript.

Requests are matched against ``expect_outbound`` frames in arrival order; ``emit_inbound``
response frames answer the request with the same ``req``; event frames are written to the SSE
stream opened by their ``req``. It prints OpenCode's readiness line and serves until SIGTERM.
"""

from __future__ import annotations

import itertools
import json
import queue
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ._transcript import Normaliser, Transcript, diff_frames, dumps_line, matches

__all__ = ["serve_http"]


class _Exchange:
    def __init__(self, msg: dict) -> None:
        self.msg = msg
        self.response: dict | None = None
        self.answered = threading.Event()
        self.events: queue.Queue = queue.Queue()


def serve_http(transcript: Transcript, norm: Normaliser, port: int) -> int:
    stop = threading.Event()
    failure: list[str] = []
    arrivals: queue.Queue[_Exchange] = queue.Queue()
    counter = itertools.count(1)
    exchanges: dict[int, _Exchange] = {}
    played = [0]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

        def _any(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            exchange = _Exchange({"http": "request", "req": next(counter), "method": self.command,
                                  "path": self.path, "body": body})
            arrivals.put(exchange)
            while not exchange.answered.wait(0.1):
                if stop.is_set():
                    return
            response = exchange.response
            if response is None:
                self._json(500, {"error": "replay mismatch; see the replayer's stderr"})
                return
            if response.get("stream"):
                self.send_response(response.get("status", 200))
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                while True:
                    data = exchange.events.get()
                    if data is None:
                        return
                    try:
                        self.wfile.write(f"data: {dumps_line(data)}\n\n".encode())
                        self.wfile.flush()
                    except OSError:
                        return
            self._json(response.get("status", 200), response.get("body"))

        def _json(self, status: int, body: object) -> None:
            data = b"" if body is None else dumps_line(body).encode()
            self.send_response(status)
            if data:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

    def play() -> None:
        total = len(transcript.frames)
        for index, frame in enumerate(transcript.frames, start=1):
            if frame["type"] == "expect_outbound":
                while True:
                    try:
                        exchange = arrivals.get(timeout=0.1)
                        break
                    except queue.Empty:
                        if stop.is_set():
                            return
                exchanges[exchange.msg["req"]] = exchange
                got = norm.frame(dumps_line(exchange.msg).encode(), True).get("msg")
                if not matches(frame.get("msg"), got):
                    failure.append(f"replay mismatch at frame {index} of {total}: the client sent a different "
                                   f"request than recorded:\n{diff_frames(frame.get('msg'), got)}")
                    exchange.answered.set()
                    stop.set()
                    return
            else:
                msg = json.loads(norm.inbound_line(frame))
                target = exchanges.get(msg.get("req"))
                if target is None:
                    continue
                if msg.get("http") == "response":
                    target.response = msg
                    target.answered.set()
                elif msg.get("http") == "event":
                    target.events.put(msg.get("data"))
            played[0] = index

    # SIGTERM/SIGINT are taken with sigwait() in the main thread (blocked before any thread
    # starts, so every thread inherits the mask): a Python handler calling Event.set() can
    # deadlock when it interrupts the main thread inside that Event's own lock.
    signals = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    main_thread = threading.main_thread().ident
    assert main_thread is not None  # the main thread is running: its ident is set
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()

    def play_then_wake() -> None:
        play()
        if failure:
            signal.pthread_kill(main_thread, signal.SIGTERM)

    player = threading.Thread(target=play_then_wake, daemon=True)
    player.start()
    print(f"opencode server listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    signal.sigwait(signals)
    stop.set()
    player.join(2)
    for exchange in exchanges.values():
        exchange.events.put(None)
    server.shutdown()
    server.server_close()
    if failure:
        sys.stderr.write(failure[0].rstrip("\n") + "\n")
        return 3
    missing = [i for i, f in enumerate(transcript.frames, start=1) if i > played[0] and f["type"] == "expect_outbound"]
    if missing:
        sys.stderr.write(f"replay mismatch: stopped before the client made {len(missing)} recorded request(s); "
                         f"the next is frame {missing[0]}:\n"
                         f"{diff_frames(transcript.frames[missing[0] - 1].get('msg'), None)}\n")
        return 3
    return 0
