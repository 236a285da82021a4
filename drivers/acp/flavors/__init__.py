"""The per-agent ACP flavors: small records over the shared adapter (:mod:`paddock.drivers.acp`).

Each module documents its agent's spawn command, how the common model keys (``endpoint``,
``api_key``, ``model``) reach it, its switches, its runtime-mode mapping and its traps.
A user's whole config for one of them is ``driver = "<kind>"`` plus the model keys (or the
agent's own login).
"""

from ._claude_acp import CLAUDE_ACP_FLAVOR as CLAUDE_ACP_FLAVOR
from ._codex_acp import CODEX_ACP_FLAVOR as CODEX_ACP_FLAVOR
from ._copilot import COPILOT_FLAVOR as COPILOT_FLAVOR
from ._cursor import CURSOR_FLAVOR as CURSOR_FLAVOR
from ._gemini import GEMINI_FLAVOR as GEMINI_FLAVOR
from ._grok import GROK_FLAVOR as GROK_FLAVOR
from ._kiro import KIRO_FLAVOR as KIRO_FLAVOR
from ._qwen import QWEN_FLAVOR as QWEN_FLAVOR
from ._registry import REGISTRY_FLAVOR as REGISTRY_FLAVOR
from ._registry import RegistryConfig as RegistryConfig

FLAVORS = {f.kind: f for f in (GEMINI_FLAVOR, QWEN_FLAVOR, CLAUDE_ACP_FLAVOR, COPILOT_FLAVOR, CODEX_ACP_FLAVOR)}
"""Kind -> pinned flavor (each has a peer in peers.toml), for the registry and for
``paddock.testing``'s offline builders."""

OTHER_FLAVORS = {f.kind: f for f in (CURSOR_FLAVOR, GROK_FLAVOR, KIRO_FLAVOR, REGISTRY_FLAVOR)}
"""Flavors without a pinned peer (registry agents; agents that cannot be installed here)."""

__all__ = [
    "CLAUDE_ACP_FLAVOR",
    "CODEX_ACP_FLAVOR",
    "COPILOT_FLAVOR",
    "CURSOR_FLAVOR",
    "FLAVORS",
    "GEMINI_FLAVOR",
    "GROK_FLAVOR",
    "KIRO_FLAVOR",
    "OTHER_FLAVORS",
    "QWEN_FLAVOR",
    "REGISTRY_FLAVOR",
    "RegistryConfig",
]
