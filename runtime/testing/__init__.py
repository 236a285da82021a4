"""``paddock.testing``: test your own integration offline (as ``trio.testing`` does for trio): the scripted model server (``model_server``), the pinned real CLIs ("peers")
and their offline environments, and the transcript recorder and replayer (``replay``).

- :class:`ModelServer`: OpenAI Responses, Chat Completions, Anthropic Messages and Gemini on
  127.0.0.1, answering from the scenario language (:class:`Script`, :class:`Text`,
  :class:`Shell`, :class:`Write`, :class:`Patch`, :class:`McpCall`, :class:`Fail`, :class:`UsageLimit`, :class:`RateLimits`);
- peers: :func:`load_pins` (the pins shipped with the package), :func:`install_peer`, :func:`peer_argv`;
- :func:`build_offline_env`: private homes, config files and switches that keep a CLI offline;
- transcripts: :class:`Recorder` (a line tap for our transports), :func:`load_transcript`,
  :func:`record` (``paddock record``), ``python -m paddock.testing.replay`` (the fake process),
  and the minimal scripted sessions in :data:`SESSIONS`;
- :func:`collect_turn`: one turn through a :class:`paddock.Runtime`, its events collected up to
  its ``turn.completed``;
- ``python -m paddock.testing.mcp_server``: a test MCP server (the ``mcp`` extra) that records
  every tool call to a file.
"""

from ._offline import MOCK_KEY as MOCK_KEY
from ._offline import OFFLINE_BUILDERS as OFFLINE_BUILDERS
from ._offline import OfflineEnv as OfflineEnv
from ._offline import build_offline_env as build_offline_env
from paddock.drivers._peers import Peer as Peer
from paddock.drivers._peers import default_peers_dir as default_peers_dir
from paddock.drivers._peers import default_pins_file as default_pins_file
from paddock.drivers._peers import installed_version as installed_version
from paddock.drivers._peers import load_pins as load_pins
from paddock.drivers._peers import peer_argv as peer_argv
from ._peers import InstallResult as InstallResult
from ._peers import install_peer as install_peer
from ._flavor_session import FLAVOR_MODELS as FLAVOR_MODELS
from ._flavor_session import FLAVOR_SCRIPT as FLAVOR_SCRIPT
from ._flavor_session import FlavorTurn as FlavorTurn
from ._flavor_session import drive_flavor as drive_flavor
from ._flavor_session import record_flavor as record_flavor
from ._record import RecordResult as RecordResult
from ._record import record as record
from ._scenario import BUILTIN_SCENARIOS as BUILTIN_SCENARIOS
from ._scenario import Fail as Fail
from ._scenario import McpCall as McpCall
from ._scenario import Patch as Patch
from ._scenario import Script as Script
from ._scenario import Shell as Shell
from ._scenario import Text as Text
from ._scenario import RateLimits as RateLimits
from ._scenario import UsageLimit as UsageLimit
from ._scenario import Write as Write
from ._scenario import load_script as load_script
from ._scenario import parse_script as parse_script
from ._sessions import SESSIONS as SESSIONS
from ._sessions import SessionResult as SessionResult
from ._transcript import Recorder as Recorder
from ._transcript import Transcript as Transcript
from ._transcript import load_transcript as load_transcript
from ._turn import collect_turn as collect_turn
from .model_server import ModelServer as ModelServer
from .model_server import RequestRecord as RequestRecord

__all__ = [
    "BUILTIN_SCENARIOS",
    "FLAVOR_MODELS",
    "FLAVOR_SCRIPT",
    "MOCK_KEY",
    "OFFLINE_BUILDERS",
    "SESSIONS",
    "Fail",
    "FlavorTurn",
    "InstallResult",
    "McpCall",
    "ModelServer",
    "OfflineEnv",
    "Patch",
    "Peer",
    "RecordResult",
    "Recorder",
    "RequestRecord",
    "Script",
    "SessionResult",
    "Shell",
    "Text",
    "RateLimits",
    "UsageLimit",
    "Transcript",
    "Write",
    "build_offline_env",
    "collect_turn",
    "default_peers_dir",
    "default_pins_file",
    "drive_flavor",
    "install_peer",
    "installed_version",
    "load_pins",
    "load_script",
    "load_transcript",
    "parse_script",
    "peer_argv",
    "record",
    "record_flavor",
]
