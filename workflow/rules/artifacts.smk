# Per artifact: collect the point tables, plot the figure, check the claims.


rule collect_table:
    input:
        point_files,
    output:
        TABLE,
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
        png=FIGURE_PNG,
        svg=FIGURE_SVG,
    log:
        "logs/{slug}/{artifact}/plot_figure.log",
    benchmark:
        "benchmarks/{slug}/{artifact}/plot_figure.tsv"
    localrule: True
    conda:
        "../../environment.yml"
    script:
        "../scripts/plot_figure.py"


rule check_claims:
    input:
        table=rules.collect_table.output[0],
    output:
        CHECKS,
    log:
        "logs/{slug}/{artifact}/check_claims.log",
    benchmark:
        "benchmarks/{slug}/{artifact}/check_claims.tsv"
    localrule: True
    conda:
        "../../environment.yml"
    script:
        "../scripts/check_claims.py"
