"""The orphan-guard shim: a tiny program that sits between the host and one agent process.

Run as ``python -I -S _shim.py WATCH_FD HOST_PID PATH LC_CTYPE REPORT_DIR HANG -- ARGV...``; it imports only
the standard library and never the package. It is the direct child the host forks (from its spawner
thread), and:

- becomes a child subreaper (Linux), so every descendant of the agent that loses its parent,
  including ones that called ``setsid``, is re-parented to the shim and stays inside the tree;
- sets its own ``PR_SET_PDEATHSIG`` to SIGUSR1 (Linux) and re-checks its parent afterwards, and
  holds the read end of the host's watchdog pipe (all platforms): either tells it the host died;
- forks the agent with ``PR_SET_PDEATHSIG=SIGKILL`` (the shim is single-threaded, so the signal is
  tied to a thread that lives as long as the shim) and default signal dispositions, then execs it;
- blocks SIGTERM/SIGINT/SIGHUP itself, so a group SIGTERM reaches the agent while the shim keeps
  reaping; when the agent exits it SIGTERMs what is left of the tree, SIGKILLs it after a short
  grace, and exits with the agent's own status (re-raising the agent's fatal signal);
- when the host dies it SIGKILLs the whole tree at once and exits;
- declares a stopped agent hung (HANG seconds, ``-`` for never): an agent that stays stopped
  (state ``T``/``t``: SIGSTOP, SIGTSTP, a tracer) that long answers nothing, so the shim writes
  :data:`HUNG_MARK` and its state on stderr and SIGKILLs it; the host then sees an agent that
  died (its supervisor restarts it and its sessions resume);
- confines the agent (Linux, when the host passes a rules document in ``PADDOCK_CONFINE_RULES``):
  between fork and exec the forked child applies the Landlock ruleset (``_landlock.py``) and
  only then execs, so the agent and all it spawns inherit it; the shim itself stays outside and
  can still signal, reap and kill the tree. A failure to confine exits 126 without exec;
- reports its tree (Linux): with a REPORT_DIR other than ``-`` it keeps
  ``REPORT_DIR/<host pid>-<shim pid>.tree`` listing every descendant it has (``pid starttime``
  per line, starttime being field 22 of ``/proc/<pid>/stat``), rewritten when the tree changes.
  If the shim itself is SIGKILLed its adopted processes are re-parented away from the tree; the
  host's lease code reads this file to find them (``_leases.py``). The tree is walked through
  ``/proc/<pid>/task/<tid>/children`` (cost: the tree's size, not the process table's), checked
  50 ms after a child exits and otherwise at a period that doubles up to 1 s while nothing changes;
- holds the tree to resource limits (Linux, when the host passes ``memory_mb=… cpu_percent=…
  processes=…`` in ``PADDOCK_LIMITS``, popped: the agent never sees it) with the same walk: the
  sum of the tree's resident memory (``/proc/<pid>/statm``) and its number of processes, every
  500 ms, every 50 ms once either is past half its limit; with a process limit the shim also
  reads the host's last assigned pid (``/proc/loadavg``) every 50 ms and walks at once when it
  moved by half the tree's headroom, so a burst of forks is caught within about 50 ms. A tree
  over its memory or process limit is SIGKILLed whole, after :data:`LIMIT_MARK` and the figures
  on stderr (the host then sees an agent that died and restarts it). A CPU limit throttles:
  every 200 ms (up to 1 s while the tree stays under half its share) the tree's CPU time
  (``/proc/<pid>/stat`` utime+stime) is compared with its share, and the processes that ran are
  SIGSTOPped long enough to bring the average down to it (1 s at most), then SIGCONTed (never
  killed). Meanwhile the shim names itself :data:`THROTTLE_NAME`, so neither its hang watch nor
  the host's ``halted`` takes the stop for a halt.
"""

import ctypes
import os
import select
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NAME = 15
THROTTLE_NAME = "paddock-thrott"
"""The shim's own name (``/proc/<pid>/comm``) while its CPU throttle holds processes of the tree
stopped: a stop the host must not take for a halt (``_halted.halted``)."""
LINUX = sys.platform.startswith("linux")
LEFTOVER_GRACE = 1.0
TERMINATING = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
REPORT_MIN = 0.05
REPORT_MAX = 1.0
HUNG_MARK = "paddock: the agent was declared hung:"
"""The start of the stderr line the shim writes before it kills a hung agent."""
CONFINE_VAR = "PADDOCK_CONFINE_RULES"
"""The environment variable that carries the Landlock rules document from the host to the shim
(popped: the agent never sees it)."""
CONFINE_FAILED = "paddock: cannot confine the agent:"
LIMITS_VAR = "PADDOCK_LIMITS"
"""The environment variable that carries the resource limits document (``memory_mb=256
processes=50``) from the host to the shim (popped: the agent never sees it)."""
LIMIT_MARK = "paddock: the agent exceeded its limit:"
"""The start of the stderr line the shim writes before it kills a tree over a limit."""
LIMIT_FAST = 0.05
LIMIT_SLOW = 0.5
FORK_PEEK = 0.05
THROTTLE_WINDOW = 0.2
THROTTLE_IDLE = 1.0
THROTTLE_MAX_STOP = 1.0
STOPPED = {b"T": "stopped (SIGSTOP or SIGTSTP)", b"t": "stopped by a tracer"}


class _HangWatch:
    """Declares the agent hung once it has been stopped for ``limit`` seconds (None: never)."""

    def __init__(self, agent: int, limit: float | None) -> None:
        self.agent = agent
        self.limit = limit
        self.since: float | None = None
        self.period = None if limit is None else max(0.05, min(1.0, limit / 4))
        self.next = 0.0

    def timeout(self, now: float) -> float | None:
        return None if self.period is None else max(0.0, self.next - now)

    def check(self, now: float, throttled: bool = False) -> None:
        if self.limit is None or self.period is None or now < self.next:
            return
        self.next = now + self.period
        stat = read_stat(self.agent)
        state = STOPPED.get(stat[0]) if stat is not None and not throttled else None
        if state is None:
            self.since = None
            return
        if self.since is None:
            self.since = now
        elif now - self.since >= self.limit:
            message = f"{HUNG_MARK} it was {state} for {self.limit:g} s and answered nothing; killed\n"
            try:
                os.write(2, message.encode())
            except OSError:
                pass
            try:
                os.kill(self.agent, signal.SIGKILL)
            except OSError:
                pass
            self.since = None


def read_stat(pid: int) -> tuple[bytes, int, bytes] | None:
    """(state, ppid, starttime) from ``/proc/<pid>/stat``, or None if the pid does not exist.
    The host's teardown (``_teardown.py``) uses it too."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()
    return fields[0], int(fields[1]), fields[19]


def _starttime(pid: int) -> bytes | None:
    stat = read_stat(pid)
    return None if stat is None or stat[0] in (b"Z", b"X") else stat[2]


def tree_of(root: int) -> list[tuple[int, bytes]]:
    """Every live descendant of ``root`` with its starttime, through the children files (Linux;
    empty elsewhere). The host's last-resort kill (``_leases.py``) uses it too."""
    return [(pid, start) for pid, start, _ in walk(root)]


def walk(root: int) -> list[tuple[int, bytes, int]]:
    """Every live descendant of ``root`` as ``(pid, starttime, parent pid)``."""
    found: list[tuple[int, bytes, int]] = []
    todo = [root]
    seen = {root}
    while todo:
        pid = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                    kids = f.read().split()
            except OSError:
                continue
            for kid in map(int, kids):
                if kid in seen:
                    continue
                seen.add(kid)
                start = _starttime(kid)
                if start is not None:
                    found.append((kid, start, pid))
                    todo.append(kid)
    return found


class _Reporter:
    """Keeps the tree file of this shim current (Linux only; a no-op without a directory)."""

    def __init__(self, directory: str, host: int) -> None:
        self.path = None if directory == "-" or not LINUX else os.path.join(directory, f"{host}-{os.getpid()}.tree")
        self.last: list[tuple[int, bytes]] = []
        self.period = REPORT_MIN
        self.next = 0.0

    def timeout(self, now: float) -> float | None:
        return None if self.path is None else max(0.0, self.next - now)

    def due(self, now: float, soon: bool) -> bool:
        return self.path is not None and (soon or now >= self.next)

    def update(self, soon: bool, walked: list[tuple[int, bytes, int]]) -> None:
        if self.path is None:
            return
        tree = sorted((pid, start) for pid, start, _ in walked)
        if tree != self.last:
            self.last = tree
            self.period = REPORT_MIN
            tmp = self.path + ".tmp"
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                try:
                    os.write(fd, b"".join(b"%d %s\n" % (pid, start) for pid, start in tree))
                finally:
                    os.close(fd)
                os.replace(tmp, self.path)
            except OSError:
                pass  # the host's teardown still snapshots the tree; only a crash needs the file
        elif soon:
            self.period = REPORT_MIN
        else:
            self.period = min(self.period * 2, REPORT_MAX)
        self.next = time.monotonic() + self.period


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
MIB = 1024 * 1024


def parse_limits(text: str | None) -> dict[str, int]:
    """``memory_mb=256 processes=50`` -> ``{"memory_mb": 256, "processes": 50}``; unknown names and
    values that are not positive integers are dropped (the host checked them already)."""
    found: dict[str, int] = {}
    for part in (text or "").split():
        name, _, value = part.partition("=")
        if name in ("memory_mb", "cpu_percent", "processes") and value.isdigit() and int(value) > 0:
            found[name] = int(value)
    return found


def comm_of(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", "rb") as f:
            return f.read().strip().decode(errors="replace")
    except OSError:
        return "?"


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


_loadavg = -1


def _last_pid() -> int:
    """The host's last assigned pid, from ``/proc/loadavg`` kept open (a ``pread``: no open and
    close per peek); 0 when unreadable."""
    global _loadavg
    try:
        if _loadavg < 0:
            _loadavg = os.open("/proc/loadavg", os.O_RDONLY | os.O_CLOEXEC)
        return int(os.pread(_loadavg, 128, 0).split()[4])
    except (OSError, IndexError, ValueError):
        return 0


def _cpu_ticks(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return 0
    fields = stat[stat.rfind(b")") + 2 :].split()
    return int(fields[11]) + int(fields[12])


class _Limits:
    """Holds the tree to its memory and process limits (kill) and its CPU share (throttle).
    Linux only; a no-op without limits. Called from the shim's loop with the tree it walked."""

    def __init__(self, limits: dict[str, int], libc: ctypes.CDLL | None) -> None:
        self.libc = libc
        self.memory = limits["memory_mb"] * MIB if "memory_mb" in limits and LINUX else None
        self.processes = limits.get("processes") if LINUX else None
        self.share = limits["cpu_percent"] / 100 if "cpu_percent" in limits and LINUX else None
        self.first_rss: dict[int, int] = {}
        self.ticks: dict[int, int] = {}
        self.window = time.monotonic()
        self.step = THROTTLE_WINDOW
        self.stopped: list[int] = []
        self.resume_at = 0.0
        self.next = 0.0
        self.count = 0
        self.last_pid = _last_pid() if self.processes is not None else 0
        self.active = self.memory is not None or self.processes is not None or self.share is not None
        self.name = comm_of(os.getpid()).encode() if self.share is not None else b""

    def timeout(self, now: float) -> float | None:
        if not self.active:
            return None
        wait = max(0.0, (self.resume_at if self.stopped else self.next) - now)
        return min(wait, FORK_PEEK) if self.processes is not None else wait

    def due(self, now: float) -> bool:
        """Whether to walk the tree now: its period is up, the throttle's stop is over, or (with a
        process limit) the host's last assigned pid (``/proc/loadavg``, one small read) moved by
        half the tree's headroom since the last walk: forks are not missed between slow walks."""
        if not self.active:
            return False
        if now >= (self.resume_at if self.stopped else self.next):
            return True
        if self.processes is None:
            return False
        last = _last_pid()
        moved = last - self.last_pid
        return last > 0 and (moved < 0 or moved * 2 >= self.processes - self.count)  # < 0: pids wrapped

    def check(self, tree: list[tuple[int, bytes, int]]) -> str | None:
        """The line to write before killing the tree when it is over a limit, else ``None``
        (and the CPU throttle takes its step)."""
        near = False
        self.count = len(tree)
        self.last_pid = _last_pid() if self.processes is not None else 0
        if self.processes is not None:
            if len(tree) > self.processes:
                parents: dict[int, int] = {}
                for _, _, parent in tree:
                    parents[parent] = parents.get(parent, 0) + 1
                top = max(parents, key=parents.__getitem__)
                return (f"{LIMIT_MARK} processes = {self.processes}: its tree had {len(tree)} processes; "
                        f"grew most: pid {top} ({comm_of(top)}) with {parents[top]} children; killed\n")
            near = len(tree) * 2 > self.processes
        if self.memory is not None:
            sizes = {pid: _rss(pid) for pid, _, _ in tree}
            total = sum(sizes.values())
            first = self.first_rss
            for pid in [p for p in first if p not in sizes]:
                del first[pid]
            for pid, size in sizes.items():
                first.setdefault(pid, size)
            if total > self.memory and sizes:
                top = max(sizes, key=lambda p: (sizes[p] - first[p], sizes[p]))
                return (f"{LIMIT_MARK} memory_mb = {self.memory // MIB}: its tree used {total / MIB:.0f} MB; "
                        f"grew most: pid {top} ({comm_of(top)}) +{(sizes[top] - first[top]) / MIB:.0f} MB "
                        f"to {sizes[top] / MIB:.0f} MB; killed\n")
            near = near or total * 2 > self.memory
        watched = self.memory is not None or self.processes is not None
        period = LIMIT_FAST if near else LIMIT_SLOW if watched else THROTTLE_IDLE
        if self.share is not None:
            self._throttle(tree)
            period = min(period, self.step)
        self.next = time.monotonic() + period
        return None

    def _throttle(self, tree: list[tuple[int, bytes, int]]) -> None:
        now = time.monotonic()
        if self.stopped:
            if now < self.resume_at:
                return
            self.resume()
        if now - self.window < self.step:
            return
        ran: list[int] = []
        used = 0
        ticks: dict[int, int] = {}
        for pid, _, _ in tree:
            t = ticks[pid] = _cpu_ticks(pid)
            delta = t - self.ticks.get(pid, 0)
            if delta > 0:
                used += delta
                ran.append(pid)
        self.ticks = ticks
        assert self.share is not None
        allowed = self.share * (now - self.window)
        over = used / _TICK - allowed
        self.window = now
        # a tree well under its share is sampled less often (up to 1 s), a busy one every 200 ms
        self.step = min(THROTTLE_IDLE, self.step * 2) if used / _TICK * 2 < allowed else THROTTLE_WINDOW
        if over <= 0 or not ran:
            return
        self._rename(THROTTLE_NAME.encode())  # before the stop: the host must never see it unnamed
        for pid in ran:
            try:
                os.kill(pid, signal.SIGSTOP)
            except OSError:
                pass
        self.stopped = ran
        self.resume_at = now + min(THROTTLE_MAX_STOP, over / self.share)

    def resume(self) -> None:
        """SIGCONT what the throttle stopped (also before the tree is ended)."""
        for pid in self.stopped:
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        if self.stopped:
            self._rename(self.name)
        self.stopped = []
        self.window = time.monotonic()

    def _rename(self, name: bytes) -> None:
        if self.libc is not None:
            self.libc.prctl(PR_SET_NAME, ctypes.c_char_p(name[:15]), 0, 0, 0)


def children_table(*, zombies: bool) -> dict[int, list[int]]:
    """Parent pid -> the pids of its children, from a full ``/proc`` scan (zombies only with
    ``zombies``). Linux only. The host's teardown (``_teardown.py``) uses it too."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split(None, 2)
        if not zombies and fields[0] == b"Z":
            continue
        children.setdefault(int(fields[1]), []).append(int(name))
    return children


def _descendants(root: int) -> list[int]:
    """Every live descendant of ``root``. Walks the children files (cost: the tree's size):
    a full ``/proc`` scan, repeated every few ms by hundreds of shims closing at once, starves
    the machine (200 instances closing took 27 s for a 10 s deadline)."""
    if not LINUX:
        return []
    if _HAS_CHILDREN_FILES:
        return [pid for pid, _ in tree_of(root)]
    children = children_table(zombies=False)
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


_HAS_CHILDREN_FILES = LINUX and os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")


def _reap(agent: int, status: list[int]) -> bool:
    """Reap every exited child; return True when no child is left."""
    while True:
        try:
            pid, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid == 0:
            return False
        if pid == agent:
            status.append(st)


def _kill_tree(agent: int, status: list[int], deadline: float) -> None:
    if not LINUX:
        # No process table walk here: take down the process group, the shim included.
        os.killpg(0, signal.SIGKILL)
    me = os.getpid()
    while time.monotonic() < deadline:
        pids = _descendants(me)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if _reap(agent, status) and not pids:
            return
        time.sleep(0.005)


def _terminate_leftovers(agent: int, status: list[int]) -> None:
    me = os.getpid()
    pids = _descendants(me)
    if not pids:
        _reap(agent, status)
        return
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    grace_end = time.monotonic() + LEFTOVER_GRACE
    while time.monotonic() < grace_end:
        _reap(agent, status)
        if not _descendants(me):
            return
        time.sleep(0.01)
    _kill_tree(agent, status, time.monotonic() + 2.0)


def _exit_like(st: int) -> None:
    if os.WIFSIGNALED(st):
        sig = os.WTERMSIG(st)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # their disposition cannot be set (EINVAL)
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(st))


def _confine(rules: str) -> None:
    """Apply the Landlock rules document to this (forked agent) process with ``_landlock.py``,
    imported from this folder (``-I`` keeps it off ``sys.path``; an import, unlike a compile,
    uses the cached bytecode). Any failure leaves without executing the agent (exit 126): an
    agent the host asked to confine never runs unconfined."""
    try:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import _landlock

        _landlock.apply(_landlock.parse(rules))
    except Exception as exc:
        os.write(2, f"{CONFINE_FAILED} {exc}\n".encode())
        os._exit(126)


def main() -> None:
    watch_fd = int(sys.argv[1])
    host = int(sys.argv[2])
    path = sys.argv[3]
    env = dict(os.environ)
    # Python's C-locale coercion (PEP 538) may have changed LC_CTYPE in our environment; the
    # host passes the value the agent must get ("-" for none, else "=value").
    if sys.argv[4] == "-":
        env.pop("LC_CTYPE", None)
    else:
        env["LC_CTYPE"] = sys.argv[4][1:]
    rules = env.pop(CONFINE_VAR, None)
    libc = ctypes.CDLL(None, use_errno=True) if LINUX else None
    limits = _Limits(parse_limits(env.pop(LIMITS_VAR, None)), libc)
    reporter = _Reporter(sys.argv[5], host)
    hang = None if sys.argv[6] == "-" else float(sys.argv[6])
    argv = sys.argv[8:]
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGUSR1, lambda *_: None)
    # Blocked, not ignored: the agent inherits the mask and unblocks right before exec, so a
    # group SIGTERM that lands between fork and exec is delivered instead of lost. A SIGTERM the
    # shim got before forking stays pending here and is forwarded below.
    signal.pthread_sigmask(signal.SIG_BLOCK, TERMINATING)
    if libc is not None:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGUSR1, 0, 0, 0)
    if os.getppid() != host:
        os._exit(137)
    shim = os.getpid()
    agent = os.fork()
    if agent == 0:
        try:
            signal.set_wakeup_fd(-1)
            for sig in (signal.SIGCHLD, signal.SIGUSR1, *TERMINATING):
                signal.signal(sig, signal.SIG_DFL)
            for fd in (watch_fd, wake_r, wake_w):
                os.close(fd)
            if libc is not None:
                libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != shim:
                os._exit(137)
            if rules is not None:
                _confine(rules)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, TERMINATING)
            os.execve(path, argv, env)
        except OSError as exc:
            os.write(2, f"paddock: cannot execute {argv[0]!r}: {exc.strerror}\n".encode())
        finally:
            os._exit(127)
    for sig in signal.sigpending() & TERMINATING:
        os.kill(agent, sig)
    # The shim must not hold the agent's stdin/stdout open: the host waits for EOF on stdout.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    status: list[int] = []
    hung = _HangWatch(agent, hang)
    while True:
        now = time.monotonic()
        periods = [t for t in (reporter.timeout(now), hung.timeout(now), limits.timeout(now)) if t is not None]
        try:
            ready, _, _ = select.select([watch_fd, wake_r], [], [], min(periods) if periods else None)
        except InterruptedError:
            ready = []
        now = time.monotonic()
        over = None
        if limits.due(now) or reporter.due(now, bool(ready)):
            tree = walk(shim)
            reporter.update(bool(ready), tree)
            over = limits.check(tree) if limits.active else None
        if over is not None:
            try:
                os.write(2, over.encode())
            except OSError:
                pass
            _kill_tree(agent, status, time.monotonic() + 5.0)
        hung.check(now, throttled=agent in limits.stopped)
        if wake_r in ready:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
        host_dead = os.getppid() != host
        if watch_fd in ready:
            try:
                host_dead = host_dead or not os.read(watch_fd, 512)
            except OSError:
                host_dead = True
        if host_dead:
            limits.resume()
            _kill_tree(agent, status, time.monotonic() + 5.0)
            os._exit(137)
        _reap(agent, status)
        if status:
            limits.resume()
            _terminate_leftovers(agent, status)
            _exit_like(status[0])


if __name__ == "__main__":
    main()
