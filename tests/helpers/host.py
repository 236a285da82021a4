"""A host process for orphan-guard tests: ``host.py STATE_DIR GUARD N 777``.

Runs a Scope with N ``tree.py root`` children (``root daemon`` with the guard on) (leases in STATE_DIR, orphan guard on if GUARD is
"1"), prints ``{"trees": [{role: pid}, ...]}`` once every tree member is ready, then waits to be
killed."""

import json
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from paddock.actors import ProcessActor, ProcessSpec  # noqa: E402
from paddock.supervisors import ChildSpec, Scope  # noqa: E402

state_dir, guard, count = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3])
tree_py = str(Path(__file__).with_name("tree.py"))
# With the guard on each tree also has a double-forked daemon (only the shim can catch it; a
# lease sweep cannot, since it left the leased process's tree).
per_tree = 5 if guard else 4
lines: dict[int, list[bytes]] = {}
cond = threading.Condition()


def child(n: int) -> ChildSpec:
    def on_lines(batch: list[bytes]) -> None:
        with cond:
            lines.setdefault(n, []).extend(batch)
            cond.notify_all()

    def start(ctx):
        spec = ProcessSpec(
            argv=(sys.executable, tree_py, "root", *(["daemon"] if guard else [])),
            name=f"tree{n}",
            owner="host-test",
            lease_dir=state_dir,
            orphan_guard=guard,
        )
        return ProcessActor.open(spec, on_lines=on_lines, context=ctx).actor_ref

    return ChildSpec(f"tree{n}", start)


with Scope([child(n) for n in range(count)], name="host"):
    with cond:
        cond.wait_for(lambda: sum(len(v) for v in lines.values()) >= per_tree * count, 30)
    trees = [{d["role"]: d["pid"] for d in map(json.loads, lines[n])} for n in range(count)]
    sys.stdout.write(json.dumps({"trees": trees}) + "\n")
    sys.stdout.flush()
    threading.Event().wait()
