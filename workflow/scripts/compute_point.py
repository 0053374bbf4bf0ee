"""Snakemake edge of rule compute_point: see lbrepro.pipeline.compute_point."""

import os

# A job gets `threads` cores; BLAS must not spawn more (set before numpy is imported). The
# many small dense solves of the Markov-chain artifacts run ~10× slower with OpenBLAS
# threads competing for a loaded machine.
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, str(snakemake.threads))

from lbrepro.pipeline import compute_point, logging_to  # noqa: E402

with logging_to(snakemake.log[0]):
    compute_point(
        snakemake.config,
        snakemake.wildcards.artifact,
        snakemake.wildcards.point,
        snakemake.output[0],
    )
