"""The README's Python examples type-check with ``mypy --strict`` against an editable install,
the README's own first command (``pip install -e .``): a host's type checker must find
``paddock`` (setuptools serves the folder mapping through an import hook mypy cannot follow; the
build backend adds a tree it can, build_backend/paddock_build.py) and the examples must be right
as written (``event.request_id`` is a ``str`` once ``event.type`` says ``request.opened``;
``McpStdioServer(args=[...])`` takes a list).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_examples() -> list[str]:
    """The README's ```python blocks, in order."""
    return re.findall(r"^```python\n(.*?)^```", (ROOT / "README.md").read_text(), flags=re.S | re.M)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_the_readme_examples_pass_mypy_strict_against_an_editable_install(tmp_path):
    pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -e '.[test]'")
    examples = readme_examples()
    assert len(examples) >= 2
    for i, code in enumerate(examples):
        (tmp_path / f"example_{i}.py").write_text(code)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--quiet", "-e", str(ROOT)],
        capture_output=True, text=True, timeout=150, env=env,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--config-file", os.devnull,
         "--cache-dir", str(tmp_path / "cache"), "--python-executable", str(venv / "bin" / "python"),
         *sorted(p.name for p in tmp_path.glob("example_*.py"))],
        cwd=tmp_path, capture_output=True, text=True, timeout=150, env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
