"""Writes a diagnostic to stderr and exits 2 at once (a child that fails at start-up)."""

import sys

sys.stderr.write("error: config file /nonexistent/agent.toml not found\n")
sys.exit(2)
