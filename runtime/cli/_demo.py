"""``paddock demo``: the main job on a fresh machine.

Two isolated instances of the built-in ``local`` agent run several concurrent sessions: streaming,
a plan with token usage, an approval that writes a file, an interrupt, and an isolation check.
Progress is shown live and a summary table closes the run. Exit status 0 means every scenario
ended as expected.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from paddock.cli._common import event_json, format_event, handle_termination, write

if TYPE_CHECKING:
    from paddock.contract import RuntimeMode

HELP = "run several concurrent sessions on two local instances and print a summary"

SCENARIOS: list[tuple[str, str, RuntimeMode, str, str]] = [
    # thread, instance, runtime mode, prompt, expected turn state
    ("stream-a", "local-a", "full-access", "@chunks 40\n@delay 0.01\n@reply Paddock streams every delta of every session as one canonical, sequenced event stream.", "completed"),
    ("plan-b", "local-b", "full-access", "@plan read the code; write a test; run it\n@usage 1200 340\n@chunks 12\n@reply Plan made, tokens counted.", "completed"),
    ("approve-a", "local-a", "approval-required", "@write notes/hello.txt written after an approval", "completed"),
    ("interrupt-b", "local-b", "full-access", "@chunks 400\n@delay 0.01\n@reply This long answer is interrupted before it ends.", "interrupted"),
    ("env-a", "local-a", "full-access", "@env PADDOCK_DEMO_ACCOUNT", "completed"),
    ("env-b", "local-b", "full-access", "@env PADDOCK_DEMO_ACCOUNT", "completed"),
    ("secret-b", "local-b", "full-access", "@env OPENAI_API_KEY", "completed"),
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state-dir", help="keep state here (default: a temporary directory)")
    parser.add_argument("--json", action="store_true", help="print every event as JSONL, then the summary as JSON")
    parser.add_argument("--quiet", action="store_true", help="print only the summary")


class _Row:
    def __init__(self, thread: str, instance: str, mode: str, expected: str) -> None:
        self.thread, self.instance, self.mode, self.expected = thread, instance, mode, expected
        self.state = "-"
        self.deltas = 0
        self.text: list[str] = []
        self.events = 0
        self.started = time.monotonic()
        self.seconds = 0.0
        self.note = ""
        self.done = threading.Event()


def run(args: argparse.Namespace) -> int:
    from paddock import Runtime

    handle_termination()
    tmp = Path(tempfile.mkdtemp(prefix="paddock-demo-"))
    state_dir = Path(args.state_dir) if args.state_dir else tmp / "state"
    config = {
        "instances": {
            "local-a": {"driver": "local", "env": {"PADDOCK_DEMO_ACCOUNT": "account-a"}},
            "local-b": {"driver": "local", "env": {"PADDOCK_DEMO_ACCOUNT": "account-b"}},
        }
    }
    rows = {s[0]: _Row(s[0], s[1], s[2], s[4]) for s in SCENARIOS}
    t0 = time.monotonic()
    say = (lambda text: None) if (args.quiet or args.json) else (lambda text: write(text + "\n"))
    say(f"paddock demo: 2 local instances, {len(SCENARIOS)} concurrent sessions (state in {state_dir})")
    rt = Runtime.open(config, state_dir=state_dir)
    ok = False
    try:
        workspaces = {}
        for inst in ("local-a", "local-b"):
            workspaces[inst] = tmp / f"workspace-{inst}"
            workspaces[inst].mkdir(parents=True, exist_ok=True)
        sub = rt.subscribe()
        for thread, instance, mode, _prompt, _ in SCENARIOS:
            rt.start_session(thread, instance=instance, cwd=str(workspaces[instance]), runtime_mode=mode)
        turns = {}
        for thread, _instance, _mode, prompt, _ in SCENARIOS:
            turns[thread] = rt.send_turn(thread, prompt).turn_id
        deadline = time.monotonic() + 60
        pending = set(rows)
        while pending and time.monotonic() < deadline:
            event = sub.get(timeout=0.5)
            if event is None:
                continue
            row = rows.get(event.thread_id)
            if args.json:
                write(event_json(event) + "\n")
            if row is None:
                continue
            row.events += 1
            if event.type == "content.delta" and event.stream == "assistant_text":
                row.deltas += 1
                row.text.append(event.delta)
                if row.thread == "interrupt-b" and row.deltas == 20:
                    rt.interrupt_turn(row.thread, turns[row.thread])
                    say(f"[{row.thread}] interrupt sent after 20 deltas")
                continue
            line = format_event(event)
            if line and event.type not in ("turn.started",):
                say(line)
            if event.type == "request.opened" and event.request_id is not None:
                rt.respond_to_request(event.thread_id, event.request_id, "accept")
                say(f"[{row.thread}] host accepts the {event.kind} request")
            if event.type == "turn.completed" and event.turn_id == turns.get(row.thread):
                row.state = event.state
                row.seconds = time.monotonic() - row.started
                pending.discard(row.thread)
        sub.close()
        # Facts checked on the file system and in the replies, not just in events.
        written = workspaces["local-a"] / "notes" / "hello.txt"
        rows["approve-a"].note = "file written" if written.is_file() else "file MISSING"
        for thread, expect in (("env-a", "account-a"), ("env-b", "account-b"), ("secret-b", "<unset>")):
            text = "".join(rows[thread].text)
            rows[thread].note = f"sees {text!r}" + ("" if expect in text else f" (expected {expect!r})")
        rows["stream-a"].note = f"{len(''.join(rows['stream-a'].text))} chars"
        rows["interrupt-b"].note = f"stopped after {rows['interrupt-b'].deltas} of 400 deltas"
        ok = all(r.state == r.expected for r in rows.values()) and written.is_file() and all(
            "expected" not in rows[t].note for t in ("env-a", "env-b", "secret-b")
        )
    finally:
        close_started = time.monotonic()
        rt.close()
        close_seconds = time.monotonic() - close_started
        if not args.state_dir:
            shutil.rmtree(tmp, ignore_errors=True)
    total = time.monotonic() - t0
    if args.json:
        import json

        write(json.dumps({
            "ok": ok,
            "seconds": round(total, 3),
            "close_seconds": round(close_seconds, 3),
            "sessions": [
                {"thread": r.thread, "instance": r.instance, "mode": r.mode, "state": r.state,
                 "expected": r.expected, "deltas": r.deltas, "events": r.events, "note": r.note}
                for r in rows.values()
            ],
        }) + "\n")
    else:
        _table(rows.values(), total, close_seconds)
        write(("demo ok\n" if ok else "demo FAILED: some sessions did not end as expected\n"))
    return 0 if ok else 1


def _table(rows, total: float, close_seconds: float) -> None:
    header = ("thread", "instance", "mode", "turn", "deltas", "events", "seconds", "note")
    data = [
        (r.thread, r.instance, r.mode, r.state + ("" if r.state == r.expected else f" (expected {r.expected})"),
         str(r.deltas), str(r.events), f"{r.seconds:.2f}", r.note)
        for r in rows
    ]
    widths = [max(len(h), *(len(d[i]) for d in data)) for i, h in enumerate(header)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths))
    write("\n" + line + "\n" + "-" * len(line) + "\n")
    for d in data:
        write("  ".join(c.ljust(w) for c, w in zip(d, widths)) + "\n")
    write(f"\n{len(data)} sessions on 2 isolated instances in {total:.2f} s; close() took {close_seconds:.2f} s\n")
