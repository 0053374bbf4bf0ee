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


# The points of claims the job tables leave undecided, run longer where that decides them
# (lbrepro.extension): one job per artifact that has such points, after its compute jobs.
rule extend_points:
    input:
        job_files,
    output:
        EXTENSION,
    log:
        "logs/{slug}/{artifact}/extend_points.log",
    benchmark:
        "benchmarks/{slug}/{artifact}/extend_points.tsv"
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        runtime=config["simulation"].get("runtime_min", 30),
        mem_mb=config["simulation"].get("mem_mb", DEFAULT_MEM_MB),
    params:
        extension=params_of_extension,
    script:
        "../scripts/extend_points.py"
