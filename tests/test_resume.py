"""Interrupt a running Snakemake mid-job (SIGINT, SIGKILL here; SIGTERM and SIGHUP as rows of
tests/test_hostile_inputs.py, through :func:`resumes_after`): no job outlives a run ended by
SIGTERM or SIGHUP, and the plain rerun command resumes and completes — no --unlock, no
--rerun-incomplete to remember."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from lbrepro.core import runlock

ROOT = Path(__file__).resolve().parents[1]
TARGET = "results/supermarket/supermarket-tail.csv"
# One point that simulates for a few seconds (~10⁸ events; 3 s on a fast core), on the quick
# profile: long enough to be interrupted mid-run even with numba's cache warm, which a smaller
# run is not (it finished before the signal on a fast machine).
TINY = """\
supermarket-tail:
  rho: [0.9]
  d: [2]
  N: 1000
  horizon: 60000
  warmup: 100
"""


def _command(tmp_path: Path) -> list[str]:
    """The plain command a user reruns (the default profile is found beside the Snakefile)."""
    (tmp_path / "tiny.yaml").write_text(TINY)
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--cores",
        "1",
        "--configfile",
        str(ROOT / "config" / "config.yaml"),
        str(ROOT / "config" / "quick.yaml"),
        str(tmp_path / "tiny.yaml"),
        "--",
        TARGET,
    ]


def _default_sigint() -> None:
    """In the child before exec: SIGINT back to its default disposition."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _job_running(cwd: Path) -> bool:
    """Whether Snakemake has started a job: it marks the job's outputs incomplete first (the
    terminal no longer shows each job's lines; they are in the log file)."""
    return any((cwd / ".snakemake" / "incomplete").glob("*"))


def _interrupt(cmd: list[str], cwd: Path, sig: signal.Signals) -> None:
    """Start the run, wait until the point's job is running, then send ``sig``.

    SIGINT goes to the whole process group, as Ctrl-C at a terminal does; SIGTERM and SIGHUP
    to Snakemake's process only, as ``kill <pid>`` and ``kill -HUP <pid>`` do; SIGKILL to the
    whole group, as when the session or the machine dies (a job orphaned by ``kill -KILL
    <pid>`` would only delay the rerun until it ends: the rerun reruns it as incomplete).
    SIGTERM and SIGHUP must end the job too, at once: no job outlives its run.
    """
    with open(cwd / "stderr.txt", "w") as err:
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=err,
            text=True,
            start_new_session=True,
            # A test run started in the background by a non-interactive shell (as CI may be)
            # inherits SIGINT ignored; Ctrl-C at a terminal reaches a process that does not.
            preexec_fn=_default_sigint,
        )
    try:
        deadline = time.monotonic() + 240
        while not _job_running(cwd):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the run ended before its job started: " + _tail(cwd))
            time.sleep(0.1)
        time.sleep(1.5)  # the job is running (imports, JIT, simulation)
        assert proc.poll() is None, "the job finished before the interruption"
        if sig in (signal.SIGINT, signal.SIGKILL):
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    if sig in (signal.SIGTERM, signal.SIGHUP):
        # Snakemake ended its jobs before it exited (lbrepro.core.run_signals): none is left
        # running beside the rerun.
        deadline = time.monotonic() + 5
        while _children_of_session(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _children_of_session(proc.pid), "a job outlived its run"
    # Let any job still ending its signal handling go before the rerun.
    deadline = time.monotonic() + 30
    while _children_of_session(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)


def _tail(cwd: Path) -> str:
    """The end of the interrupted run's stderr, for a failure message."""
    path = cwd / "stderr.txt"
    return path.read_text()[-2000:] if path.exists() else ""


def _children_of_session(sid: int) -> bool:
    """Whether any process of the interrupted run's session is still alive (not a zombie)."""
    for proc in psutil.process_iter():
        try:
            if os.getsid(proc.pid) == sid and proc.status() != psutil.STATUS_ZOMBIE:
                return True
        except (OSError, psutil.Error):
            continue  # gone meanwhile, or not ours to ask
    return False


def resumes_after(tmp_path: Path, sig: signal.Signals) -> None:
    """Interrupt the run with ``sig`` mid-job; the plain rerun command completes it (SIGHUP
    and SIGTERM are rows of tests/test_hostile_inputs.py, which calls this)."""
    cmd = _command(tmp_path)
    _interrupt(cmd, tmp_path, sig)
    assert not (tmp_path / TARGET).exists()
    if sig == signal.SIGKILL:
        # The case Snakemake alone cannot resume from: its locks outlive the killed run.
        assert list((tmp_path / ".snakemake" / "locks").glob("*.lock"))
    rerun = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert (tmp_path / TARGET).exists()
    assert not list((tmp_path / ".snakemake" / "locks").glob("*.lock"))


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name)
def test_plain_rerun_resumes_after_interruption(tmp_path: Path, sig: signal.Signals) -> None:
    resumes_after(tmp_path, sig)


def test_stale_locks_are_cleared_only_when_their_run_is_gone(tmp_path: Path) -> None:
    locks = tmp_path / "locks"
    locks.mkdir()
    (locks / "0.input.lock").write_text("x\n")
    assert runlock.clear_stale_locks(tmp_path) is None  # no record: leave Snakemake's locks
    runlock.record_run(tmp_path)  # this test process: alive
    assert runlock.clear_stale_locks(tmp_path) is None
    assert (locks / "0.input.lock").exists()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    runlock.record_run(tmp_path, pid=dead.pid)
    assert runlock.clear_stale_locks(tmp_path) == dead.pid
    assert not (locks / "0.input.lock").exists()
    assert not (tmp_path / runlock.RUN_FILE).exists()
    runlock.record_run(tmp_path)
    runlock.forget_run(tmp_path)
    assert not (tmp_path / runlock.RUN_FILE).exists()


def test_default_profile_is_where_snakemake_looks() -> None:
    # Snakemake 9 reads profiles/default beside the Snakefile or the working directory
    # (snakemake.cli.parse_args), never workflow/profiles/default.
    profile = ROOT / "profiles" / "default" / "config.yaml"
    assert (ROOT / "Snakefile").parent / "profiles" / "default" == profile.parent
    assert "rerun-incomplete: true" in profile.read_text()


def test_live_holder_only_when_proven_alive(tmp_path: Path) -> None:
    """A run recorded by a live process of this host holds the directory; a dead one, this
    very process, a record without locks or one from another host does not."""
    assert runlock.live_holder(tmp_path) is None  # no locks
    locks = tmp_path / "locks"
    locks.mkdir()
    (locks / "0.input.lock").write_text("x\n")
    assert runlock.live_holder(tmp_path) is None  # locks, no record: Snakemake's message
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        runlock.record_run(tmp_path, pid=holder.pid)
        assert runlock.live_holder(tmp_path) == holder.pid
        record = runlock.read_record(tmp_path)
        assert record is not None
        assert not runlock.holder_is_alive(record | {"host": "login2"})
        assert not runlock.holder_is_alive(record | {"start_time": 1.0})  # a reused pid
        runlock.record_run(tmp_path)  # this process: a workflow never blocks itself
        assert runlock.live_holder(tmp_path) is None
    finally:
        holder.kill()
        holder.wait()
    runlock.record_run(tmp_path, pid=holder.pid)
    assert runlock.live_holder(tmp_path) is None  # gone


def test_a_second_run_beside_a_live_one_is_one_line(tmp_path: Path) -> None:
    """``snakemake`` started while another run works in the same directory: one line naming
    its pid, exit code 2, nothing removed (was: Snakemake's five-line LockException, exit 1);
    a dry run may still look."""
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        state = tmp_path / ".snakemake"
        (state / "locks").mkdir(parents=True)
        (state / "locks" / "0.input.lock").write_text("x\n")
        runlock.record_run(state, pid=holder.pid)
        cmd = _command(tmp_path)
        out = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert out.returncode == 2, (out.stdout[-2000:], out.stderr[-2000:])
        lines = [line for line in out.stderr.splitlines() if line.startswith("lbrepro:")]
        assert lines == [
            f"lbrepro: another run (pid {holder.pid}) is working in {tmp_path}: wait for it to "
            f"end, or stop it (kill {holder.pid}); a dry run (-n) may look meanwhile"
        ], out.stderr
        assert "LockException" not in out.stderr + out.stdout
        assert (state / "locks" / "0.input.lock").exists()
        dry = [*cmd[:3], "-n", *cmd[3:]]
        assert subprocess.run(dry, cwd=tmp_path, capture_output=True, timeout=300).returncode == 0
    finally:
        holder.kill()
        holder.wait()
