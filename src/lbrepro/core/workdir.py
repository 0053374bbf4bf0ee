"""Whether a run can write in its working directory, asked before Snakemake finds out.

Snakemake keeps its state (locks, metadata, logs) in ``.snakemake/`` of the working directory
and creates it while it builds the DAG, dry runs included; in a read-only checkout (a
read-only mount, a container image, a checkout owned by someone else) that ends in a
traceback from deep inside Snakemake. The workflow asks first and says it in one line.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

__all__ = ["unwritable"]


def unwritable(directory: str | Path = ".") -> str | None:
    """Why a run cannot keep its state in ``directory``/.snakemake (one line), or None.

    Tried, not inferred from permission bits: root passes every mode check, and an ACL, a
    quota or a full disk can refuse what the bits allow.
    """
    where = Path(directory).resolve()
    state = where / ".snakemake"
    try:
        state.mkdir(exist_ok=True)
        with tempfile.TemporaryFile(dir=state):
            pass
    except OSError as err:
        reason = err.strerror or type(err).__name__
        return (
            f"cannot write in the working directory {str(where)!r} ({reason}): run in a "
            "writable copy of the checkout, or give --directory a writable directory"
        )
    return None
