# Per artifact: collect the point tables, plot the figure, check the claims. Tables, figures and
# claim checks are marked for `snakemake --report report/snakemake.html` (Snakemake's own report,
# one category per paper, beside ours in report/index.html); captions in workflow/report/.


rule collect_table:
    input:
        jobs=job_files,
        extension=extension_files,
    output:
        report(
            TABLE,
            caption="../report/table.rst",
            category=paper_title,
            subcategory="{artifact}",
            labels=report_labels("table"),
        ),
    log:
        "logs/{slug}/{artifact}/collect_table.log",
    benchmark:
        "benchmarks/{slug}/{artifact}/collect_table.tsv"
    localrule: True
    conda:
        "../../environment.yml"
    script:
        "../scripts/collect_table.py"


rule plot_figure:
    input:
        table=rules.collect_table.output[0],
    output:
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
        "logs/{slug}/{artifact}/plot_figure.log",
    benchmark:
        "benchmarks/{slug}/{artifact}/plot_figure.tsv"
    localrule: True
    conda:
        "../../environment.yml"
    params:
        config=params_of_artifact,
    script:
        "../scripts/plot_figure.py"


rule check_claims:
    input:
        table=rules.collect_table.output[0],
    output:
        report(
            CHECKS,
            caption="../report/checks.rst",
            category=paper_title,
            subcategory="{artifact}",
            labels=report_labels("claim checks"),
        ),
    log:
        "logs/{slug}/{artifact}/check_claims.log",
    benchmark:
        "benchmarks/{slug}/{artifact}/check_claims.tsv"
    localrule: True
    conda:
        "../../environment.yml"
    params:
        config=params_of_artifact,
    script:
        "../scripts/check_claims.py"
