"""A process tree for teardown tests: ``tree.py root [daemon]`` ->
root (ignores SIGTERM) -> mid -> {stubborn (setsid, ignores SIGTERM), plain}; with ``daemon``,
mid also double-forks a ``daemon`` (setsid, ignores SIGTERM) whose parent exits at once, so it is
re-parented away from the tree (to the nearest subreaper).
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


def spawn(*args: str) -> None:
    subprocess.Popen([sys.executable, __file__, *args])


def daemonize() -> None:
    if os.fork() > 0:
        return
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    ready("daemon")
    while True:
        time.sleep(888)


def main() -> None:
    role = sys.argv[1]
    daemon = sys.argv[2:] == ["daemon"]
    if role == "root":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        spawn("mid", *sys.argv[2:])
    elif role == "mid":
        spawn("stubborn")
        spawn("plain")
        if daemon:
            daemonize()
    elif role == "stubborn":
        os.setsid()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    ready(role)
    seconds = 888 if role == "stubborn" else 777
    while True:
        time.sleep(seconds)


if __name__ == "__main__":
    main()
