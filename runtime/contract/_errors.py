"""The one error family.

Every error carries the driver, instance and thread it concerns where they are known, and its
``str()`` is a sentence a user can act on. Errors are raised at the boundary that detected them;
native protocol errors are mapped into this family at the adapter boundary.
"""

from __future__ import annotations

__all__ = [
    "BudgetExceededError",
    "CapacityError",
    "CapabilityUnsupportedError",
    "ConfigError",
    "DriverError",
    "InstanceNotFoundError",
    "OperationTimeout",
    "PaddockError",
    "PersistenceError",
    "ProcessError",
    "RequestError",
    "SessionClosedError",
    "SessionNotFoundError",
    "StateDirLockedError",
    "ValidationError",
]


class PaddockError(Exception):
    """Base of every error Paddock raises on purpose.

    ``driver``, ``instance_id`` and ``thread_id`` name what the error concerns, or are ``None``.
    """

    def __init__(
        self,
        message: str,
        *,
        driver: str | None = None,
        instance_id: str | None = None,
        thread_id: str | None = None,
    ) -> None:
        self.driver = driver
        self.instance_id = instance_id
        self.thread_id = thread_id
        self.message = message[:1].upper() + message[1:]
        super().__init__(self.message)

    def __str__(self) -> str:
        where = [
            f"{label} {value!r}"
            for label, value in (
                ("thread", self.thread_id),
                ("instance", self.instance_id),
                ("driver", self.driver),
            )
            if value
        ]
        return f"{self.message} ({', '.join(where)})" if where else self.message

    def __reduce__(self):  # keep errors picklable across process boundaries
        return (_rebuild, (type(self), self.__dict__.copy()))


def _rebuild(cls: type[PaddockError], state: dict) -> PaddockError:
    err = cls.__new__(cls)
    Exception.__init__(err, state.get("message", ""))
    err.__dict__.update(state)
    return err


class ValidationError(PaddockError):
    """Raised when input to ``operation`` is malformed: bad JSON, an unknown event type, a field of
    the wrong type, an empty or oversized prompt, an invalid mode."""

    def __init__(self, operation: str, issue: str, **where: str | None) -> None:
        self.operation = operation
        self.issue = issue
        super().__init__(f"Invalid input to {operation}: {issue}", **where)


class InstanceNotFoundError(PaddockError):
    """Raised when no configured instance has the given id, or the instance is unavailable."""

    def __init__(self, instance_id: str, reason: str | None = None, **where: str | None) -> None:
        self.reason = reason
        where.setdefault("instance_id", instance_id)
        text = f"No usable instance {instance_id!r}"
        text += f": {reason}" if reason else "; check the ids listed by `paddock doctor`"
        super().__init__(text, **where)


class SessionNotFoundError(PaddockError):
    """Raised when a thread has no session; start one with ``start_session`` first."""

    def __init__(self, thread_id: str, **where: str | None) -> None:
        where.setdefault("thread_id", thread_id)
        super().__init__(
            f"Thread {thread_id!r} has no session; call start_session() first", **where
        )


class SessionClosedError(PaddockError):
    """Raised when an operation targets a session that has stopped or exited, or a runtime that
    was closed (``thread_id`` ``None``)."""

    def __init__(self, thread_id: str | None, detail: str | None = None, **where: str | None) -> None:
        where.setdefault("thread_id", thread_id)
        self.detail = detail
        if thread_id is None:
            super().__init__(f"{detail or 'closed'}; open a new runtime to continue", **where)
            return
        text = f"The session of thread {thread_id!r} is closed"
        text += f" ({detail})" if detail else ""
        super().__init__(text + "; start it again to continue", **where)


class RequestError(PaddockError):
    """Raised when a protocol request fails: the agent answered ``method`` with error ``code``, or
    the host answered an unknown or already resolved request. ``data`` is the JSON-RPC error's
    ``data`` member, decoded (agents put the real reason there: Gemini CLI's ``data.details``),
    or ``None``."""

    def __init__(
        self, method: str, code: int | None, detail: str, *, data: object = None, **where: str | None
    ) -> None:
        self.method = method
        self.code = code
        self.detail = detail
        self.data = data
        code_text = f" with code {code}" if code is not None else ""
        super().__init__(f"Request {method!r} failed{code_text}: {detail}", **where)


class ProcessError(PaddockError):
    """Raised when a child process fails to start or exits while work depends on it.

    ``exit_code`` is the exit status (negative: killed by that signal) or ``None`` when the process
    never started; ``stderr_tail`` holds the last bytes it wrote to stderr.
    """

    def __init__(
        self,
        detail: str,
        exit_code: int | None = None,
        *,
        stderr_tail: str = "",
        **where: str | None,
    ) -> None:
        self.detail = detail
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail
        text = detail
        if exit_code is not None:
            text += (
                f" (killed by signal {-exit_code})" if exit_code < 0 else f" (exit code {exit_code})"
            )
        if stderr_tail:
            text += f"; its stderr ends with:\n{stderr_tail.rstrip()}"
        super().__init__(text, **where)


class CapabilityUnsupportedError(PaddockError):
    """Raised before touching a process when the instance's capabilities deny an operation."""

    def __init__(self, capability: str, detail: str, **where: str | None) -> None:
        self.capability = capability
        self.detail = detail
        super().__init__(f"Not supported: {detail} (capability {capability!r} is off)", **where)


class DriverError(PaddockError):
    """Raised when a driver cannot do what was asked: unavailable binary, failed handshake,
    a native error that maps to nothing more specific."""

    def __init__(
        self, driver: str, instance_id: str | None, detail: str, **where: str | None
    ) -> None:
        self.detail = detail
        super().__init__(detail, driver=driver, instance_id=instance_id, **where)


class ConfigError(PaddockError):
    """Raised when configuration at ``path`` is malformed; ``issue`` names the table and key."""

    def __init__(self, path: str | None, issue: str, **where: str | None) -> None:
        self.path = path
        self.issue = issue
        prefix = f"Invalid config {path}" if path else "Invalid config"
        super().__init__(f"{prefix}: {issue}", **where)


class PersistenceError(PaddockError):
    """Raised when the state directory cannot be read or written during ``operation``."""

    def __init__(self, operation: str, detail: str, **where: str | None) -> None:
        self.operation = operation
        self.detail = detail
        super().__init__(f"Could not {operation}: {detail}", **where)


class StateDirLockedError(PersistenceError):
    """Raised by ``Runtime.open`` when another live runtime owns ``state_dir`` (one owner per state
    directory: the log's sequence and the bindings would diverge). ``owner_pid`` is the owning
    process id, when it could be read. Readers of the log need no ownership."""

    def __init__(self, state_dir: str, owner_pid: int | None, **where: str | None) -> None:
        self.state_dir = state_dir
        self.owner_pid = owner_pid
        owner = f"process {owner_pid}" if owner_pid is not None else "another process"
        super().__init__(
            "open the state directory",
            f"{state_dir} is owned by {owner} (a runtime is open there); close it or use another state_dir",
            **where,
        )


class OperationTimeout(PaddockError):
    """Raised when ``operation`` did not finish within ``seconds``. The operation may still finish
    later; retry or raise the timeout."""

    def __init__(self, operation: str, seconds: float, **where: str | None) -> None:
        self.operation = operation
        self.seconds = seconds
        super().__init__(f"{operation} did not finish within {seconds:g} s", **where)


class BudgetExceededError(PaddockError):
    """Raised by ``send_turn`` while a budget over the thread is spent: ``budget`` names which
    (``tokens``, ``cost``, ``turns`` or ``turn_seconds``), ``scope`` whose (``thread``,
    ``instance`` or ``runtime``), ``figure`` what was spent and ``limit`` the bound. It holds
    until the host raises the budget (``set_budget``) or its period rolls over. HTTP 429, code
    ``budget_exceeded``."""

    def __init__(self, budget: str, scope: str, figure: float, limit: float, **where: str | None) -> None:
        self.budget = budget
        self.scope = scope
        self.figure = figure
        self.limit = limit
        super().__init__(
            f"The {scope}'s {budget} budget is spent ({figure:g} of {limit:g}); raise it with set_budget() "
            "or wait for its period to roll over", **where)


class CapacityError(PaddockError):
    """Raised when the host's admission limits leave no room: ``limit`` names which
    (``max_running_turns`` with ``queue = false``, ``max_live_sessions`` once its wait timed out,
    or ``memory_mb``), ``scope`` whose (``instance`` or ``runtime``), ``figure`` what is in use
    and ``bound`` the limit. Nothing was started; try again once a turn or session ends (or
    the agents' memory falls). HTTP 429, code ``capacity``."""

    def __init__(self, limit: str, scope: str, figure: float, bound: float, **where: str | None) -> None:
        self.limit = limit
        self.scope = scope
        self.figure = figure
        self.bound = bound
        super().__init__(
            f"The {scope}'s {limit} is reached ({figure:g} of {bound:g}); try again once a turn or session "
            "ends", **where)
