"""Snakemake edge of rule compute_point: see lbrepro.pipeline.compute_point."""

from lbrepro.pipeline import compute_point, logging_to

with logging_to(snakemake.log[0]):
    compute_point(
        snakemake.config,
        snakemake.wildcards.artifact,
        snakemake.wildcards.point,
        snakemake.output[0],
    )
