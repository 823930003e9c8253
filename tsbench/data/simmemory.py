"""Phase 1, generate: where a simulator's per-entity memory lives, so that the
generator's memory stays bounded at any scale.

The C simulator keeps, per entity, its state (8 bytes per field: the walks are
path-dependent, so every entity's state is carried from one epoch to the next),
its stream keys, its late-entry rings, and a cache of its tag parts (the text
before a record's fields, built once: building it for every record would take
most of the fill's time). It says how many bytes that is at most (the cache by a
bound on its text; pages never written are never touched) and takes them from
here (ts_sim_state_bytes, ts_sim_set_memory, through native.Simulator). Up to
`Budget.state` bytes (the environment's TSBENCH_STATE_BUDGET, else STATE_BUDGET)
they are the process's memory. Beyond it they live in a file of that size under
tsbench's home (tmp/), its room on disk taken at the start (a full disk is then an
error at once, not a crash on a page later): the file has no name from the
moment it is made (O_TMPFILE, else a name removed at once), so nothing is left
behind on any exit, an error, Ctrl-C or a kill; it is mapped. Its parts (C's
layout: one array per kind, each indexed by entity) stay mapped while they fit
half the budget, smallest first; of the others, after each fill the pages behind
the simulator's cursor are handed back to the kernel (MADV_DONTNEED: the file
keeps what they held), so the process holds those parts and about one fill's
worth of the rest. The kernel may keep the file in its page cache: its pages,
reclaimable, not the process's. The cost: page faults on each page of it each
epoch, and the kernel writing the file back.
"""

from __future__ import annotations

import mmap
import os
import tempfile
from dataclasses import dataclass, field

from tsbench.core import homedir
from tsbench.core.errors import UserError

STATE_BUDGET = 40 << 20     # per-entity memory (at its bound) kept in the processes of one generate
RELEASE_STEP = 1 << 20      # pages behind the cursor are handed back this many bytes at a time
PAGE = mmap.PAGESIZE


def default_state_budget() -> int:
    """TSBENCH_STATE_BUDGET (bytes) when set, else STATE_BUDGET."""
    text = os.environ.get("TSBENCH_STATE_BUDGET", "")
    if not text:
        return STATE_BUDGET
    if not text.isdigit():
        raise UserError(f"TSBENCH_STATE_BUDGET: {text!r} is not a number of bytes")
    return int(text)


@dataclass(frozen=True)
class Budget:
    """What a simulator may keep in memory: its per-entity memory, at its bound."""

    state: int = field(default_factory=default_state_budget)
    folder: str | None = None     # where state beyond the budget goes; None: tmp/ in tsbench's home

    def share(self, processes: int) -> Budget:
        """One of `processes` simulators' share."""
        return Budget(self.state // processes, self.folder)


def state_folder(budget: Budget) -> str:
    return budget.folder or os.path.join(homedir.root(), "tmp")


class InMemory:
    """The per-entity memory as anonymous pages of the process."""

    in_file = False

    def __init__(self, nbytes: int):
        self.nbytes = nbytes
        self.buf = mmap.mmap(-1, max(nbytes, PAGE), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)

    def release(self, parts) -> None:
        """Nothing to hand back: these pages hold the only copy."""

    def describe(self) -> dict:
        return {"state_bytes": self.nbytes, "state_file_bytes": 0, "state_folder": None}


class InFile:
    """The per-entity memory as a mapped file with no name, its pages behind the
    simulator's cursor handed back after each fill."""

    in_file = True

    def __init__(self, nbytes: int, folder: str, keep: int):
        self.nbytes, self.folder, self._keep = nbytes, folder, keep
        try:
            fd = _unnamed_file(folder)
        except OSError as exc:
            raise _no_file(nbytes, folder, exc) from None
        try:
            os.posix_fallocate(fd, 0, nbytes)   # the disk's room now: a full disk later would kill the process
            self.buf = mmap.mmap(fd, nbytes)
        except OSError as exc:
            raise _no_file(nbytes, folder, exc) from None
        finally:
            os.close(fd)                # the mapping keeps the file until it is unmapped
        self._done: list[int] = []     # per part: bytes handed back this epoch

    def release(self, parts: list[tuple[int, int, int]]) -> None:
        """Hand back the pages behind the cursor: parts as ts_sim_state_behind gives them
        (offset, bytes behind, bytes), at least RELEASE_STEP at a time."""
        if not self._done:
            self._done = [0] * len(parts)
            self._kept = _smallest_within([size for _, _, size in parts], self._keep)
        for i, (off, behind, size) in enumerate(parts):
            if i in self._kept:
                continue
            done = self._done[i]
            if behind < done:           # a new epoch: the rest of the last one first
                self._drop(off + done, off + size, True)
                done = 0
            if behind - done >= RELEASE_STEP or (behind == size and done < size):
                self._drop(off + done, off + behind, behind == size)
                done = behind
            self._done[i] = done

    def _drop(self, start: int, end: int, to_part_end: bool) -> None:
        """madvise the whole pages of [start, end); a part's last page (parts start on pages)
        only once the part is all behind."""
        start = start // PAGE * PAGE
        end = min(-(-end // PAGE) * PAGE, self.nbytes) if to_part_end else end // PAGE * PAGE
        if end > start:
            self.buf.madvise(mmap.MADV_DONTNEED, start, end - start)

    def describe(self) -> dict:
        return {"state_bytes": self.nbytes, "state_file_bytes": self.nbytes, "state_folder": self.folder}


def _smallest_within(sizes: list[int], limit: int) -> set[int]:
    """The indices of the smallest sizes whose sum is within limit."""
    kept, total = set(), 0
    for i in sorted(range(len(sizes)), key=sizes.__getitem__):
        if total + sizes[i] > limit:
            break
        kept.add(i)
        total += sizes[i]
    return kept


def allocate(nbytes: int, budget: Budget) -> InMemory | InFile:
    """The per-entity memory of a simulator: in memory within the budget, else in a file
    whose parts within half the budget stay mapped."""
    if nbytes <= budget.state:
        return InMemory(nbytes)
    return InFile(nbytes, state_folder(budget), budget.state // 2)


def _no_file(nbytes: int, folder: str, exc: OSError) -> UserError:
    return UserError(f"the simulator's state ({nbytes / 1e6:,.0f} MB, over its budget) needs a file under "
                     f"{folder}: {exc.strerror or exc}; free some room there, or set TSBENCH_HOME to another "
                     f"folder (or TSBENCH_STATE_BUDGET to keep more of it in memory)")


def _unnamed_file(folder: str) -> int:
    """A new file in folder that has no name: nothing to remove on any exit."""
    os.makedirs(folder, exist_ok=True)
    try:
        return os.open(folder, os.O_TMPFILE | os.O_RDWR, 0o600)
    except (AttributeError, OSError):   # no O_TMPFILE here, or not on this filesystem
        fd, path = tempfile.mkstemp(prefix="state-", dir=folder)
        os.unlink(path)
        return fd


def filesystem(folder: str) -> str:
    """The type of the filesystem folder is on ("tmpfs": the file is memory all the same), or ""."""
    import psutil

    path = os.path.realpath(folder)
    mounts = [p for p in psutil.disk_partitions(all=True)
              if path == p.mountpoint or path.startswith(p.mountpoint.rstrip("/") + "/")]
    return max(mounts, key=lambda p: len(p.mountpoint)).fstype if mounts else ""


def summary(described: list[dict], budget: Budget) -> dict:
    """Where the state of a generate's simulators (their describe()) lived, for its manifest."""
    files = [d for d in described if d["state_file_bytes"]]
    folder = files[0]["state_folder"] if files else None
    return {"state_bytes": sum(d["state_bytes"] for d in described),
            "state_file_bytes": sum(d["state_file_bytes"] for d in files),
            "state_folder": folder, "state_filesystem": filesystem(folder) if folder else None,
            "state_budget_bytes": budget.state}


def disclose(memory: dict) -> str:
    """The summary's words on a state kept in a file ("" when it was all in memory)."""
    if not memory["state_file_bytes"]:
        return ""
    fs = memory["state_filesystem"]
    note = "; tmpfs: memory all the same" if fs == "tmpfs" else ""
    return (f"; state in a file of {memory['state_file_bytes'] / 1e6:,.0f} MB under {memory['state_folder']}"
            f" (over the {memory['state_budget_bytes'] / 2**20:.0f} MiB budget; removed on exit{note})")
