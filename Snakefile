# lbrepro — every figure, table and claim check of the five papers, and the HTML report.
#   snakemake --cores all                                  # full run → report/index.html
# The workflow is workflow/Snakefile, where snakedeploy and the workflow catalog look for it;
# this file lets `snakemake` find it in the checkout (and profiles/default beside it). The
# `include:` directive would drop the included file's default target (rule all), hence the
# call that keeps it (the one Snakemake makes for a module).
workflow.include("workflow/Snakefile", overwrite_default_target=True)
