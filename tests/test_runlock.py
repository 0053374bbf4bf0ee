"""Stale locks are removed only when their holder is proven gone (issue 21).

A run in another PID namespace (another container, another login node sharing the file
system) must never lose its locks to a run that cannot see its pid. The namespace tests run
``unshare --pid --fork --mount-proc`` (root only; skipped elsewhere).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lbrepro.core import runlock

UNSHARE = ["unshare", "--pid", "--fork", "--mount-proc"]


def _locked(state: Path) -> Path:
    (state / "locks").mkdir(parents=True, exist_ok=True)
    lock = state / "locks" / "0.input.lock"
    lock.write_text("x\n")
    return lock


def _can_unshare() -> bool:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    return subprocess.run([*UNSHARE, "true"], capture_output=True).returncode == 0


needs_unshare = pytest.mark.skipif(not _can_unshare(), reason="needs root and unshare")


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_record_names_host_boot_namespace_and_start(tmp_path: Path) -> None:
    runlock.record_run(tmp_path)
    record = json.loads((tmp_path / runlock.RUN_FILE).read_text())
    assert set(record) == {"host", "machine_id", "boot_time", "pid_namespace", "pid", "start_time"}
    assert record["pid"] == os.getpid() and record["start_time"] == runlock.start_time(os.getpid())


def _record(**change: Any) -> dict[str, Any]:
    return runlock.identity() | change


@pytest.mark.parametrize(
    ("record", "gone"),
    [
        pytest.param(_record(), False, id="this-process-alive"),
        pytest.param(_record(pid=_dead_pid(), start_time=None), True, id="same-ns-dead"),
        pytest.param(_record(start_time=1), True, id="pid-reused-by-a-later-process"),
        pytest.param(_record(pid_namespace="pid:[1]"), False, id="other-pid-namespace"),
        pytest.param(_record(pid_namespace="pid:[1]", pid=_dead_pid()), False, id="other-ns-pid"),
        pytest.param(_record(host="login2"), False, id="other-host"),
        pytest.param(_record(machine_id="0" * 32), False, id="other-machine-same-name"),
        pytest.param(_record(boot_time=1, pid_namespace="pid:[1]"), True, id="host-rebooted"),
        pytest.param(_record(boot_time=None), False, id="field-unknown"),
        pytest.param({"pid": 12345}, False, id="older-record"),
    ],
)
def test_holder_gone_only_when_proven(record: dict[str, Any], gone: bool) -> None:
    assert runlock.holder_is_gone(record) is gone


def test_old_pid_only_record_keeps_the_locks(tmp_path: Path) -> None:
    lock = _locked(tmp_path)
    (tmp_path / runlock.RUN_FILE).write_text(f"{_dead_pid()}\n")
    assert runlock.clear_stale_locks(tmp_path) is None and lock.exists()


def _hold_in_new_namespace(state: Path) -> subprocess.Popen[str]:
    """A process in a new PID namespace that records itself as the holder and stays alive."""
    code = (
        "import sys, time; from lbrepro.core import runlock; "
        f"runlock.record_run({str(state)!r}); print('ready', flush=True); time.sleep(120)"
    )
    proc = subprocess.Popen(
        [*UNSHARE, sys.executable, "-c", code], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


@needs_unshare
def test_holder_in_another_pid_namespace_keeps_its_locks(tmp_path: Path) -> None:
    """Holder inside a new PID namespace, alive; this run (outside) must not take the locks."""
    lock = _locked(tmp_path)
    holder = _hold_in_new_namespace(tmp_path)
    try:
        record = runlock.read_record(tmp_path)
        assert record is not None and record["pid_namespace"] != runlock.identity()["pid_namespace"]
        assert runlock.clear_stale_locks(tmp_path) is None
        assert lock.exists()
    finally:
        holder.kill()
        holder.wait()
    # Even gone, a holder of another namespace cannot be proven dead from here.
    assert runlock.clear_stale_locks(tmp_path) is None and lock.exists()


@needs_unshare
def test_run_in_another_pid_namespace_does_not_take_a_live_runs_locks(tmp_path: Path) -> None:
    """The issue's case: the holder runs here; a run in a new PID namespace, which cannot see
    its pid, used to print "removed the locks of an interrupted run"."""
    lock = _locked(tmp_path)
    runlock.record_run(tmp_path)  # this test process: alive
    code = f"from lbrepro.core import runlock; print(runlock.clear_stale_locks({str(tmp_path)!r}))"
    inside = subprocess.run([*UNSHARE, sys.executable, "-c", code], capture_output=True, text=True)
    assert inside.returncode == 0, inside.stderr
    assert inside.stdout.strip() == "None" and lock.exists()


@needs_unshare
def test_dead_holder_of_the_same_namespace_is_cleared_inside_a_namespace(tmp_path: Path) -> None:
    """Within one namespace a killed holder is still proven gone: the resume keeps working."""
    lock = _locked(tmp_path)
    code = (
        "import subprocess, sys; from lbrepro.core import runlock; "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        f"runlock.record_run({str(tmp_path)!r}, pid=p.pid); p.kill(); p.wait(); "
        f"print(runlock.clear_stale_locks({str(tmp_path)!r}) == p.pid)"
    )
    inside = subprocess.run([*UNSHARE, sys.executable, "-c", code], capture_output=True, text=True)
    assert inside.stdout.strip() == "True", inside.stderr
    assert not lock.exists()
