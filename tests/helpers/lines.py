"""Line-protocol helper: echoes each stdin line to stdout; ``exit N`` exits with N after writing
``bye`` to stderr; ``stop-reading`` stops reading stdin forever (sleeps 777 s)."""

import sys
import time

for line in sys.stdin:
    cmd = line.rstrip("\n")
    if cmd.startswith("exit "):
        sys.stderr.write("bye\n")
        sys.stderr.flush()
        sys.exit(int(cmd.split()[1]))
    if cmd == "stop-reading":
        time.sleep(777)
    sys.stdout.write(cmd + "\n")
    sys.stdout.flush()
