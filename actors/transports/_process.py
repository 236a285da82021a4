"""ProcessActor: one native child process, its pipes, its exit, its teardown.

Threads per child: one stdout reader (splits lines, calls ``on_lines`` once per read batch), one
stderr reader (keeps the last ``stderr_ring_bytes``), one bounded stdin writer (which only writes
what the non-blocking pipe did not take at once from the caller) and one exit watcher. None of them runs inside the actor's message loop; the actor only handles lifecycle
(start, the exit notice, shutdown).
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict, Unpack

import msgspec
import pykka

from paddock.contract import ProcessError
from paddock.supervisors import (
    ChildContext,
    Confinement,
    ExitReason,
    LeaseStore,
    SpawnRequest,
    SupervisedActor,
    kill_tree,
    spawn,
    teardown,
)

from ._lines import LineSplitter, StderrRing, StdinWriter, read_stderr, read_stdout_lines

__all__ = ["ExitInfo", "ProcessActor", "ProcessCallbacks", "ProcessHandle", "ProcessSpec", "WarningSink"]

log = logging.getLogger("paddock.actors")

WarningSink = Callable[[str, str, dict[str, Any]], None]
"""``on_warning(code, message, detail)``; becomes a canonical ``runtime.warning`` upstream."""


def warn(sink: WarningSink | None, code: str, message: str, detail: dict[str, Any]) -> None:
    """Hand a warning to ``sink`` (or log it when there is none); a failing sink is logged,
    never raised into the transport that reported it. Thread: the caller's."""
    if sink is None:
        log.warning("%s", message)
        return
    try:
        sink(code, message, detail)
    except Exception:
        log.exception("on_warning callback failed")


@dataclass(frozen=True, kw_only=True)
class ProcessSpec:
    """How to start one child process.

    ``env`` is the complete environment (the ambient one is used only with ``inherit_env=True``,
    and then ``env`` overrides it). ``graceful(handle)`` is the protocol's polite shutdown step
    (default: close stdin); the teardown then SIGTERMs the group and SIGKILLs at
    ``shutdown_timeout``. ``owner`` (an instance id or label) is written into the lease, and
    leases are written only when ``lease_dir`` (the runtime's state dir) is set.
    ``startup_grace`` > 0 makes start wait that long and fail with a ProcessError (showing the
    stderr) if the child exits meanwhile. ``orphan_guard=False`` disables the shim (tests only).
    """

    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    inherit_env: bool = False
    cwd: str | None = None
    name: str | None = None
    max_line_bytes: int = 16 * 1024 * 1024
    stderr_ring_bytes: int = 64 * 1024
    read_chunk_bytes: int = 256 * 1024
    read_coalesce: float = 0.0
    """Seconds to wait after a short stdout read before the next one (0: read at once); see
    :func:`paddock.actors.transports._lines.read_stdout_lines`. For children that write one small line per
    write at a high rate."""
    max_stdin_bytes: int = 16 * 1024 * 1024
    graceful: Callable[[ProcessHandle], None] | None = None
    graceful_timeout: float | None = None
    shutdown_timeout: float = 5.0
    startup_grace: float = 0.0
    owner: str = ""
    lease_dir: str | None = None
    orphan_guard: bool = True
    confinement: Confinement | None = None
    """Landlock rules the child runs under (``paddock.supervisors.Confinement``; ``None``:
    unconfined); a child that cannot be confined fails to start."""

    @property
    def label(self) -> str:
        return self.name or os.path.basename(self.argv[0])


class ExitInfo(msgspec.Struct, frozen=True, kw_only=True):
    """How a child ended. ``returncode`` is negative when killed by a signal (then ``signal`` is
    set); ``stderr_tail`` is the end of its stderr; ``requested`` is True when the owner or the
    supervisor stopped it."""

    argv: tuple[str, ...]
    name: str
    pid: int
    returncode: int
    signal: int | None
    stderr_tail: str
    requested: bool

    @property
    def ok(self) -> bool:
        return self.returncode == 0 or self.requested

    def error(self, detail: str | None = None) -> ProcessError:
        """A ProcessError naming the command, with the exit code and the stderr tail."""
        return ProcessError(
            detail or f"{self.name!r} exited",
            self.returncode,
            stderr_tail=self.stderr_tail[-4096:],
        )


class ProcessHandle:
    """Thread-safe access to a running child: write to it, read its stderr tail, stop it.

    Created by :class:`ProcessActor`; ``actor_ref`` is the owning actor. Every method may be
    called from any thread.
    """

    def __init__(self, spec: ProcessSpec, actor_ref: pykka.ActorRef[Any]) -> None:
        self.spec = spec
        self.actor_ref = actor_ref
        self.name = spec.label
        self.pid: int | None = None
        self._popen: subprocess.Popen | None = None
        self._writer: StdinWriter | None = None
        self._stderr = StderrRing(spec.stderr_ring_bytes)
        self._exited = threading.Event()
        self._exit_info: ExitInfo | None = None
        self._requested = False
        self._stop_lock = threading.Lock()
        self._stopped = False

    def write(self, data: bytes, *, timeout: float = 0.0) -> None:
        """Queue raw bytes for stdin; see :class:`StdinWriter` for the bound and errors."""
        self._require_writer().write(data, timeout=timeout)

    def write_lines(self, lines: list[bytes], *, timeout: float = 0.0) -> None:
        """Queue lines (a ``\\n`` is appended to each) for stdin."""
        self._require_writer().write_lines(lines, timeout=timeout)

    def input_gone(self) -> str | None:
        """Why the child can no longer read what is written to it, or ``None`` while it can:
        it exited (reported or not yet: its stdin's read end closed with it), or it closed
        its stdin. A write would fail; whoever was about to write treats the child as dead.
        Thread: any; one ``poll`` syscall."""
        if self._exit_info is not None:
            return "the process exited"
        writer = self._writer
        if writer is None:
            return "the process is not running"
        return writer.reader_gone()

    def close_stdin(self) -> None:
        if self._writer is not None:
            self._writer.close()

    def stderr_tail(self) -> str:
        return self._stderr.tail()

    @property
    def exit_info(self) -> ExitInfo | None:
        return self._exit_info

    def wait(self, timeout: float | None = None) -> ExitInfo | None:
        """Block until the child has exited and been reported; its ExitInfo or None."""
        self._exited.wait(timeout)
        return self._exit_info

    def terminate(self, timeout: float | None = None) -> None:
        """Tear the whole process tree down (graceful step, SIGTERM, SIGKILL after ``timeout``,
        default ``spec.shutdown_timeout``) and wait for the exit report. Idempotent."""
        budget = self.spec.shutdown_timeout if timeout is None else timeout
        with self._stop_lock:
            if self._popen is None:
                return
            already = self._stopped
            self._stopped = True
            self._requested = True
            popen = self._popen
        if already:  # another thread is tearing it down: wait for that instead
            self._exited.wait(budget + 3.0)
            return
        graceful = self.spec.graceful
        report = teardown(
            popen,
            timeout=budget,
            graceful=(lambda: graceful(self)) if graceful is not None else self.close_stdin,
            graceful_timeout=self.spec.graceful_timeout,
        )
        if report.survivors:
            log.error("%s: processes survived teardown: %s", self.name, report.survivors)
        self._exited.wait(3.0)

    def kill(self) -> None:
        """SIGKILL the process group and tree at once (a supervisor's brutal kill)."""
        self._requested = True
        popen = self._popen
        if popen is None or popen.poll() is not None:
            return
        kill_tree(popen.pid, max_age=0.05)

    def _require_writer(self) -> StdinWriter:
        if self._writer is None:
            raise ProcessError(f"{self.name!r} is not running")
        return self._writer


class ProcessCallbacks(TypedDict):
    """The callbacks of a :class:`ProcessActor`, by keyword (their threads: see the class)."""

    on_lines: Callable[[list[bytes]], None]
    on_exit: NotRequired[Callable[[ExitInfo], None] | None]
    on_warning: NotRequired[WarningSink | None]
    on_outbound_line: NotRequired[Callable[[bytes], None] | None]
    on_stderr: NotRequired[Callable[[bytes], None] | None]


@dataclass(frozen=True, slots=True)
class _ProcessExited:
    info: ExitInfo


class ProcessActor(SupervisedActor):
    """A pykka actor owning one native child process.

    Callbacks and their threads:

    - ``on_lines(lines: list[bytes])``: the stdout reader thread, once per read batch, lines
      without their ``\\n``. Keep it short; typically ``owner_ref.tell(lines)``.
    - ``on_warning(code, message, detail)``: the stdout reader thread (``"line_too_long"``: a
      line over ``max_line_bytes`` was skipped without being held in memory).
    - ``on_exit(info: ExitInfo)``: the exit watcher thread, after every stdout line has been
      delivered (bounded wait) and the stderr tail collected.
    - ``on_stderr(chunk: bytes)``: the stderr reader thread, for each chunk read (the tail is
      kept regardless).
    - ``on_outbound_line(line)``: the writing thread (the caller's, or the stdin writer's
      when the pipe was busy), in write order, for each line written with
      ``write_lines`` (the transcript tap).

    The child's own exit stops the actor: exit code 0 (or a requested stop) is a normal exit,
    anything else an error carrying ``ExitInfo.error()``, which a supervisor may restart.
    A missing binary, or (with ``startup_grace``) an exit during start-up, fails ``on_start``
    with a ProcessError naming the command and showing its stderr. Stopping the actor
    (``ref.stop()``, a supervisor shutdown, a Scope close) tears the whole process tree down
    before the actor's thread ends. Use :meth:`open` to start one and get its handle.
    """

    def __init__(
        self, spec: ProcessSpec, *, context: ChildContext | None = None, **callbacks: Unpack[ProcessCallbacks]
    ) -> None:
        super().__init__(context=context)
        if not spec.argv:
            raise ProcessError("Cannot start an empty command")
        self.spec = spec
        self.handle = ProcessHandle(spec, self.actor_ref)
        self._on_lines = callbacks["on_lines"]
        self._on_exit = callbacks.get("on_exit")
        self._on_warning = callbacks.get("on_warning")
        self._on_outbound_line = callbacks.get("on_outbound_line")
        self._on_stderr = callbacks.get("on_stderr")
        self._started = threading.Event()
        self._leases = LeaseStore(spec.lease_dir) if spec.lease_dir else None
        if context is not None:
            context.add_kill_hook(self.handle.kill)

    @classmethod
    def open(
        cls,
        spec: ProcessSpec,
        *,
        context: ChildContext | None = None,
        timeout: float = 30.0,
        **callbacks: Unpack[ProcessCallbacks],
    ) -> ProcessHandle:
        """Start the actor, wait for the child to be running and return its handle
        (thread: caller). Raises the start error (ProcessError) if it failed."""
        own = context or ChildContext(spec.label)
        ref = cls.start(spec, context=own, **callbacks)
        try:
            reason = own.wait_started(timeout)
        except TimeoutError:
            ref.stop(block=False)
            raise ProcessError(f"{spec.label!r} did not start within {timeout:g} s") from None
        if reason is not None:
            raise reason.error or ProcessError(f"{spec.label!r} stopped during start-up")
        actor = ref._actor_weakref()  # the handle is created in __init__, before start
        assert actor is not None
        return actor.handle

    # -- actor thread ------------------------------------------------------------------------

    def on_start(self) -> None:
        spec = self.spec
        env = {**os.environ, **spec.env} if spec.inherit_env else dict(spec.env)
        popen = spawn(
            SpawnRequest(spec.argv, env=env, cwd=spec.cwd, orphan_guard=spec.orphan_guard,
                         report_dir=str(self._leases.directory) if self._leases is not None else None,
                         confinement=spec.confinement)
        )
        handle = self.handle
        handle._popen = popen
        handle.pid = popen.pid
        if self._leases is not None:
            try:
                self._leases.record(popen.pid, spec.argv, spec.owner)
            except OSError:
                log.warning("could not write the lease of %s", spec.label, exc_info=True)
        assert popen.stdin is not None and popen.stdout is not None and popen.stderr is not None
        handle._writer = StdinWriter(
            popen.stdin,
            name=spec.label,
            max_pending_bytes=spec.max_stdin_bytes,
            on_line=self._on_outbound_line,
        )
        splitter = LineSplitter(spec.max_line_bytes, self._overlong)
        self._stdout_thread = threading.Thread(
            target=read_stdout_lines,
            args=(popen.stdout, splitter, self._on_lines, spec.read_chunk_bytes, spec.read_coalesce),
            name=f"stdout-{spec.label}",
            daemon=True,
        )
        self._stderr_thread = threading.Thread(
            target=read_stderr,
            args=(popen.stderr, handle._stderr, self._on_stderr),
            name=f"stderr-{spec.label}",
            daemon=True,
        )
        self._stdout_thread.start()
        self._stderr_thread.start()
        threading.Thread(target=self._watch, name=f"exit-{spec.label}", daemon=True).start()
        if spec.startup_grace > 0:
            info = handle.wait(spec.startup_grace)
            if info is not None:
                raise info.error(f"{spec.label!r} exited during start-up")

    def on_receive(self, message: Any) -> Any:
        if isinstance(message, _ProcessExited):
            info = message.info
            if info.ok:
                self.exit(ExitReason("shutdown" if info.requested else "normal"))
            else:
                self.exit(ExitReason.failed(info.error()))
            return None
        return super().on_receive(message)

    def on_shutdown(self, deadline: float) -> None:
        self.handle.terminate(max(0.0, deadline - time.monotonic()))

    def on_stop(self) -> None:
        self.handle.terminate()

    def on_failure(self, exception_type, exception_value, traceback) -> None:  # type: ignore[no-untyped-def]
        self.handle.terminate(min(self.spec.shutdown_timeout, 1.0))

    def on_terminate(self, reason: ExitReason) -> None:
        # Also reached after a failed on_start, where pykka runs neither on_stop nor on_failure.
        self.handle.terminate(min(self.spec.shutdown_timeout, 1.0))

    # -- other threads -----------------------------------------------------------------------

    def _overlong(self, length: int) -> None:
        warn(
            self._on_warning,
            "line_too_long",
            f"{self.spec.label!r} wrote a {length}-byte line; lines are limited to "
            f"{self.spec.max_line_bytes} bytes, so it was skipped",
            {"bytes": length, "limit": self.spec.max_line_bytes, "command": self.spec.label},
        )

    def _watch(self) -> None:
        handle = self.handle
        popen = handle._popen
        assert popen is not None
        if self._leases is not None:
            # A shim that was itself killed left its adopted processes behind (re-parented
            # away); they may hold stdout open, so they go before the reader is joined. This
            # waits for the shim's exit without reaping it: its zombie keeps its group id ours.
            try:
                self._leases.reap_adopted(popen.pid)
            except OSError:
                log.warning("could not reap what %s adopted", self.spec.label, exc_info=True)
        returncode = popen.wait()
        # Deliver every line already written before reporting the exit; a descendant that
        # still holds the pipe open must not delay the report for long.
        self._stdout_thread.join(2.0)
        self._stderr_thread.join(0.5)
        if self._leases is not None:
            self._leases.release(popen.pid)
        info = ExitInfo(
            argv=self.spec.argv,
            name=self.spec.label,
            pid=popen.pid,
            returncode=returncode,
            signal=-returncode if returncode < 0 else None,
            stderr_tail=handle.stderr_tail(),
            requested=handle._requested,
        )
        handle._exit_info = info
        handle._exited.set()
        if handle._writer is not None:
            handle._writer.abort("the process exited")
        if self._on_exit is not None:
            try:
                self._on_exit(info)
            except Exception:
                log.exception("on_exit callback failed")
        try:
            self.actor_ref.tell(_ProcessExited(info))
        except pykka.ActorDeadError:
            pass
