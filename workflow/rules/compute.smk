# One job per parameter point: the unit a cluster spreads out.


rule compute_point:
    output:
        POINT,
    log:
        "logs/{slug}/{artifact}/{point}.log",
    benchmark:
        "benchmarks/{slug}/{artifact}/{point}.tsv"
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        runtime=config["simulation"].get("runtime_min", 30),
        mem_mb=config["simulation"].get("mem_mb", 1000),
    params:
        point=params_of_point,
    script:
        "../scripts/compute_point.py"
