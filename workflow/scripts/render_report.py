"""Snakemake edge of rule report: see lbrepro.report.render.render_report."""

from pathlib import Path

from lbrepro.core.manifest import write_digest
from lbrepro.pipeline import logging_to, report_made_by, verify_results
from lbrepro.report.render import render_report

with logging_to(snakemake.log[0]):
    # Every table, checks file and figure must be what this config made (its digest record's
    # made_by): a report naming one config over results of another is refused, not written.
    problems = verify_results(snakemake.config)
    if problems:
        raise ValueError(
            "not this config's results (rerun the workflow to make them again): "
            + "; ".join(problems)
        )
    render_report(
        snakemake.config,
        root=Path("."),
        out=Path(snakemake.output[0]),
        config_file=Path(snakemake.output.config),
        templates=Path(snakemake.input.templates[0]).parent,
        # the checkout the workflow runs from (report/templates/ lies in it)
        source=Path(snakemake.input.templates[0]).resolve().parents[2],
    )
    # The report and its config.yaml are the config's too: an edit of either (or a report
    # of another config, or of other rendering code or templates) is found when the workflow
    # starts, and they are rendered again.
    made_by = report_made_by(snakemake.config, Path(snakemake.input.templates[0]).parent)
    write_digest(snakemake.output.config, made_by=made_by)
    write_digest(snakemake.output[0], made_by=made_by)
