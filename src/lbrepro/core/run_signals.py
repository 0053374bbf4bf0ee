"""SIGHUP and SIGTERM end a workflow run's jobs, so a rerun never starts a job beside its orphan.

Snakemake dies of SIGHUP (a closed terminal, ``kill -HUP``) without a word, and its running
jobs go on, orphaned: the plain rerun then runs the same job again beside the old one, both
writing the same outputs. On SIGTERM it waits for every running job to finish, which can be
the whole of a long simulation. Here both end the jobs at once — each job process is sent
SIGTERM (Python's default is to exit at once, even inside a compiled kernel) — and Snakemake
stops as on Ctrl-C, recording nothing as done that is not: the default profile's
``rerun-incomplete`` then resumes cleanly.
"""

from __future__ import annotations

import contextlib
import signal
from types import FrameType

import psutil

__all__ = ["end_jobs_on_hangup", "end_jobs_then_interrupt"]


def end_jobs_then_interrupt(signum: int, frame: FrameType | None) -> None:
    """Send SIGTERM to every descendant process, then stop as Ctrl-C stops Snakemake."""
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):
                child.terminate()
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def end_jobs_on_hangup() -> None:
    """Install :func:`end_jobs_then_interrupt` for SIGHUP and SIGTERM (the main thread only;
    call it once the scheduler has set its own SIGTERM handler: Snakemake's ``onstart``)."""
    for sig in (signal.SIGHUP, signal.SIGTERM):
        with contextlib.suppress(ValueError, OSError):  # not the main thread: leave them
            signal.signal(sig, end_jobs_then_interrupt)
