"""Two instances of one driver, fully isolated: each sees only its own environment and home.

Run: python examples/two_accounts.py
"""

import tempfile

from paddock import Runtime

config = {
    "instances": {
        "work": {"driver": "local", "env": {"ACCOUNT": "work@example.com"}},
        "personal": {"driver": "local", "env": {"ACCOUNT": "me@example.com"}},
    }
}


def ask(rt, thread, prompt):
    with rt.subscribe(thread_id=thread) as events:
        turn = rt.send_turn(thread, prompt)
        text = []
        for event in events:
            if event.type == "content.delta":
                text.append(event.delta)
            elif event.type == "turn.completed" and event.turn_id == turn.turn_id:
                return "".join(text)


with tempfile.TemporaryDirectory() as tmp, Runtime.open(config, state_dir=f"{tmp}/state") as rt:
    for instance in ("work", "personal"):
        rt.start_session(f"{instance}-thread", instance=instance, cwd=tmp)
        account = ask(rt, f"{instance}-thread", "@env ACCOUNT")
        home = ask(rt, f"{instance}-thread", "@env HOME")
        print(f"{instance}: ACCOUNT={account} HOME={home}")
