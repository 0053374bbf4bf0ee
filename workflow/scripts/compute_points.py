"""Snakemake edge of rule compute_points: see lbrepro.pipeline.compute_points."""

import os

# A job gets `threads` cores; BLAS must not spawn more (set before numpy is imported). The
# many small dense solves of the Markov-chain artifacts run ~10× slower with OpenBLAS
# threads competing for a loaded machine.
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, str(snakemake.threads))

from lbrepro.pipeline import compute_points, logging_to  # noqa: E402

with logging_to(snakemake.log[0]):
    compute_points(
        snakemake.config,
        snakemake.wildcards.artifact,
        list(snakemake.params.job["points"]),
        snakemake.output[0],
    )
