"""One session on the built-in local agent: send a turn and print the streamed answer.

Run: python examples/quickstart.py
"""

import tempfile

from paddock import Runtime

with tempfile.TemporaryDirectory() as tmp, Runtime.open(state_dir=f"{tmp}/state") as rt:
    rt.start_session("hello", instance="local", cwd=tmp)
    with rt.subscribe(thread_id="hello") as events:
        turn = rt.send_turn("hello", "@chunks 5\n@reply Hello from the local agent!")
        for event in events:
            if event.type == "content.delta":
                print(event.delta, end="", flush=True)
            elif event.type == "turn.completed" and event.turn_id == turn.turn_id:
                print(f"\n[turn {event.state}]")
                break
