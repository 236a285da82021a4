"""The built-in local agent program: a deterministic ACP v1 agent on stdio.

Run it as ``python -m drivers.local``. Its behaviour comes from directive lines in the prompt
(see :mod:`._directives` and the package README in the report); it keeps per-session history
under its state dir so ``session/load`` works in a fresh process.
"""

from ._main import main as main

__all__ = ["main"]
