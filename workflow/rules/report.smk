# The HTML report, rendered from the registry with Jinja2 templates in report/templates/.


rule report:
    input:
        report_inputs,
        templates=TEMPLATE_FILES,
    output:
        REPORT,
        config=REPORT_CONFIG,
    log:
        "logs/report.log",
    benchmark:
        "benchmarks/report.tsv"
    localrule: True
    conda:
        "../../environment.yml"
    params:
        config=params_of_report,
    script:
        "../scripts/render_report.py"
