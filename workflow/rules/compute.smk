# One job per parameter point, or per run of cheap points (lbrepro.core.packing): the unit a
# cluster spreads out.


rule compute_points:
    output:
        JOB,
    log:
        "logs/{slug}/{artifact}/{job}.log",
    benchmark:
        "benchmarks/{slug}/{artifact}/{job}.tsv"
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        runtime=config["simulation"].get("runtime_min", 30),
        mem_mb=config["simulation"].get("mem_mb", DEFAULT_MEM_MB),
    params:
        job=params_of_job,
    script:
        "../scripts/compute_points.py"
