"""Resume after any interruption: clear Snakemake's locks left by a run that was killed.

Snakemake locks the working directory while it runs and unlocks it when it exits, also on
SIGINT and SIGTERM; after SIGKILL (or a power cut) the locks stay and the next run fails with
``LockException`` until ``snakemake --unlock``. The locks do not say which process holds them,
so the workflow records the pid of the run that holds them (:func:`record_run`, from
``onstart``) and, when it starts again, removes them if that process is gone
(:func:`clear_stale_locks`). A run that is still alive keeps its locks: two runs never write
the same files.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["clear_stale_locks", "forget_run", "record_run"]

RUN_FILE = "lbrepro-run.pid"


def _alive(pid: int) -> bool:
    """Whether a process with this pid exists (signal 0 checks without signalling)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def record_run(state_dir: str | Path = ".snakemake", pid: int | None = None) -> None:
    """Record that process ``pid`` (default: this one) holds the locks in ``state_dir``."""
    path = Path(state_dir)
    path.mkdir(parents=True, exist_ok=True)
    (path / RUN_FILE).write_text(f"{os.getpid() if pid is None else pid}\n", encoding="utf-8")


def forget_run(state_dir: str | Path = ".snakemake") -> None:
    """The run ended normally (Snakemake removed its own locks)."""
    (Path(state_dir) / RUN_FILE).unlink(missing_ok=True)


def clear_stale_locks(state_dir: str | Path = ".snakemake") -> int | None:
    """Remove the locks of a recorded run whose process is gone; return its pid, else None.

    Without a record (a run of an older lbrepro, or ``--nolock``) nothing is touched and
    Snakemake's own message (``snakemake --unlock``) applies.
    """
    path = Path(state_dir)
    record = path / RUN_FILE
    try:
        pid = int(record.read_text(encoding="utf-8").split()[0])
    except (OSError, ValueError, IndexError):
        return None
    if _alive(pid):
        return None
    for lock in (path / "locks").glob("*.lock"):
        lock.unlink(missing_ok=True)
    record.unlink(missing_ok=True)
    return pid
