"""Writes ``argv[1]`` MiB to stdout without a newline, then ``b"\\nafter\\n"`` and exits."""

import sys

chunk = b"x" * (1024 * 1024)
out = sys.stdout.buffer
for _ in range(int(sys.argv[1])):
    out.write(chunk)
out.write(b"\nafter\n")
out.flush()
