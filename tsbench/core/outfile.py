"""Every file a command writes at a path the user named, in every phase: generate's
data file and manifest, queries generate's queries file, the --json summaries of load,
stream, execute, validate and verify, stream's --seconds table, a run's tables and
manifest under --results, and the HTML report.

One rule for all of them: a failed write never removes or truncates what was at the
path. A regular file (or no file yet) is written to a temporary file beside it, renamed
over it only once every byte is written; on failure the temporary file is removed and
the path holds what it held. Anything else that exists there (a device such as
/dev/null, a FIFO) is written in place: opened without truncating, never removed; `-`
and /dev/stdout are the process's stdout as it is. A failure is a UserError naming the option and the path."""

from __future__ import annotations

import contextlib
import os
import pathlib
import stat
import sys

from tsbench.core.errors import UserError

STDOUT = ("-", "/dev/stdout")     # written to file descriptor 1 as it is (a file opened to append stays so)


class OutputFile:
    """An output being written: `file` takes the bytes (binary, unbuffered writes go to
    `file.fileno()` as well); commit() puts it in place, abort() leaves the path as it was."""

    def __init__(self, path: str | os.PathLike, option: str):
        self.path, self.option = str(path), option
        self.tmp: str | None = None        # the temporary file beside a regular one, renamed at commit()
        self.stdout = self.path in STDOUT
        try:
            if self.stdout:
                self.file = sys.stdout.buffer
            elif _in_place(self.path):
                self.file = open(os.open(self.path, os.O_WRONLY | os.O_CLOEXEC), "wb")
            else:
                self.file = self._open_beside()
        except OSError as exc:
            raise self.error(exc) from None

    @property
    def regular(self) -> bool:
        """Whether a regular file is being written (through a temporary file)."""
        return self.tmp is not None

    def _open_beside(self):
        target = pathlib.Path(os.path.realpath(self.path))      # a symlink stays and its file is replaced
        self.target = str(target)
        tmp = str(target.with_name(f".{target.name[:200]}.{os.urandom(6).hex()}.tmp"))
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)    # the umask applies
        self.tmp = tmp
        try:
            with contextlib.suppress(FileNotFoundError):
                os.fchmod(fd, stat.S_IMODE(os.stat(target).st_mode))       # an existing file's mode kept
            return open(fd, "wb")
        except BaseException:
            os.close(fd)
            os.unlink(self.tmp)
            raise

    def commit(self) -> None:
        """Flush; a regular file renamed into place. A failure aborts (UserError)."""
        try:
            self.file.flush()
            if self.stdout:
                return
            self.file.close()
            if self.tmp is not None:
                os.replace(self.tmp, self.target)
                self.tmp = None
        except BrokenPipeError:
            raise
        except OSError as exc:
            self.abort()
            raise self.error(exc) from None

    def abort(self) -> None:
        """Close without putting anything in place: the temporary file removed, the path untouched."""
        if not self.stdout:
            with contextlib.suppress(OSError):
                self.file.close()
        if self.tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.tmp)
            self.tmp = None

    def error(self, exc: OSError) -> UserError:
        where = "stdout" if self.stdout else repr(self.path)
        return UserError(f"{self.option}: cannot write {where}: {exc.strerror or exc}")

    def __enter__(self):
        return self.file

    def __exit__(self, kind, exc, tb) -> None:
        if kind is None:
            self.commit()
            return
        self.abort()
        if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
            raise self.error(exc) from None


def _in_place(path: str) -> bool:
    """Whether path is something that exists and is not a regular file (a device, a FIFO):
    written where it is."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return False


def write_bytes(path: str | os.PathLike, option: str, data: bytes) -> None:
    with OutputFile(path, option) as f:
        f.write(data)


def write_text(path: str | os.PathLike, option: str, text: str) -> None:
    write_bytes(path, option, text.encode())


def problem(path: str) -> str | None:
    """Why path cannot be written (said before any work), or None. A regular file needs
    its folder writable too: it is replaced by a file written beside it."""
    if path in STDOUT:
        return None
    p = pathlib.Path(path)
    if p.is_dir():
        return f"{path} is a directory, not a file"
    parent = pathlib.Path(os.path.realpath(p)).parent
    if not parent.is_dir():
        return f"cannot write {path}: no such directory {str(p.parent)!r}"
    if p.exists() and not os.access(p, os.W_OK):
        return f"cannot write {path}: permission denied"
    if not _in_place(str(p)) and not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot write {path}: its folder {str(parent)!r} is not writable (the file is written beside it, " \
               "then renamed)"
    return None
