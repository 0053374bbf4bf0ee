"""Resume after any interruption: clear Snakemake's locks left by a run that was killed.

Snakemake locks the working directory while it runs and unlocks it when it exits, also on
SIGINT and SIGTERM; after SIGKILL (or a power cut) the locks stay and the next run fails with
``LockException`` until ``snakemake --unlock``. The locks do not say which process holds them,
so the workflow records the run that holds them (:func:`record_run`, from ``onstart``) and,
when it starts again, removes them only if that run is *proven* gone (:func:`clear_stale_locks`).

A pid alone proves nothing: the working directory may be shared by runs in other containers or
on other login nodes of a cluster (another PID namespace, another kernel), where the same pid
is another process or none. So the record names the holder completely — host name and machine
id, the host's boot time, the PID namespace, the pid and the process's start time — and the
locks are removed only when

* the holder ran on this host, in this boot and in this PID namespace, and no process with
  its pid and start time exists any more (a pid reused by another process counts as gone), or
* the holder ran on this host (same host name and machine id) in an earlier boot: the host
  rebooted, every process of that boot is gone.

Process facts (existence, start time, boot time) come from psutil, which reads them portably;
the machine id and the PID namespace are Linux's (elsewhere: no namespaces, see
:func:`_pid_namespace`).

Anything else — another host, another PID namespace, a record without these fields (an older
lbrepro), a field that cannot be read — keeps the locks: two runs never write the same files,
and Snakemake's own message (``snakemake --unlock``) applies.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

import psutil

from lbrepro.core.io import read_regular_bounded

__all__ = [
    "clear_stale_locks",
    "forget_run",
    "holder_is_alive",
    "identity",
    "live_holder",
    "record_run",
]

RUN_FILE = "lbrepro-run.pid"


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as fh:
            return fh.read().strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _pid_namespace() -> str | None:
    """This process's PID namespace: Linux's namespace link; "none" on a system without PID
    namespaces (every process of the host shares one pid space); None if Linux does not tell."""
    if not sys.platform.startswith("linux"):
        return "none"
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def _machine_id() -> str | None:
    """The host's machine id (systemd's /etc/machine-id; None where there is none)."""
    return _read("/etc/machine-id") or _read("/var/lib/dbus/machine-id")


def boot_time() -> int | None:
    """When the host booted (whole seconds since the epoch), or None."""
    try:
        return int(psutil.boot_time())
    except (OSError, psutil.Error):
        return None


def start_time(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch), or None (no such process)."""
    try:
        return psutil.Process(pid).create_time()
    except (psutil.Error, OSError, ValueError):
        return None


def identity(pid: int | None = None) -> dict[str, Any]:
    """Who process ``pid`` (default: this one) is, as far as another run can tell."""
    pid = os.getpid() if pid is None else int(pid)
    return {
        "host": socket.gethostname(),
        "machine_id": _machine_id(),
        "boot_time": boot_time(),
        "pid_namespace": _pid_namespace(),
        "pid": pid,
        "start_time": start_time(pid),
    }


def _alive(pid: int) -> bool:
    """Whether a process with this pid exists (a zombie counts as gone: it runs nothing)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except (psutil.Error, OSError):
        return True  # cannot tell: keep the locks


def holder_is_gone(record: dict[str, Any], here: dict[str, Any] | None = None) -> bool:
    """Whether the run described by ``record`` is proven gone, seen from ``here``."""
    here = identity() if here is None else here
    fields = ("host", "machine_id", "boot_time", "pid_namespace", "pid")
    if any(record.get(f) is None or here.get(f) is None for f in fields):
        return False  # an older record, or this system does not tell: cannot prove
    if record["host"] != here["host"] or record["machine_id"] != here["machine_id"]:
        return False  # another machine (or container) sharing the directory
    if record["boot_time"] != here["boot_time"]:
        return True  # this host rebooted since: every process of that boot is gone
    if record["pid_namespace"] != here["pid_namespace"]:
        return False  # another PID namespace of this kernel: its pids mean nothing here
    pid = int(record["pid"])
    if not _alive(pid):
        return True
    started = record.get("start_time")
    now = start_time(pid)
    # Alive: the same process unless the pid was reused by a process started later.
    return started is not None and now is not None and now != started


def holder_is_alive(record: dict[str, Any], here: dict[str, Any] | None = None) -> bool:
    """Whether the run described by ``record`` is proven to run still, seen from ``here``:
    this host, this boot, this PID namespace, and its process (pid and start time) exists."""
    here = identity() if here is None else here
    fields = ("host", "machine_id", "boot_time", "pid_namespace", "pid", "start_time")
    if any(record.get(f) is None or here.get(f) is None for f in fields):
        return False
    if any(record[f] != here[f] for f in ("host", "machine_id", "boot_time", "pid_namespace")):
        return False
    pid = int(record["pid"])
    return pid != here["pid"] and _alive(pid) and start_time(pid) == record["start_time"]


def live_holder(state_dir: str | Path = ".snakemake") -> int | None:
    """The pid of a run proven to hold this directory's locks now (:func:`holder_is_alive`),
    else None: a second run started beside it would fail on Snakemake's lock, in five lines."""
    path = Path(state_dir)
    if not any((path / "locks").glob("*.lock")):
        return None
    record = read_record(path)
    return int(record["pid"]) if record is not None and holder_is_alive(record) else None


def record_run(state_dir: str | Path = ".snakemake", pid: int | None = None) -> None:
    """Record that process ``pid`` (default: this one) holds the locks in ``state_dir``."""
    path = Path(state_dir)
    path.mkdir(parents=True, exist_ok=True)
    tmp = path / f".{RUN_FILE}.{os.getpid()}"
    tmp.write_text(json.dumps(identity(pid)) + "\n", encoding="utf-8")
    os.replace(tmp, path / RUN_FILE)


def forget_run(state_dir: str | Path = ".snakemake") -> None:
    """The run ended normally (Snakemake removed its own locks)."""
    (Path(state_dir) / RUN_FILE).unlink(missing_ok=True)


def read_record(state_dir: str | Path = ".snakemake") -> dict[str, Any] | None:
    """The recorded holder of the locks, or None (no record, or one of an older lbrepro)."""
    try:
        raw = read_regular_bounded(Path(state_dir) / RUN_FILE, 4096, what="a run record")
        record = json.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def clear_stale_locks(state_dir: str | Path = ".snakemake") -> int | None:
    """Remove the locks of a recorded run proven gone (see the module); return its pid, else
    None (nothing touched)."""
    path = Path(state_dir)
    record = read_record(path)
    if record is None or not holder_is_gone(record):
        return None
    for lock in (path / "locks").glob("*.lock"):
        lock.unlink(missing_ok=True)
    (path / RUN_FILE).unlink(missing_ok=True)
    return int(record["pid"])
