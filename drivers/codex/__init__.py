"""The ``codex`` driver: the Codex app-server (``@openai/codex``, pinned 0.171.0) over stdio JSON
lines, one app-server process per instance, many threads on it.

This first part holds what does not depend on the session base: the instance config, the
``CODEX_HOME`` and shadow-home rules, the wire Structs, the event translation and the router.
"""

from ._capabilities import CODEX_CAPABILITIES as CODEX_CAPABILITIES
from ._config import DEFAULT_APPROVAL_POLICIES as DEFAULT_APPROVAL_POLICIES
from ._config import DEFAULT_SANDBOX_MODES as DEFAULT_SANDBOX_MODES
from ._config import CodexConfig as CodexConfig
from ._home import OFFLINE_SAFE as OFFLINE_SAFE
from ._home import prepare_home as prepare_home

__all__ = [
    "CODEX_CAPABILITIES",
    "DEFAULT_APPROVAL_POLICIES",
    "DEFAULT_SANDBOX_MODES",
    "OFFLINE_SAFE",
    "CodexConfig",
    "prepare_home",
]
