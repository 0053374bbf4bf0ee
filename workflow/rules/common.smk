# Shared workflow logic: config validation before any job runs, wildcard constraints, and
# input functions. Targets come from the artifact registry (lbrepro.artifacts.registry), the
# same list the CLI and the report enumerate.
import os
import sys
from pathlib import Path

from lbrepro.artifacts.registry import (
    CHECKS,
    EXTENSION,
    papers,
    FIGURE_PNG,
    FIGURE_SVG,
    FIGURE_PDF,
    JOB,
    REPORT,
    REPORT_CONFIG,
    TABLE,
    enabled,
    get as get_artifact,
)
from lbrepro.core.run_signals import end_jobs_on_hangup
from lbrepro.core.runlock import clear_stale_locks, forget_run, live_holder, record_run
from lbrepro.report.run_summary import print_at_exit, quiet_job_lines, summary_lines
from snakemake_interface_executor_plugins.settings import ExecMode
from lbrepro.config import (
    deep_merge,
    error_line,
    read_config_file,
    retype_command_line,
    with_paper_defaults,
)
from lbrepro.core.errors import ConfigError
from lbrepro.pipeline import (
    DEFAULT_MEM_MB,
    OutputError,
    artifact_params,
    plan,
    remove_stale_outputs,
    runs_jobs,
    snakemake_targets,
    target_problem,
    unmade_target,
    validate_config,
)

try:
    # Every config file read again, strictly: Snakemake's reader keeps the last of duplicate
    # keys and reads `N: 0100` as 64 (lbrepro.config.read_config_file; `lbrepro validate`).
    for _file in workflow.configfiles:
        read_config_file(_file)
    # `--config "simulation={batches: 5}"`: Snakemake reads a nested value's scalars as text
    # ('5'); read them as a config file would (lbrepro.config.retype_command_line).
    config.update(deep_merge(config, retype_command_line(workflow.config_settings.config)))
    # Papers installed as plugins run with the defaults they ship (lbrepro.config).
    config.update(with_paper_defaults(config))
    validate_config(config)  # base schema (lbrepro/schemas) + each paper's schema.yaml
except ConfigError as err:
    # One clear line naming the key, before any job runs (no traceback); exit code 2.
    print(error_line(err), file=sys.stderr)
    sys.exit(2)
# Where this run's files are (--directory); Snakemake leaves it before the run's last words.
WORKDIR = Path.cwd()
# The report's Jinja2 templates (report/templates/ of the checkout), found relative to this
# file, so also when the workflow is a module of another one (workflow.basedir is then that one's).
TEMPLATE_DIR = os.path.normpath(
    os.path.join(str(workflow.current_basedir), "..", "..", "report", "templates")
)
TEMPLATE_FILES = sorted(
    os.path.join(TEMPLATE_DIR, name) for name in os.listdir(TEMPLATE_DIR) if name.endswith(".j2")
)
# Every artifact's points and jobs, computed once (planning stays linear in the points); the
# templates are part of the report's code (lbrepro.pipeline.report_made_by).
PLAN = plan(config, templates=TEMPLATE_DIR)

# Resume after any interruption: locks left by a killed run (SIGKILL) are removed when the
# process that held them is gone; incomplete outputs rerun (profiles/default).
# (Snakemake reads this file before it knows whether it will run jobs: workflow.dryrun is
# still False here, so its resolved settings — flags and profiles — say; lbrepro.pipeline.runs_jobs.)
RUNS_JOBS = workflow.exec_mode == ExecMode.DEFAULT and runs_jobs(sys.argv)
# The terminal shows progress, warnings, errors and, at the end, the run's answer; each job's
# bookkeeping goes to the log file only (--verbose shows it again).
if RUNS_JOBS and not workflow.output_settings.verbose:
    quiet_job_lines()
if RUNS_JOBS:
    _stale = clear_stale_locks()
    if _stale is not None:
        print(f"lbrepro: removed the locks of an interrupted run (pid {_stale})", file=sys.stderr)
    # Another run of this directory, proven alive: one line, not Snakemake's LockException
    # (--nolock: the user asked for two runs at once).
    _holder = live_holder() if "--nolock" not in sys.argv else None
    if _holder is not None:
        print(
            f"lbrepro: another run (pid {_holder}) is working in {WORKDIR}: wait for it to "
            f"end, or stop it (kill {_holder}); a dry run (-n) may look meanwhile",
            file=sys.stderr,
        )
        sys.exit(2)


# Every existing output is verified against its digest record before Snakemake plans: one
# that is damaged (truncated, emptied, edited with its mtime kept), unrecorded, or made by
# another seed, other parameters or other code is removed, with one line on stderr, so this
# run makes it again whatever the rerun triggers (lbrepro.pipeline.stale_outputs). A dry run
# only names them; nothing is removed while another live run holds the locks.
if workflow.exec_mode == ExecMode.DEFAULT:
    _live = any(Path(".snakemake", "locks").glob("*.lock"))
    try:
        remove_stale_outputs(
            PLAN, dry_run=not RUNS_JOBS or _live, targeted=bool(snakemake_targets(sys.argv))
        )
    except OutputError as err:
        # A folder with files in it where an output belongs: one line, exit code 2.
        print(f"lbrepro: {err}", file=sys.stderr)
        sys.exit(2)


onstart:
    record_run()
    # A hangup or SIGTERM ends the jobs too, instead of orphaning them (lbrepro.core.run_signals).
    end_jobs_on_hangup()


onsuccess:
    forget_run()
    # The run's answer, printed last (after Snakemake's own closing lines).
    print_at_exit(lambda: summary_lines(enabled(config), papers(), WORKDIR, WORKDIR / REPORT))


onerror:
    forget_run()


wildcard_constraints:
    slug="[a-z]+",
    artifact="[a-z0-9]+(-[a-z0-9]+)*",
    job="[A-Za-z0-9.=_-]+",


def known(wildcards):
    """The target's artifact id, if the config can make it; else one line naming the target
    and why (an unknown artifact, or one the config leaves out) and exit code 2, as a bad
    config. Every input and params function asks first, while the DAG is built (before any
    lock is taken); os._exit because Snakemake turns any exception of an input function,
    SystemExit included, into a traceback."""
    problem = target_problem(config, wildcards.slug, wildcards.artifact)
    if problem is None and "job" in wildcards.keys():
        if wildcards.job not in PLAN.jobs(wildcards.artifact):
            problem = f"{wildcards.artifact} plans no job {wildcards.job!r}"
    if problem is not None:
        print(f"lbrepro: no such target: {problem}", file=sys.stderr, flush=True)
        os._exit(2)
    return wildcards.artifact


def job_files(wildcards):
    """The job tables an artifact's table is collected from."""
    known(wildcards)
    return [
        JOB.format(slug=wildcards.slug, artifact=wildcards.artifact, job=j)
        for j in PLAN.jobs(wildcards.artifact)
    ]


def extension_files(wildcards):
    """The extension of an artifact whose points can run longer (none for the others)."""
    if not PLAN.extendable(known(wildcards)):
        return []
    return [EXTENSION.format(slug=wildcards.slug, artifact=wildcards.artifact)]


def params_of_extension(wildcards):
    """What the extension's numbers depend on: the seed, simulation keys, every point and the
    artifact's section its check reads (lbrepro.pipeline.Plan.extension_params)."""
    return PLAN.extension_params(known(wildcards))


def params_of_job(wildcards):
    """What a job's numbers depend on (seed, simulation keys, its points): a change reruns
    exactly that job (lbrepro.pipeline.compute_params)."""
    return PLAN.compute_params(known(wildcards), wildcards.job)


def params_of_artifact(wildcards):
    """The artifact's merged config section: a change reruns its figure and claim checks."""
    return artifact_params(config, known(wildcards))


def params_of_report(wildcards):
    """The whole config: the report shows it (parameters, provenance), so a change rerenders."""
    return dict(config)


def paper_title(wildcards):
    """The report category of an artifact's outputs: its paper's title."""
    known(wildcards)
    return papers()[wildcards.slug].title


def report_labels(what):
    """The labels of an output in Snakemake's report: which artifact, what it shows, which file."""

    def labels(wildcards):
        """The artifact's id and title, and which of its files this is."""
        artifact = get_artifact(known(wildcards))
        return {"artifact": artifact.id, "title": artifact.title, "file": what}

    return labels


def report_inputs(wildcards):
    """Every enabled artifact's table, checks and (if it has one) figure."""
    files = []
    for artifact in enabled(config):
        files.extend(artifact.paths().values())
    return files
