"""Snakemake edge of rule collect_table: see lbrepro.pipeline.collect_table."""

from lbrepro.pipeline import collect_table, logging_to

with logging_to(snakemake.log[0]):
    # config and artifact: every job table (and the extension) is verified against its plan
    # and digest record
    collect_table(
        list(snakemake.input.jobs),
        snakemake.output[0],
        snakemake.config,
        snakemake.wildcards.artifact,
        snakemake.input.extension[0] if snakemake.input.extension else None,
    )
