"""Small programs run as real child processes by the supervision and transport tests."""

import shutil
import sys
from pathlib import Path

HELPERS = Path(__file__).resolve().parent
PYTHON = sys.executable
SLEEP = shutil.which("sleep") or "/bin/sleep"
SH = shutil.which("sh") or "/bin/sh"


def helper(name: str, *args: str) -> tuple[str, ...]:
    """argv running ``tests/helpers/<name>.py`` with this interpreter."""
    return (PYTHON, str(HELPERS / f"{name}.py"), *args)
