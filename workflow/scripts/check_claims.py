"""Snakemake edge of rule check_claims: see lbrepro.pipeline.check_artifact."""

from lbrepro.pipeline import check_artifact, logging_to

with logging_to(snakemake.log[0]):
    check_artifact(
        snakemake.config, snakemake.wildcards.artifact, snakemake.input.table, snakemake.output[0]
    )
