"""A host that exits in an orderly way: ``orderly_host.py MODE 777``.

Starts a Scope with one ``tree.py root`` child (orphan guard OFF, so only an orderly close can
clean up), prints the tree's pids as JSON, then: ``exit`` returns from the script with the scope
still open (the atexit hook must close it); ``sigterm`` waits inside ``with Scope`` until SIGTERM
(``exit_on_signals`` turns it into SystemExit)."""

import json
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from paddock.actors import ProcessActor, ProcessSpec  # noqa: E402
from paddock.supervisors import ChildSpec, Scope, exit_on_signals  # noqa: E402

mode = sys.argv[1]
lines: list[bytes] = []
cond = threading.Condition()


def on_lines(batch: list[bytes]) -> None:
    with cond:
        lines.extend(batch)
        cond.notify_all()


def start(ctx):
    spec = ProcessSpec(
        argv=(sys.executable, str(Path(__file__).with_name("tree.py")), "root"),
        orphan_guard=False,
        shutdown_timeout=1.0,
        graceful_timeout=0.1,
    )
    return ProcessActor.open(spec, on_lines=on_lines, context=ctx).actor_ref


def report() -> None:
    with cond:
        cond.wait_for(lambda: len(lines) >= 4, 30)
    sys.stdout.write(json.dumps([json.loads(x)["pid"] for x in lines]) + "\n")
    sys.stdout.flush()


if mode == "exit":
    scope = Scope([ChildSpec("tree", start, shutdown=1.0)]).start()
    report()
else:
    exit_on_signals()
    with Scope([ChildSpec("tree", start, shutdown=1.0)]):
        report()
        threading.Event().wait()
