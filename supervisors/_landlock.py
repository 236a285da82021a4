"""Landlock through ``ctypes``: standard library only, so the orphan-guard shim (``_shim.py``,
run as ``python -I -S``) can load it by path and apply it to the agent between fork and exec.

Kernel facts (Documentation/userspace-api/landlock.rst, include/uapi/linux/landlock.h):

- the three syscalls have the same number on every architecture that uses the generic table
  (x86_64, arm64, riscv64): ``landlock_create_ruleset`` 444, ``landlock_add_rule`` 445,
  ``landlock_restrict_self`` 446;
- ``landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`` returns the ABI version
  (1 on Linux 5.13 ...; 7 on 6.15+), or fails (ENOSYS, EOPNOTSUPP when disabled at boot);
- ``struct landlock_ruleset_attr { u64 handled_access_fs; u64 handled_access_net; u64 scoped; }``
  grew by ABI: ``handled_access_net`` came with ABI 4, ``scoped`` with ABI 6; an access bit the
  ABI does not know makes the call fail (EINVAL), so each one is dropped below that ABI;
- ``struct landlock_path_beneath_attr { u64 allowed_access; s32 parent_fd; } __packed`` (12
  bytes); a rule on a file (not a directory) may only hold the file rights;
- ``struct landlock_net_port_attr { u64 allowed_access; u64 port; }``;
- ``landlock_restrict_self`` needs ``PR_SET_NO_NEW_PRIVS`` (or CAP_SYS_ADMIN); the domain is
  inherited by every descendant and can never be lifted, only narrowed.

The rules document (built by :class:`paddock.supervisors.Confinement`) is text, one rule a
line (no JSON: importing ``json`` costs the shim ~9 ms of ``re``)::

    r PATH    read and execute beneath PATH
    w PATH    every file right beneath PATH
    h PATH    hidden: unreachable even beneath a granted PATH (see :func:`hide`)
    n         TCP is restricted (ABI 4+): connect only to the ``c`` ports, bind only to the ``b`` ports
    c PORT
    b PORT
 Signals and abstract unix sockets are always scoped to the agent's own
domain (ABI 6+). A path that does not exist is skipped.
"""

import ctypes
import os

SYS_CREATE_RULESET = 444
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
RULE_NET_PORT = 2
PR_SET_NO_NEW_PRIVS = 38

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

FS_ABI1 = (1 << 13) - 1
FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
READ_RIGHTS = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


_libc = None


def _syscall():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    return _libc


def abi() -> int:
    """The kernel's Landlock ABI version, 0 when it has none (or it is disabled)."""
    try:
        libc = _syscall()
    except OSError:
        return 0
    version = libc.syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    return max(0, int(version))


def handled_fs(version: int) -> int:
    """The filesystem rights an ABI knows (every one of them is handled: denied unless a rule
    allows it)."""
    rights = FS_ABI1
    if version >= 2:
        rights |= FS_REFER
    if version >= 3:
        rights |= FS_TRUNCATE
    if version >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def _fail(what: str) -> OSError:
    err = ctypes.get_errno()
    return OSError(err, f"{what}: {os.strerror(err)}")


def parse(document: str) -> dict:
    """The rules of a document (see the module's docstring)."""
    rules: dict = {"read": [], "write": [], "connect": None, "bind": []}
    for line in document.split("\n"):
        kind, _, value = line.partition(" ")
        if kind == "r":
            rules["read"].append(value)
        elif kind == "w":
            rules["write"].append(value)
        elif kind == "h":
            rules.setdefault("hide", []).append(value)
        elif kind == "n":
            rules["connect"] = rules["connect"] or []
        elif kind == "c":
            rules["connect"] = (rules["connect"] or []) + [int(value)]
        elif kind == "b":
            rules["bind"].append(int(value))
        elif kind:
            raise ValueError(f"unknown rule {kind!r}")
    return rules


def apply(rules: dict) -> int:
    """Restrict this process (and all it will spawn) to ``rules``; returns the ABI applied.
    Raises OSError when the kernel has no Landlock or refuses a step: the caller must then not
    exec the agent."""
    version = abi()
    if version < 1:
        raise OSError(95, "the kernel offers no Landlock")
    libc = _syscall()
    hide(rules)
    fs = handled_fs(version)
    attr = _RulesetAttr(handled_access_fs=fs)
    connect = rules.get("connect")
    if version >= 4 and connect is not None:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
    if version >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
    size = 8 if version < 4 else 16 if version < 6 else 24  # the struct as that ABI knows it
    ruleset = libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise _fail("landlock_create_ruleset")
    try:
        for paths, rights in ((rules.get("read", ()), READ_RIGHTS), (rules.get("write", ()), fs)):
            for path in paths:
                _add_path(libc, ruleset, path, rights & fs)
        if attr.handled_access_net:
            ports = [(p, NET_CONNECT_TCP) for p in connect or ()] + [(p, NET_BIND_TCP) for p in rules.get("bind", ())]
            for port, right in ports:
                net = _NetPortAttr(allowed_access=right, port=int(port))
                if libc.syscall(SYS_ADD_RULE, ruleset, RULE_NET_PORT, ctypes.byref(net), ctypes.c_uint32(0)) < 0:
                    raise _fail(f"landlock_add_rule (port {port})")
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise _fail("prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.syscall(SYS_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) < 0:
            raise _fail("landlock_restrict_self")
    finally:
        os.close(ruleset)
    return version


def _add_path(libc, ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        beneath = _PathBeneathAttr(allowed_access=rights, parent_fd=fd)
        if libc.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(beneath), 0) < 0:
            # EINVAL: not a directory, so only the file rights apply (no fstat for the common case)
            if ctypes.get_errno() != 22 or rights & ~FILE_RIGHTS == 0:
                raise _fail(f"landlock_add_rule ({path})")
            beneath.allowed_access = rights & FILE_RIGHTS
            if libc.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(beneath), 0) < 0:
                raise _fail(f"landlock_add_rule ({path})")
    finally:
        os.close(fd)


# Hidden paths beneath granted ones ----------------------------------------------------------------
#
# Landlock only adds rights: a folder granted to the agent grants everything beneath it. A hidden
# path beneath a granted one (the state dir ./.paddock inside the project root) is therefore
# covered, first choice, in a private mount namespace: an empty read-only tmpfs (a directory) or
# /dev/null (a file) is mounted over it, the granted paths that lie inside it (the instance's own
# home) are bound back, and Landlock then forbids the agent any mount change. Where the kernel
# refuses an unprivileged user namespace, the grants are carved instead: a granted folder holding
# a hidden path is granted entry by entry down to it (new entries at those levels stay denied).

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18


def _beneath(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def hide(rules: dict) -> None:
    """Make ``rules["hide"]`` unreachable beneath the granted paths (in place: on carving, the
    grants change)."""
    grants = [*rules["read"], *rules["write"]]
    covered = [h for h in rules.get("hide", ()) if any(_beneath(h, g) for g in grants) and os.path.lexists(h)]
    covered = [h for h in covered if not any(_beneath(h, o) and h != o for o in covered)]  # the outermost
    if not covered:
        return
    keep = [g for g in grants if any(_beneath(g, h) and g != h for h in covered)]
    if _libc_unshare() != 0:  # no user namespace for us: carve (a later failure is fatal)
        rules["read"] = _carve(rules["read"], covered)
        rules["write"] = _carve(rules["write"], covered)
        return
    _overmount(covered, keep)


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _mount(libc, source, target: str, fstype, flags: int, data) -> None:
    enc = (lambda v: v.encode() if isinstance(v, str) else v)
    if libc.mount(enc(source), target.encode(), enc(fstype), ctypes.c_ulong(flags), enc(data)) != 0:
        raise _fail(f"mount over {target}")


_ids: tuple = ()


def _libc_unshare() -> int:
    """Enter a new user and mount namespace (0: done)."""
    global _ids
    _ids = (os.getuid(), os.getgid())
    return _syscall().unshare(CLONE_NEWUSER | CLONE_NEWNS)


def _overmount(covered: list, keep: list) -> None:
    libc = _syscall()
    uid, gid = _ids
    held = {}
    for path in keep:
        try:
            held[path] = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except FileNotFoundError:
            pass
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE, None)
    tmpfs = []
    for path in sorted(covered, key=len):
        if os.path.isdir(path) and not os.path.islink(path):
            _mount(libc, "paddock-hidden", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64k,mode=0700")
            tmpfs.append(path)
        else:
            _mount(libc, "/dev/null", path, None, MS_BIND, None)
    for path, fd in held.items():
        source = f"/proc/self/fd/{fd}"
        if os.path.isdir(source):
            os.makedirs(path, exist_ok=True)
        elif not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        _mount(libc, source, path, None, MS_BIND | MS_REC, None)
        os.close(fd)
    for path in tmpfs:
        _mount(libc, None, path, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, None)


def _carve(paths: list, hidden: list) -> list:
    out = []
    for path in paths:
        inside = [h for h in hidden if _beneath(h, path)]
        if not inside:
            out.append(path)
        elif path not in inside:
            prefix = path.rstrip("/") + "/"
            leading = {h[len(prefix):].split("/", 1)[0] for h in inside}
            try:
                names = [e.name for e in os.scandir(path) if not e.is_symlink()]
            except OSError:
                continue
            out += _carve([prefix + n for n in names if n in leading], inside)
            out += [prefix + n for n in names if n not in leading]
    return out
