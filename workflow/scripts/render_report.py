"""Snakemake edge of rule report: see lbrepro.report.render.render_report."""

from pathlib import Path

from lbrepro.pipeline import logging_to
from lbrepro.report.render import render_report

with logging_to(snakemake.log[0]):
    render_report(
        snakemake.config,
        root=Path("."),
        out=Path(snakemake.output[0]),
        config_file=Path(snakemake.output.config),
        templates=Path(snakemake.input.templates[0]).parent,
        # the checkout the workflow runs from (report/templates/ lies in it)
        source=Path(snakemake.input.templates[0]).resolve().parents[2],
    )
