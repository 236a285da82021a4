"""``terminal/*`` requests: commands the agent asks the client to run, under our supervision.

Each session owns a :class:`Terminals` (created only when ``client_terminal`` is advertised).
Commands run with the instance's environment (plus the variables the agent names), in a
working directory confined to the session's workspace roots, keep at most ``outputByteLimit``
bytes of output, and are killed with their whole process tree when the agent asks, when it
releases them, and when the session ends.

Threads: :meth:`Terminals.handle` runs on the session actor; ``terminal/wait_for_exit`` is
answered from the terminal's exit watcher thread (a write to the agent, nothing else).
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Mapping, Sequence
from typing import Protocol

import msgspec

from paddock.actors import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, Terminal, TerminalExit
from paddock.contract import JsonObject, JsonValue, PaddockError
from paddock.supervisors import LIMITS_VAR, Confinement

from . import _wire as w
from ._fs import RESOURCE_NOT_FOUND

__all__ = ["AgentRequest", "Responder", "Terminals"]


class AgentRequest(Protocol):
    """A request from the agent, its ``params`` undecoded."""

    @property
    def id(self) -> int | str: ...

    @property
    def method(self) -> str: ...

    @property
    def params(self) -> msgspec.Raw: ...


class Responder(Protocol):
    """Answers the agent's requests (the session's current link); any thread."""

    def respond(self, request_id: int | str, result: JsonValue) -> None: ...

    def respond_error(self, request_id: int | str, code: int, message: str) -> None: ...

MAX_TERMINALS = 16
_create_decoder = msgspec.json.Decoder(w.TerminalCreateParams)
_id_decoder = msgspec.json.Decoder(w.TerminalIdParams)
_ids = itertools.count(1)


def _status(exit: TerminalExit | None) -> JsonObject | None:
    return None if exit is None else {"exitCode": exit.exit_code, "signal": exit.signal}


class _Refused(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Terminals:
    """The terminals of one session."""

    def __init__(self, env: Mapping[str, str], default_limit: int, confinement: Confinement | None = None) -> None:
        self._env = dict(env)
        self._confinement = confinement
        self._default_limit = default_limit
        self._terms: dict[str, Terminal] = {}

    def handle(self, req: AgentRequest, link: Responder, roots: Sequence[str], cwd: str) -> None:
        try:
            method = req.method
            if method == "terminal/create":
                link.respond(req.id, {"terminalId": self._create(_create_decoder.decode(req.params), roots, cwd)})
                return
            p = _id_decoder.decode(req.params)
            term = self._terms.get(p.terminalId)
            if term is None:
                raise _Refused(RESOURCE_NOT_FOUND, f"Resource not found: terminal {p.terminalId}")
            if method == "terminal/output":
                text, truncated, exit = term.output()
                link.respond(req.id, {"output": text, "truncated": truncated, "exitStatus": _status(exit)})
            elif method == "terminal/wait_for_exit":
                rid = req.id

                def answer(exit: TerminalExit) -> None:
                    try:
                        link.respond(rid, _status(exit))
                    except PaddockError:
                        pass

                term.on_exit(answer)
            elif method == "terminal/kill":
                term.kill()
                link.respond(req.id, {})
            elif method == "terminal/release":
                self._terms.pop(p.terminalId, None)
                term.kill()
                link.respond(req.id, {})
            else:
                raise _Refused(METHOD_NOT_FOUND, f"Method not found: {method}")
        except _Refused as exc:
            link.respond_error(req.id, exc.code, exc.message)
        except msgspec.DecodeError as exc:
            link.respond_error(req.id, INVALID_PARAMS, f"Invalid params: {exc}")
        except PaddockError as exc:
            link.respond_error(req.id, INTERNAL_ERROR, f"Internal error: {exc}")

    def _create(self, p: w.TerminalCreateParams, roots: Sequence[str], cwd: str) -> str:
        if len(self._terms) >= MAX_TERMINALS:
            raise _Refused(INTERNAL_ERROR, f"Too many terminals (at most {MAX_TERMINALS}); release some first")
        workdir = os.path.realpath(os.path.join(cwd, p.cwd) if p.cwd else cwd)
        if not any(workdir == (r := os.path.realpath(root)) or workdir.startswith(r.rstrip("/") + "/") for root in roots):
            raise _Refused(INVALID_PARAMS, f"Access denied: cwd {p.cwd!r} is outside the session's workspace roots")
        if not os.path.isdir(workdir):
            raise _Refused(RESOURCE_NOT_FOUND, f"Resource not found: {p.cwd}")
        # A bare command line (no args) is run by the shell, as agents expect.
        argv = [p.command, *p.args] if p.args else ["/bin/sh", "-c", p.command]
        # the agent names variables, but never its way out of the instance's resource limits
        env = {**self._env, **{v.name: v.value for v in p.env if v.name != LIMITS_VAR}}
        limit = p.outputByteLimit if p.outputByteLimit is not None else self._default_limit
        term = Terminal(argv, env=env, cwd=workdir, output_limit=limit, confinement=self._confinement)
        term_id = f"term-{next(_ids)}"
        self._terms[term_id] = term
        return term_id

    def close(self, deadline: float) -> None:
        """Kill every terminal of the session (by ``deadline``, a monotonic time)."""
        terms, self._terms = list(self._terms.values()), {}
        for term in terms:
            term.kill(max(0.1, min(2.0, deadline - time.monotonic())))
