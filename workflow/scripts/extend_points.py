"""Snakemake edge of rule extend_points: see lbrepro.pipeline.extend_points."""

import os

# As compute_points: BLAS must not spawn more threads than the job's cores.
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, str(snakemake.threads))

from lbrepro.pipeline import extend_points, logging_to  # noqa: E402

with logging_to(snakemake.log[0]):
    extend_points(
        snakemake.config,
        snakemake.wildcards.artifact,
        list(snakemake.input),
        snakemake.output[0],
    )
