"""`LockFile`: an exclusive, advisory lock on a directory, held for as long as a process uses it."""

from __future__ import annotations

import os

from ..._errors import ConfigError

__all__ = ("LockFile",)


class LockFile:
    """Hold `flock(LOCK_EX)` on `<directory>/<name>`; the kernel drops it when the process dies.

    Raises:
        ConfigError: another process (named by its pid) holds the lock.
    """

    __slots__ = ("_fd",)

    def __init__(self, directory: str, *, name: str = "mocra.lock", what: str = "queue.path") -> None:
        import fcntl  # POSIX only; imported here so the package still imports elsewhere

        fd = os.open(os.path.join(directory, name), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            os.close(fd)
            by = f"process {holder}" if holder else "another process"
            raise ConfigError(
                what, f"{directory!r} is in use by {by}; a queue directory serves one process at a time"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd: int | None = fd

    @staticmethod
    def holder(directory: str, *, name: str = "mocra.lock") -> str | None:
        """The pid of the process holding the lock on `directory`, or None when no process holds it.

        It tries the lock without waiting and lets go at once, so a process taking it in that instant
        is refused (as by any holder).

        Example:
            >>> import tempfile
            >>> with tempfile.TemporaryDirectory() as path:
            ...     lock = LockFile(path)
            ...     held = LockFile.holder(path) == str(os.getpid())
            ...     lock.release()
            ...     held, LockFile.holder(path)
            (True, None)
        """
        import fcntl

        try:
            fd = os.open(os.path.join(directory, name), os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        finally:
            os.close(fd)  # closing drops a lock taken here
        return None

    def release(self) -> None:
        """Let go of the lock; idempotent."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
