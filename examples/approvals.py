"""Approvals: the agent asks before it writes a file; the host accepts one and declines another.

Run: python examples/approvals.py
"""

import tempfile
from pathlib import Path

from paddock import Runtime

with tempfile.TemporaryDirectory() as tmp, Runtime.open(state_dir=f"{tmp}/state") as rt:
    rt.start_session("t1", instance="local", cwd=tmp, runtime_mode="approval-required")
    for path, decision in (("accepted.txt", "accept"), ("declined.txt", "decline")):
        with rt.subscribe(thread_id="t1") as events:
            turn = rt.send_turn("t1", f"@write {path} hello")
            for event in events:
                if event.type == "request.opened":
                    print(f"agent asks: {event.title or event.kind} -> {decision}")
                    rt.respond_to_request("t1", event.request_id, decision)
                elif event.type == "turn.completed" and event.turn_id == turn.turn_id:
                    break
        print(f"{path} exists: {(Path(tmp) / path).exists()}")
