# lbrepro — every figure, table and claim check of the five papers, and the HTML report.
#   snakemake --cores all                                  # full run → report/index.html
#   snakemake --cores all --configfile config/quick.yaml   # quick profile
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


# The front page of `snakemake --report report/snakemake.html`.
report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/compute.smk"
include: "workflow/rules/artifacts.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        REPORT,
