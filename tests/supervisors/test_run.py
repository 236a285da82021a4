from __future__ import annotations

import os

import pytest

from paddock.contract import OperationTimeout, ProcessError
from paddock.supervisors import run_command
from tests.helpers import PYTHON, SH

PATH = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def test_output_exit_code_and_explicit_env():
    result = run_command([SH, "-c", "echo out; echo err >&2; echo $ONLY; exit 4"], env={"ONLY": "x"})
    assert (result.returncode, result.stdout, result.stderr) == (4, "out\nx\n", "err\n")


def test_check_raises_with_the_stderr_tail():
    with pytest.raises(ProcessError) as caught:
        run_command([PYTHON, "-c", "import sys; sys.exit('broken install')"], env={}, check=True)
    assert caught.value.exit_code == 1 and "broken install" in caught.value.stderr_tail


def test_missing_binary():
    with pytest.raises(ProcessError) as caught:
        run_command(["no-such-tool-binary", "--version"], env=PATH)
    assert caught.value.exit_code is None and "no-such-tool-binary" in str(caught.value)


def test_timeout_kills_the_whole_tree():
    with pytest.raises(OperationTimeout):
        run_command([SH, "-c", "trap '' TERM; sleep 777 & sleep 888"], env=PATH, timeout=0.3)
