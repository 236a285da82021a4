"""A process tree for teardown tests: ``tree.py root`` ->
root (ignores SIGTERM) -> mid -> {stubborn (setsid, ignores SIGTERM), plain}.
Every member prints ``{"role": ..., "pid": ...}`` on the shared stdout once it is ready, then
sleeps (777/888 s, so a leak is easy to grep)."""

import json
import os
import signal
import subprocess
import sys
import time


def ready(role: str) -> None:
    sys.stdout.write(json.dumps({"role": role, "pid": os.getpid()}) + "\n")
    sys.stdout.flush()


def spawn(role: str) -> None:
    subprocess.Popen([sys.executable, __file__, role])


def main() -> None:
    role = sys.argv[1]
    if role == "root":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        spawn("mid")
    elif role == "mid":
        spawn("stubborn")
        spawn("plain")
    elif role == "stubborn":
        os.setsid()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    ready(role)
    seconds = 888 if role == "stubborn" else 777
    while True:
        time.sleep(seconds)


if __name__ == "__main__":
    main()
