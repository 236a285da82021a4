"""Worktrees and checkpoints of threads, with the real ``git`` command.

Layout under ``<state dir>/workspaces`` (0700):

- ``records/<key>.json``: one :class:`Workspace` per thread (0600). It is written *before* the
  worktree, branch or any ref exists and removed last, so it is the journal :meth:`Worktrees.sweep`
  finishes an interrupted create or delete from;
- ``trees/<key>``: the thread's worktree, on the branch ``paddock/<key>``;
- ``index/<key>``: the thread's private index file. Checkpoints are written through it
  (``GIT_INDEX_FILE``), never through the worktree's own index, so the branch, the index and the
  user's stash are never touched; it keeps the stat data of the last checkpoint, so the next one
  hashes only what changed.

A checkpoint is a commit of the worktree's whole state (untracked files included, ignored files
excluded: ``git add -A`` into the private index, ``write-tree``, ``commit-tree`` on the previous
checkpoint) on the hidden ref ``refs/paddock/<key>/<seq>``; its subject is ``turn <turn id>``
(``base`` for seq 0, the state the worktree started from). ``<key>`` is the thread id made safe
for a ref and a file name, with a hash of the id (two ids never share a key).

Thread-safe: operations on one thread's worktree are serialised by its lock; they run in the
caller's thread (the directory's callers, or the checkpoint worker).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import threading
from pathlib import Path

import msgspec

from paddock._workspaces._git import GitError, git, text
from paddock.contract import PaddockError, ValidationError

__all__ = ["Checkpoint", "Workspace", "Worktrees", "thread_key"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_REF = "refs/paddock"
_RACY_S = 1.1  # git's index keeps whole seconds: a second later no file is racily clean


class Workspace(msgspec.Struct, frozen=True, kw_only=True):
    """A thread's worktree, as persisted (``records/<key>.json``)."""

    thread_id: str
    key: str
    repo: str
    """The top of the worktree the thread was started from (the user's)."""
    path: str
    """The thread's worktree."""
    subdir: str = ""
    """Where in the repository the session was started (``cwd`` relative to ``repo``)."""
    branch: str
    base: str = ""
    """The commit the worktree started from (also ``refs/paddock/<key>/000000``)."""
    deleting: bool = False
    """``delete_thread`` began: the sweep finishes it."""
    keep_branch: bool = False

    @property
    def cwd(self) -> str:
        """Where the thread's session runs: the worktree, at the same place the host gave."""
        return os.path.join(self.path, self.subdir) if self.subdir else self.path


class Checkpoint(msgspec.Struct, frozen=True, kw_only=True):
    """One checkpoint of a thread: ``turn_id`` ``None`` for the base."""

    seq: int
    commit: str
    turn_id: str | None = None


def thread_key(thread_id: str) -> str:
    """The thread id as a ref component and file name: its safe characters (at most 48) and 10
    hex digits of its hash."""
    safe = _UNSAFE.sub("-", thread_id).strip("-")[:48] or "thread"
    return f"{safe}-{hashlib.sha256(thread_id.encode('utf-8', 'surrogatepass')).hexdigest()[:10]}"


class Worktrees:
    """The worktrees of one state dir (module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        for sub in ("", "records", "trees", "index"):
            (root / sub).mkdir(mode=0o700, parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._records: dict[str, Workspace] = {}
        self._last: dict[str, Checkpoint] = {}  # key -> its newest checkpoint, once read
        self._timers: dict[str, threading.Timer] = {}  # thread -> its index refresh, pending
        for path in (root / "records").glob("*.json"):
            try:
                ws = msgspec.json.decode(path.read_bytes(), type=Workspace)
            except (OSError, msgspec.DecodeError):
                continue
            self._records[ws.thread_id] = ws

    # records ------------------------------------------------------------------------------------

    def get(self, thread_id: str) -> Workspace | None:
        return self._records.get(thread_id)

    def records(self) -> list[Workspace]:
        return list(self._records.values())

    def lock(self, thread_id: str) -> threading.Lock:
        with self._lock:
            return self._locks.setdefault(thread_id, threading.Lock())

    def _save(self, ws: Workspace) -> None:
        path = self.root / "records" / f"{ws.key}.json"
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(msgspec.json.encode(ws))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        self._records[ws.thread_id] = ws

    def _index(self, ws: Workspace) -> str:
        return str(self.root / "index" / ws.key)

    # create -------------------------------------------------------------------------------------

    def create(self, thread_id: str, cwd: str, *, seed: str | None = None, operation: str = "start_session") -> Workspace:
        """A new worktree for ``thread_id`` from the repository holding ``cwd``, on the branch
        ``paddock/<key>`` at the repository's ``HEAD`` (a detached one too), its files those of
        ``seed`` (a checkpoint commit) or else the user's worktree as it is now (uncommitted and
        untracked files included, ignored ones not). Raises :class:`ValidationError` naming the
        reason for a folder that is not in a git repository, a repository with no commit, with
        submodules or with LFS files, and a branch ``paddock/<key>`` that already exists."""
        def refuse(issue: str) -> ValidationError:
            return ValidationError(operation, f"workspace = \"worktree\": {issue}", thread_id=thread_id)

        try:
            top = text(git("rev-parse", "--show-toplevel", cwd=cwd))
        except GitError:
            raise refuse(f"{cwd!r} is not inside a git repository (with a work tree)") from None
        try:
            head = text(git("rev-parse", "--verify", "-q", "HEAD^{commit}", cwd=top))
        except GitError:
            raise refuse(f"the repository {top!r} has no commit yet; commit once first") from None
        if os.path.exists(os.path.join(top, ".gitmodules")):
            raise refuse(f"the repository {top!r} has submodules, which a checkpoint cannot hold; "
                         "use workspace = \"shared\"")
        if _uses_lfs(top):
            raise refuse(f"the repository {top!r} stores files with Git LFS, whose contents a checkpoint "
                         "cannot hold; use workspace = \"shared\"")
        key = thread_key(thread_id)
        branch = f"paddock/{key}"
        if git("rev-parse", "--verify", "-q", f"refs/heads/{branch}", cwd=top, ok=(0, 1)).strip():
            raise refuse(f"the branch {branch!r} already exists (kept by an earlier delete_thread); "
                         "delete it or use another thread id")
        subdir = os.path.relpath(os.path.realpath(cwd), os.path.realpath(top))
        ws = Workspace(thread_id=thread_id, key=key, repo=top, path=str(self.root / "trees" / key),
                       subdir="" if subdir == "." else subdir, branch=branch)
        with self.lock(thread_id):
            self._save(ws)  # the journal first: a crash from here on is swept
        try:
            ws = self._make(ws, head, seed)
        except BaseException:
            try:
                self.remove(thread_id)  # nothing half made is left behind
            except Exception:
                pass  # the next open's sweep removes what is left
            raise
        warm = threading.Timer(_RACY_S, self._refresh, args=(ws,))
        warm.daemon = True
        with self._lock:
            self._timers[ws.thread_id] = warm
        warm.start()
        return ws

    def _refresh(self, ws: Workspace) -> None:
        """Timer thread, once, ``_RACY_S`` after a worktree was made: refresh its private index.
        Files written in the same second as an index are "racily clean" to git, which hashes them
        all again on the next `git add`; refreshed a second later they are clean, so the first
        checkpoint hashes only what the turn changed."""
        with self._lock:
            self._timers.pop(ws.thread_id, None)
        with self.lock(ws.thread_id):
            if self._records.get(ws.thread_id) is not ws or not os.path.isdir(ws.path):
                return
            try:
                git("update-index", "-q", "--refresh", cwd=ws.path, index=self._index(ws), ok=(0, 1))
            except PaddockError:
                pass  # an optimisation only: the first checkpoint then pays for it

    def _make(self, ws: Workspace, head: str, seed: str | None) -> Workspace:
        with self.lock(ws.thread_id):
            if seed is None:
                seed = self._snapshot(ws.repo, str(self.root / "index" / f"{ws.key}.user"), parent=head)
            if os.path.exists(ws.path):
                shutil.rmtree(ws.path)
            git("worktree", "add", "--quiet", "-b", ws.branch, ws.path, head, cwd=ws.repo)
            own_index = text(git("rev-parse", "--path-format=absolute", "--git-path", "index", cwd=ws.path))
            shutil.copyfile(own_index, self._index(ws))
            if _tree(seed, ws.repo) == _tree(head, ws.repo):
                seed = head  # nothing uncommitted: the base is HEAD itself
            else:
                self._restore(ws, seed)
            ws = msgspec.structs.replace(ws, base=seed)
            git("update-ref", f"{_REF}/{ws.key}/{0:06d}", seed, cwd=ws.repo)
            self._last[ws.key] = Checkpoint(seq=0, commit=seed)
            self._save(ws)
        return ws

    # checkpoints --------------------------------------------------------------------------------

    def checkpoint(self, ws: Workspace, turn_id: str) -> tuple[Checkpoint, Checkpoint]:
        """Record the worktree's whole state as the checkpoint of ``turn_id``: returns it and the
        checkpoint before it (the base for the first). Touches neither the branch, nor the
        worktree's index, nor the stash."""
        with self.lock(ws.thread_id):
            before = self._newest(ws)
            commit = self._snapshot(ws.path, self._index(ws), parent=before.commit, subject=f"turn {turn_id}")
            after = Checkpoint(seq=before.seq + 1, commit=commit, turn_id=turn_id)
            git("update-ref", f"{_REF}/{ws.key}/{after.seq:06d}", commit, cwd=ws.repo)
            self._last[ws.key] = after
            return after, before

    def checkpoints(self, ws: Workspace) -> list[Checkpoint]:
        """The thread's checkpoints, oldest (the base) first."""
        out = git("for-each-ref", "--format=%(refname)%00%(objectname)%00%(subject)", f"{_REF}/{ws.key}/",
                  cwd=ws.repo)
        found: list[Checkpoint] = []
        for line in out.decode("utf-8", "surrogateescape").splitlines():
            ref, commit, subject = line.split("\0", 2)
            seq = ref.rsplit("/", 1)[1]
            if not seq.isdigit():
                continue
            turn = subject[5:] if subject.startswith("turn ") else None
            found.append(Checkpoint(seq=int(seq), commit=commit, turn_id=turn))
        return sorted(found, key=lambda c: c.seq)

    def _newest(self, ws: Workspace) -> Checkpoint:
        last = self._last.get(ws.key)
        if last is None:
            found = self.checkpoints(ws)
            last = found[-1] if found else Checkpoint(seq=0, commit=ws.base)
            self._last[ws.key] = last
        return last

    def drop(self, ws: Workspace, checkpoints: list[Checkpoint]) -> None:
        """Delete the hidden refs of ``checkpoints`` (one ``update-ref --stdin``)."""
        if not checkpoints:
            return
        lines = "".join(f"delete {_REF}/{ws.key}/{c.seq:06d}\n" for c in checkpoints)
        with self.lock(ws.thread_id):
            git("update-ref", "--stdin", cwd=ws.repo, stdin=lines.encode())
            self._last.pop(ws.key, None)

    def prune(self, ws: Workspace, keep: int) -> int:
        """Delete the oldest turn checkpoints beyond ``keep`` (the base stays); how many."""
        turns = [c for c in self.checkpoints(ws) if c.seq > 0]
        old = turns[: max(0, len(turns) - keep)]
        self.drop(ws, old)
        return len(old)

    def restore(self, ws: Workspace, commit: str) -> None:
        """Make the worktree's files exactly those of ``commit``, byte for byte: changed files
        rewritten, files it lacks removed; ignored files are never touched."""
        with self.lock(ws.thread_id):
            self._restore(ws, commit)

    def _restore(self, ws: Workspace, commit: str) -> None:
        index = self._index(ws)
        # The private index first takes the worktree as it is (untracked files included, ignored
        # ones not); a two-way read-tree from it to the checkpoint then rewrites what differs and
        # removes what the checkpoint lacks: the files `git read-tree` + `checkout-index -a -f`
        # would write, without rewriting the unchanged ones. Ignored files are never in that
        # index, so never removed.
        git("add", "-A", cwd=ws.path, index=index)
        git("read-tree", "--reset", "-u", commit, cwd=ws.path, index=index)

    def diff(self, ws: Workspace, a: str, b: str) -> str:
        """The unified diff from commit ``a`` to ``b`` (binary files named, not shown)."""
        out = git("diff", "--no-color", "--no-ext-diff", "--no-textconv", a, b, cwd=ws.repo)
        return out.decode("utf-8", "replace")

    def snapshot_now(self, ws: Workspace) -> str:
        """A commit of the worktree as it is now, on no ref (a fork's seed)."""
        with self.lock(ws.thread_id):
            return self._snapshot(ws.path, self._index(ws), parent=self._newest(ws).commit, subject="snapshot")

    @staticmethod
    def _snapshot(top: str, index: str, *, parent: str, subject: str = "base") -> str:
        if not os.path.exists(index):
            own = text(git("rev-parse", "--path-format=absolute", "--git-path", "index", cwd=top))
            if os.path.exists(own):
                shutil.copyfile(own, index)  # its stat data: only changed files get hashed
        git("add", "-A", cwd=top, index=index)
        tree = text(git("write-tree", cwd=top, index=index))
        return text(git("commit-tree", tree, "-p", parent, "-m", f"{subject}\n\npaddock checkpoint", cwd=top))

    # delete and sweep ---------------------------------------------------------------------------

    def mark_deleting(self, thread_id: str, *, keep_branch: bool) -> None:
        """Record that the thread's delete began (the sweep finishes it after a crash)."""
        ws = self._records.get(thread_id)
        if ws is not None:
            with self.lock(thread_id):
                self._save(msgspec.structs.replace(ws, deleting=True, keep_branch=keep_branch))

    def remove(self, thread_id: str, *, keep_branch: bool = False) -> bool:
        """Remove the thread's worktree, its hidden refs, its private index and (unless
        ``keep_branch``) its branch, then its record. ``False`` when it had none. A repository that
        is gone leaves only files here to remove."""
        ws = self._records.get(thread_id)
        if ws is None:
            return False
        self._cancel(thread_id)
        with self.lock(thread_id):
            if not ws.deleting:
                self._save(ws := msgspec.structs.replace(ws, deleting=True, keep_branch=keep_branch))
            if os.path.isdir(os.path.join(ws.repo, ".git")) or os.path.isfile(os.path.join(ws.repo, ".git")):
                git("worktree", "remove", "--force", "--force", ws.path, cwd=ws.repo, ok=(0, 128))
                git("worktree", "prune", cwd=ws.repo, ok=(0, 128))
                refs = git("for-each-ref", "--format=delete %(refname)", f"{_REF}/{ws.key}/", cwd=ws.repo)
                if refs.strip():
                    git("update-ref", "--stdin", cwd=ws.repo, stdin=refs)
                if not keep_branch:
                    git("branch", "-D", ws.branch, cwd=ws.repo, ok=(0, 1))
            shutil.rmtree(ws.path, ignore_errors=True)
            for name in (ws.key, f"{ws.key}.user"):
                try:
                    os.unlink(self.root / "index" / name)
                except FileNotFoundError:
                    pass
            try:
                os.unlink(self.root / "records" / f"{ws.key}.json")
            except FileNotFoundError:
                pass
            self._records.pop(thread_id, None)
            self._last.pop(ws.key, None)
        return True

    def _cancel(self, thread_id: str) -> None:
        with self._lock:
            timer = self._timers.pop(thread_id, None)
        if timer is not None:
            timer.cancel()

    def close(self) -> None:
        """Cancel the index refreshes still pending (no git command starts after this)."""
        for thread_id in list(self._timers):
            self._cancel(thread_id)

    def sweep(self, bound: set[str]) -> list[str]:
        """Remove what belongs to no bound thread: a record's worktree, refs and branch (kept
        where its delete said so), and any folder under ``trees/`` no record names. Returns the
        thread ids swept."""
        swept = []
        for ws in list(self._records.values()):
            if ws.thread_id not in bound:
                try:
                    self.remove(ws.thread_id, keep_branch=ws.keep_branch)
                except GitError:
                    continue
                swept.append(ws.thread_id)
        known = {ws.key for ws in self._records.values()}
        for folder in (self.root / "trees").iterdir():
            if folder.name not in known:
                shutil.rmtree(folder, ignore_errors=True)
        return swept


def _tree(commit: str, cwd: str) -> str:
    return text(git("rev-parse", f"{commit}^{{tree}}", cwd=cwd))


def _uses_lfs(top: str) -> bool:
    """Whether an attributes file the repository tracks (or its info/attributes) routes files
    through the LFS filter."""
    names = git("ls-files", "-z", "--", ":(glob)**/.gitattributes", cwd=top).split(b"\0")
    info = text(git("rev-parse", "--path-format=absolute", "--git-path", "info/attributes", cwd=top))
    for path in [os.path.join(top, n.decode("utf-8", "surrogateescape")) for n in names if n] + [info]:
        try:
            with open(path, "rb") as fh:
                if b"filter=lfs" in fh.read():
                    return True
        except OSError:
            continue
    return False
