"""N concurrent sessions spread across several local instances, counted from one subscription.

Run: python examples/many_sessions.py [SESSIONS] [INSTANCES]
"""

import sys
import tempfile
import time

from paddock import Runtime

sessions = int(sys.argv[1]) if len(sys.argv) > 1 else 20
instances = int(sys.argv[2]) if len(sys.argv) > 2 else 4
config = {"instances": {f"local-{i}": {"driver": "local"} for i in range(instances)}}

with tempfile.TemporaryDirectory() as tmp, Runtime.open(config, state_dir=f"{tmp}/state") as rt:
    started = time.monotonic()
    with rt.subscribe(types=["content.delta", "turn.completed"]) as events:
        for n in range(sessions):
            rt.start_session(f"t{n}", instance=f"local-{n % instances}", cwd=tmp)
        turns = {rt.send_turn(f"t{n}", f"@chunks 50\n@reply session {n} done").turn_id for n in range(sessions)}
        deltas = 0
        for event in events:
            if event.type == "content.delta":
                deltas += 1
            elif event.turn_id in turns:
                turns.discard(event.turn_id)
                if not turns:
                    break
    print(f"{sessions} sessions on {instances} instances: {deltas} deltas in {time.monotonic() - started:.2f} s")
