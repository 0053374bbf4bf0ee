"""Snakemake edge of rule collect_table: see lbrepro.pipeline.collect_table."""

from lbrepro.pipeline import collect_table, logging_to

with logging_to(snakemake.log[0]):
    collect_table(list(snakemake.input), snakemake.output[0])
