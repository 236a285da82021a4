#!/usr/bin/env python3
"""A stand-in for ``opencode serve`` for start-up and teardown tests (no model, no sessions).

``fake_serve.py MODE serve --hostname H --port P``; MODE:
- ``ok``: print the readiness line, serve ``/global/event`` (one ``server.connected``, then
  comments as heartbeats) and ``/global/health``; exit on SIGTERM;
- ``ignore-term``: the same, but SIGTERM is ignored (seen on a fresh data dir): only SIGKILL stops it;
- ``exit-early``: write an error to stderr and exit 1 before the readiness line;
- ``silent``: never print the readiness line;
- ``garbage``: like ``ok``, but the stream also sends one event that is not JSON.
Every request's ``Authorization`` header is checked against ``OPENCODE_SERVER_PASSWORD``.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

mode = sys.argv[1]
port = int(sys.argv[sys.argv.index("--port") + 1])
password = os.environ.get("OPENCODE_SERVER_PASSWORD")

if mode == "exit-early":
    sys.stderr.write("Error: the fake server cannot start (as asked)\n")
    sys.exit(1)
if mode == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        want = "Basic " + base64.b64encode(f"opencode:{password}".encode()).decode()
        if password and self.headers.get("Authorization") != want:
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path.startswith("/global/event"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(b'data: {"payload":{"type":"server.connected","properties":{}}}\n\n')
            self.wfile.flush()
            if mode == "garbage":
                time.sleep(0.5)
                self.wfile.write(b"data: {this is not json\n\n")
                self.wfile.flush()
            while True:
                time.sleep(0.2)
                try:
                    self.wfile.write(b": heartbeat\n\n")
                    self.wfile.flush()
                except OSError:
                    return
        body = json.dumps({"healthy": True, "version": "fake"}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
server.daemon_threads = True
threading.Thread(target=server.serve_forever, daemon=True).start()
if mode != "silent":
    print(f"opencode server listening on http://127.0.0.1:{port}", flush=True)
threading.Event().wait()
