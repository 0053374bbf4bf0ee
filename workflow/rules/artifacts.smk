# Per artifact, one job: collect the point tables into its table, check the claims and, if it
# has a figure, plot it (workflow/scripts/collect_check_plot.py). One job rather than three
# because each step is about a second of work and a job's start (Python, the package) costs
# more; each step keeps its own log file. Two rules, the artifacts with a figure and those
# without, told apart by their ids. Tables, figures and claim checks are marked for
# `snakemake --report report/snakemake.html` (Snakemake's own report, one category per paper,
# beside ours in report/index.html); captions in workflow/report/.
import re

from lbrepro.artifacts.registry import all_artifacts

# The two rules' artifact wildcards: the ids of the artifacts without a figure, and every
# other name an artifact could have — the artifacts with a figure, and unknown names, so that
# a target naming an unknown artifact reaches an input function (`known`: one line naming
# it, exit 2) instead of Snakemake's "No rule to produce" (the next character of every
# output's path after the id is a dot: ids hold none).
WITHOUT_FIGURE = "|".join(re.escape(a.id) for a in all_artifacts() if not a.has_figure)
WITH_FIGURE = rf"(?!(?:{WITHOUT_FIGURE})\.)[a-z0-9]+(?:-[a-z0-9]+)*"


rule collect_plot_check:
    input:
        jobs=job_files,
        extension=extension_files,
    output:
        table=report(
            TABLE,
            caption="../report/table.rst",
            category=paper_title,
            subcategory="{artifact}",
            labels=report_labels("table"),
        ),
        checks=report(
            CHECKS,
            caption="../report/checks.rst",
            category=paper_title,
            subcategory="{artifact}",
            labels=report_labels("claim checks"),
        ),
        png=report(
            FIGURE_PNG,
            caption="../report/figure.rst",
            category=paper_title,
            subcategory="{artifact}",
            labels=report_labels("figure"),
        ),
        svg=FIGURE_SVG,
        pdf=FIGURE_PDF,
    log:
        table="logs/{slug}/{artifact}/collect_table.log",
        checks="logs/{slug}/{artifact}/check_claims.log",
        figure="logs/{slug}/{artifact}/plot_figure.log",
    benchmark:
        "benchmarks/{slug}/{artifact}/collect_plot_check.tsv"
    wildcard_constraints:
        artifact=WITH_FIGURE,
    localrule: True
    conda:
        "../../environment.yml"
    params:
        config=params_of_artifact,
    script:
        "../scripts/collect_check_plot.py"


rule collect_check:
    input:
        jobs=job_files,
        extension=extension_files,
    output:
        table=report(
            TABLE,
            caption="../report/table.rst",
            category=paper_title,
            subcategory="{artifact}",
            labels=report_labels("table"),
        ),
        checks=report(
            CHECKS,
            caption="../report/checks.rst",
            category=paper_title,
            subcategory="{artifact}",
            labels=report_labels("claim checks"),
        ),
    log:
        table="logs/{slug}/{artifact}/collect_table.log",
        checks="logs/{slug}/{artifact}/check_claims.log",
    benchmark:
        "benchmarks/{slug}/{artifact}/collect_check.tsv"
    wildcard_constraints:
        artifact=WITHOUT_FIGURE,
    localrule: True
    conda:
        "../../environment.yml"
    params:
        config=params_of_artifact,
    script:
        "../scripts/collect_check_plot.py"
