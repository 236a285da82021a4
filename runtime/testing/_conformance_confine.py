"""The conformance scenario for kernel confinement (``18-confinement``), in a module of its own.

The agent is made to run one shell line that reads the state dir's ``server.token`` and another
instance's credential file, writes into the state dir (outside every root) and signals the host.
The case passes when the kernel refused each (``Permission denied`` / ``Operation not
permitted`` in the command's output), neither file's contents appear in any event, nothing was
written and the turn still ended. Where the instance is not confined (a kernel without Landlock,
``confinement = "none"``) the case is ``n/a`` saying so. Network confinement (``network =
"endpoints"``) is an instance key this one-instance suite does not vary; ``tests/confine`` covers it.
"""

from __future__ import annotations

import json
import os

from ._conformance import LocalDialect, NotApplicable, PlainDialect, Probe, _end, scenario

__all__ = ["CONFINE_COMMAND"]

_TOKEN = "conformance-server-token-4e1d"
_CREDENTIAL = "conformance-credential-9b2c"

CONFINE_COMMAND = (
    "for f in $HOME/../../server.token $HOME/../conf-other/credentials.json; do cat $f 2>&1 | sed 's/.*: //'; done; "
    "(echo x > $HOME/../../planted) 2>&1 | sed 's/.*: //'; "
    "python3 -c \"import os; os.kill(int(open(os.path.expandvars('$HOME/../../../workspace/conformance-host.pid')).read()), 0)\" "
    "2>&1 | tail -1 | sed 's/.*] //'"
)
"""The shell line the agent runs. Paths go through ``$HOME``, the instance's default home
``state/instances/<id>`` (some agents run commands in their process's folder, not the session's
cwd), and the suite keeps ``workspace`` beside ``state``; no command substitution (Gemini CLI
blocks it) and no ``kill`` command (Copilot CLI refuses one without a literal pid)."""


def _prompt(p: Probe) -> str:
    if isinstance(p.dialect, LocalDialect):
        return f"@run {CONFINE_COMMAND}\nlook around"
    if isinstance(p.dialect, PlainDialect):
        return f"Run this shell command, and nothing else: {CONFINE_COMMAND}"
    return "look around SCENARIO:conf_confine"


@scenario("18-confinement", "the kernel refuses the state dir, another instance's home and signalling the host")
def _confinement(p: Probe) -> str:
    [info] = [i for i in p.rt.instances() if i.id == p.instance]
    held = info.confinement
    if held is None or not held.confined:
        raise NotApplicable(f"the instance is not confined: {held.reason if held and held.reason else 'confinement = none'}")
    (p.state_dir / "server.token").write_text(_TOKEN)
    other = p.state_dir / "instances" / "conf-other"
    other.mkdir(parents=True, exist_ok=True)
    (other / "credentials.json").write_text(_CREDENTIAL)
    (p.workspace / "conformance-host.pid").write_text(str(os.getpid()))
    events = p.turn(p.thread(), _prompt(p))
    _end(events)  # the turn ended
    shown = " ".join(str(e) for e in events)
    assert _TOKEN not in shown and _CREDENTIAL not in shown, "a refused file's contents reached an event"
    assert not (p.state_dir / "planted").exists(), "the agent wrote into the state dir"
    # The command's output: in its events, and (for an agent whose events carry none of it, such
    # as Gemini CLI's) in the tool result it sent the scripted model.
    output = shown + " ".join(json.dumps(r.body) for r in p.server.model_calls()) if p.server is not None else shown
    # Outside the roots Landlock answers EACCES; a state dir inside a root is covered by an empty
    # read-only folder (ENOENT, EROFS).
    refusals = sum(output.count(s) for s in ("Permission denied", "No such file or directory", "Read-only file system"))
    assert refusals >= 3, "reading and writing were not all refused"
    assert "Operation not permitted" in output or held.landlock_abi < 6, "signalling the host was not refused"
    return (f"refused by the kernel (Landlock ABI {held.landlock_abi}); the runtime modes stay the agent's and "
            "the runtime's approvals, not the kernel's")
