"""Snakemake edge of rule plot_figure: see lbrepro.pipeline.plot_artifact."""

from lbrepro.pipeline import logging_to, plot_artifact

with logging_to(snakemake.log[0]):
    plot_artifact(
        snakemake.config,
        snakemake.wildcards.artifact,
        snakemake.input.table,
        snakemake.output.png,
        snakemake.output.svg,
        snakemake.output.pdf,
    )
