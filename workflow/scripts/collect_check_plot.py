"""Snakemake edge of rules collect_plot_check and collect_check: one job per artifact that
collects its table (lbrepro.pipeline.collect_table), checks its claims
(lbrepro.pipeline.check_artifact) and, if it has a figure, draws it
(lbrepro.pipeline.plot_artifact).

One process for the three steps: each is about a second of work, and a process of its own
would spend more than that starting Python and importing the package (the quick profile's
time went mostly there). Each step still logs to its own file.
"""

from lbrepro.pipeline import check_artifact, collect_table, logging_to, plot_artifact

config, artifact = snakemake.config, snakemake.wildcards.artifact
out, log = snakemake.output, snakemake.log

with logging_to(log.table):
    # config and artifact: every job table (and the extension) is verified against its plan
    # and digest record
    collect_table(
        list(snakemake.input.jobs),
        out.table,
        config,
        artifact,
        snakemake.input.extension[0] if snakemake.input.extension else None,
    )
with logging_to(log.checks):
    check_artifact(config, artifact, out.table, out.checks)
if hasattr(out, "png"):
    with logging_to(log.figure):
        plot_artifact(config, artifact, out.table, out.png, out.svg, out.pdf)
