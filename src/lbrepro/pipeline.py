"""The pipeline's steps as plain functions: what each Snakemake rule runs.

Workflow scripts only unpack the ``snakemake`` object and call one of these, so every step is
importable and testable without Snakemake: config → point computations → tidy tables →
figures + claim checks → report.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import os
import sys
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from lbrepro.artifacts import registry
from lbrepro.config import assemble_schema, validate_schema
from lbrepro.core import footprint
from lbrepro.core.claims import check_runs, write_checks
from lbrepro.core.errors import ConfigError, LbreproError
from lbrepro.core.ids import check_point_ids
from lbrepro.core.io import read_table, write_table
from lbrepro.core.manifest import code_digest, params_digest, verify, write_digest
from lbrepro.core.packing import pack_points
from lbrepro.core.rng import stream
from lbrepro.core.rows import SIMULATED, check_table
from lbrepro.extension import (
    doublings_of,
    extended_params,
    lengthen,
    merge_extension,
    plan_extension,
)
from lbrepro.sim.runlength import DEFAULT_EXTEND, event_budget, recording_runs

log = logging.getLogger("lbrepro")


def config_schema() -> dict[str, Any]:
    """The whole config schema: the base schema plus every paper package's sections."""
    sections, defs = registry.config_schema_sections()
    return assemble_schema(sections, defs)


def validate_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """Check ``config`` against the whole schema, then each artifact's semantic checks.

    Raises
    ------
    ConfigError
        For the first problem found, its message starting with the dotted key.
    """
    validate_schema(config, config_schema())
    for artifact in registry.all_artifacts():
        if artifact.id in config:
            # The same merged section every hook gets (points, compute, check, plot); a
            # validator names the key inside its section, prefixed with the artifact id here.
            try:
                artifact.validate(artifact_config(config, artifact.id))
            except ConfigError as err:
                raise err.under(artifact.id) from None
            _packed(config, artifact.id)  # unique, file-name-safe point ids, packed into jobs
    return config


#: The ``simulation`` keys a compute job reads besides its points (the event budget and the
#: doublings of a run: both can change its numbers). They are part of every compute job's
#: params (:func:`compute_params`), so a change reruns the jobs; ``compute_points`` reads
#: exactly these, from here.
COMPUTE_SIMULATION_KEYS = ("max_events", "extend")
#: ``simulation`` keys that change how the work is scheduled, never a number or a verdict:
#: the packing budget (it changes the job ids, not what a point computes) and the resources
#: a job asks for. Every other key of the config reaches the params of the jobs it affects.
SCHEDULING_KEYS = frozenset({"job_seconds", "runtime_min", "mem_mb"})


class Plan:
    """The jobs of a whole config, computed once: points and packing of every artifact.

    Snakemake asks for a job's inputs and params once per job; computing the artifact's points
    again for each of them made planning quadratic in the number of points. A plan computes
    them once per artifact (on first use), so planning is linear.
    """

    def __init__(self, config: Mapping[str, Any], templates: str | Path | None = None) -> None:
        self.config = config
        #: The report's templates folder, part of the report's code (:func:`report_made_by`).
        self.templates = templates
        self._packed: dict[str, tuple[dict[str, dict[str, Any]], dict[str, list[str]]]] = {}
        self._made_by: dict[str, dict[str, Any]] = {}

    def packed(self, artifact_id: str) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
        """The artifact's points and jobs (cached)."""
        if artifact_id not in self._packed:
            self._packed[artifact_id] = _packed(self.config, artifact_id)
        return self._packed[artifact_id]

    def jobs(self, artifact_id: str) -> dict[str, list[str]]:
        """Job id → point ids, as :func:`jobs`."""
        return self.packed(artifact_id)[1]

    def job_params(self, artifact_id: str, job_id: str) -> dict[str, Any]:
        """A job's points (point id → parameters), as :func:`job_params`."""
        table, packed = self.packed(artifact_id)
        if job_id not in packed:
            raise KeyError(f"{artifact_id}: unknown job {job_id!r}")
        return {p: table[p] for p in packed[job_id]}

    def compute_params(self, artifact_id: str, job_id: str) -> dict[str, Any]:
        """The params of rule compute_points for one job, as :func:`compute_params`."""
        return {
            "seed": self.config["seed"],
            "simulation": compute_simulation(self.config),
            "points": self.job_params(artifact_id, job_id),
        }

    def extendable(self, artifact_id: str) -> bool:
        """Whether the artifact has points a workflow extension can run longer (rule
        extend_points runs only for such an artifact)."""
        return bool(registry.get(artifact_id).extendable(self.packed(artifact_id)[0]))

    def extension_params(self, artifact_id: str) -> dict[str, Any]:
        """The params of rule extend_points: what its points' numbers depend on (seed,
        simulation keys, every point) and what its check reads (the artifact's section)."""
        return {
            "seed": self.config["seed"],
            "simulation": compute_simulation(self.config),
            "points": self.packed(artifact_id)[0],
            "config": artifact_params(self.config, artifact_id),
        }

    def made_by(self, artifact_id: str) -> dict[str, Any]:
        """What makes the artifact's extension, table, claim checks and figure: the seed, the
        artifact's code version and the digest of both with every parameter they depend on
        (:meth:`extension_params`: the simulation keys, every point, the artifact's section).
        Recorded in each of those files' digest record and verified by every consumer."""
        if artifact_id not in self._made_by:
            self._made_by[artifact_id] = _made_by(
                self.config, artifact_id, self.extension_params(artifact_id)
            )
        return self._made_by[artifact_id]

    def job_made_by(self, artifact_id: str, point_ids: Sequence[str]) -> dict[str, Any]:
        """What makes the job table of ``point_ids``: the seed, the artifact's code version
        and the digest of both with the job's params (:meth:`compute_params`)."""
        table = self.packed(artifact_id)[0]
        params = {
            "seed": self.config["seed"],
            "simulation": compute_simulation(self.config),
            "points": {p: table[p] for p in point_ids},
        }
        return _made_by(self.config, artifact_id, params)


def code_version(artifact_id: str) -> str:
    """The code that computes, checks and draws an artifact: lbrepro's version and the SHA-256
    (12 hex digits) of its paper package's files (lbrepro.artifacts.<paper>) and of every
    lbrepro module they import, transitively (:func:`lbrepro.core.manifest.code_digest`). An
    edit of any of them — the model's equations, a kernel, the statistics, the figure style —
    makes the artifact's results stale (was: the paper package only; a changed kernel or model
    left every result in place, "Nothing to be done")."""
    import lbrepro

    module = registry.get(artifact_id).compute.__module__
    return f"{lbrepro.__version__}+{code_digest('.'.join(module.split('.')[:3]))}"


def _made_by(config: Mapping[str, Any], artifact_id: str, params: Any) -> dict[str, Any]:
    """A ``made_by`` record (lbrepro.core.manifest): seed, code version, digest of all."""
    code = code_version(artifact_id)
    return {
        "seed": config["seed"],
        "code": code,
        "digest": params_digest({"artifact": artifact_id, "code": code, "params": params}),
    }


def report_made_by(
    config: Mapping[str, Any], templates: str | Path | None = None
) -> dict[str, Any]:
    """What makes the report and report/config.yaml: the whole config and the report's code —
    lbrepro's version, the SHA-256 of lbrepro.report (the code that renders it and the records
    it shows) and of the Jinja2 templates in ``templates`` (report/templates/). Snakemake sees
    neither: the Python is imported, not an input, and a template is an input found by its
    mtime only; with the version alone, a report rendered by older code was kept. (The tables,
    checks and figures it shows carry their own records, verified at render.)"""
    import lbrepro

    code = f"{lbrepro.__version__}+{code_digest('lbrepro.report')}"
    if templates is not None:
        code += f"+{templates_digest(templates)}"
    return {
        "seed": config.get("seed"),
        "code": code,
        "digest": params_digest({"report": dict(config), "code": code}),
    }


def templates_digest(templates: str | Path) -> str:
    """SHA-256 (12 hex digits) of the report's templates (``*.j2`` in ``templates``), names
    included; "none" if the folder cannot be read (the report step then says why)."""
    h = hashlib.sha256()
    try:
        for path in sorted(Path(templates).glob("*.j2")):
            h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    except OSError:
        return "none"
    return h.hexdigest()[:12]


def plan(config: Mapping[str, Any], templates: str | Path | None = None) -> Plan:
    """A :class:`Plan` of ``config`` (the workflow makes one, after validating the config);
    ``templates``: the report's templates folder (:func:`report_made_by`)."""
    return Plan(config, templates)


def compute_simulation(config: Mapping[str, Any]) -> dict[str, Any]:
    """The ``simulation`` keys a compute job reads besides its points (None: the default)."""
    sim = config.get("simulation", {})
    return {key: sim.get(key) for key in COMPUTE_SIMULATION_KEYS}


def compute_params(config: Mapping[str, Any], artifact_id: str, job_id: str) -> dict[str, Any]:
    """Everything a compute job's numbers depend on: the seed, the ``simulation`` keys it
    reads (:data:`COMPUTE_SIMULATION_KEYS`) and its points' parameters. The params of rule
    compute_points: a change of any of them reruns exactly that job."""
    return Plan(config).compute_params(artifact_id, job_id)


def artifact_params(config: Mapping[str, Any], artifact_id: str) -> dict[str, Any]:
    """Everything a figure or a claim check of the artifact reads from the config: its merged
    config section (:func:`artifact_config`) without the scheduling keys. The params of rules
    plot_figure and check_claims: a change reruns them (a tolerance changes a verdict)."""
    return {
        key: value
        for key, value in artifact_config(config, artifact_id).items()
        if key not in SCHEDULING_KEYS or key in config[artifact_id]
    }


def artifact_config(config: Mapping[str, Any], artifact_id: str) -> dict[str, Any]:
    """The artifact's config section over the shared ``simulation`` defaults."""
    return {**config.get("simulation", {}), **config[artifact_id]}


def points(config: Mapping[str, Any], artifact_id: str) -> dict[str, dict[str, Any]]:
    """The artifact's parameter points, keyed by a file-name-safe point id.

    Raises
    ------
    ConfigError
        If two parameter sets share an id or an id is not file-name safe; the key is
        prefixed with the artifact id (``supermarket-tail.rho, d: ...``).
    """
    try:
        table = registry.get(artifact_id).points(artifact_config(config, artifact_id))
        check_point_ids(table, "points")
    except ConfigError as err:
        raise err.under(artifact_id) from None
    return table


def jobs(config: Mapping[str, Any], artifact_id: str) -> dict[str, list[str]]:
    """The artifact's jobs, job id → the point ids it computes (see lbrepro.core.packing).

    Points the artifact estimates cheaper than ``simulation.job_seconds`` share a job, up to
    that many estimated seconds; the others, and every point of an artifact that declares no
    cost estimate, are a job each (so is every point when ``job_seconds`` is 0).
    """
    return _packed(config, artifact_id)[1]


def job_params(config: Mapping[str, Any], artifact_id: str, job_id: str) -> dict[str, Any]:
    """The parameters of a job's points (point id → parameters); KeyError names an unknown job."""
    table, packed = _packed(config, artifact_id)
    if job_id not in packed:
        raise KeyError(f"{artifact_id}: unknown job {job_id!r}")
    return {p: table[p] for p in packed[job_id]}


def _packed(
    config: Mapping[str, Any], artifact_id: str
) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """The artifact's points and the jobs they are packed into, from one call of ``points``."""
    table = points(config, artifact_id)
    artifact = registry.get(artifact_id)
    cost, memory = artifact.cost, artifact.memory
    sim = config.get("simulation", {})
    budget = float(sim.get("job_seconds", 0))
    if memory is not None:
        check_memory_estimates(artifact_id, table, memory, sim.get("mem_mb"))
    costs = {p: (None if cost is None else cost(params)) for p, params in table.items()}
    check_event_estimates(artifact_id, costs, sim.get("max_events"))
    try:
        packed = pack_points(costs, budget)
    except ValueError as err:
        raise ConfigError(f"{artifact_id}.points", str(err)) from None
    return table, packed


#: The slowest kernel's typical rate (sim.slotted_lps, sim.affinity: 4·10⁶ events/s; the
#: others are faster — tests/test_hostile_inputs.py checks): a point estimated at ``cost``
#: seconds takes at least (cost − start-up) × this many events.
SLOWEST_EVENTS_PER_SECOND = 4.0e6


def check_event_estimates(
    artifact_id: str, costs: Mapping[str, float | None], max_events: float | None
) -> None:
    """Refuse, at validation, a point that will certainly exceed the event budget.

    Every artifact's ``cost`` estimates a point's seconds from its events at its kernel's
    rate; at the slowest kernel's rate those seconds are a lower bound of its events. A point
    whose lower bound exceeds ``simulation.max_events`` would be refused by its job anyway,
    after planning and scheduling: it is refused here, with the config key and the point.
    """
    from lbrepro.core.packing import POINT_START_SECONDS
    from lbrepro.sim.runlength import DEFAULT_MAX_EVENTS

    limit = DEFAULT_MAX_EVENTS if max_events is None else float(max_events)
    for point, seconds in costs.items():
        if seconds is None or seconds == math.inf:
            continue  # the artifact cannot say: a job of its own (lbrepro.core.packing)
        if not seconds >= 0:
            raise ConfigError(
                f"{artifact_id}.points",
                f"point {point}: its cost estimate is {seconds!r} seconds (parameters out of "
                "range)",
            )
        events = (seconds - POINT_START_SECONDS) * SLOWEST_EVENTS_PER_SECOND
        if events > limit:
            raise ConfigError(
                f"{artifact_id}.points",
                f"point {point} is estimated at {seconds:.3g} s, at least {events:.3g} events, "
                f"more than simulation.max_events = {limit:.3g}: shorten its horizon (or N), or "
                "raise simulation.max_events",
            )


#: The memory a compute job gets when ``simulation.mem_mb`` is not set (MB, as Snakemake's
#: ``mem_mb`` resource; workflow/rules/compute.smk asks for the same).
DEFAULT_MEM_MB = 1000


def check_memory_estimates(
    artifact_id: str,
    table: Mapping[str, Mapping[str, Any]],
    memory: Any,
    mem_mb: float | None,
) -> None:
    """Refuse, at validation, a point whose arrays will certainly not fit in its job's memory.

    ``memory(params)`` estimates the bytes a point allocates by the config key that drives
    them (lbrepro.core.footprint); the limit is the memory its job asks the scheduler for,
    ``simulation.mem_mb`` (default :data:`DEFAULT_MEM_MB`). The error names the artifact's
    key that contributes most: ``KEY: point P needs about X GiB, beyond Y GiB ...; lower ...``.
    """
    limit_mb = DEFAULT_MEM_MB if mem_mb is None else float(mem_mb)
    limit = limit_mb * 1e6
    for point, params in table.items():
        nbytes, key = footprint.total(memory(params))
        if not nbytes >= 0:
            raise ConfigError(
                f"{artifact_id}.{key or 'points'}",
                f"point {point}: its memory estimate is {nbytes!r} bytes (parameters out of range)",
            )
        if nbytes > limit:
            raise ConfigError(
                f"{artifact_id}.{key}",
                f"point {point} needs about {nbytes / 2**30:.3g} GiB, beyond the "
                f"{limit / 2**30:.3g} GiB of simulation.mem_mb = {limit_mb:g}; lower {key} (or "
                "raise simulation.mem_mb)",
            )


def compute_points(
    config: Mapping[str, Any], artifact_id: str, point_ids: Sequence[str], out: str | Path
) -> None:
    """Compute the points ``point_ids`` in turn, each with its own random stream, and write
    their tidy rows, in that order, to one table.

    A point's stream depends only on (seed, artifact id, point id), so it gives the same
    numbers whichever machine, order, job or cluster node computes it.
    """
    the_plan = plan(config)
    table = the_plan.packed(artifact_id)[0]
    rows: list[dict[str, Any]] = []
    for point_id in point_ids:
        if point_id not in table:
            raise KeyError(f"{artifact_id}: unknown point {point_id!r}")
        rows.extend(_compute_point(config, artifact_id, point_id, table[point_id]))
    write_table(rows, out)
    # The row vocabulary (core.rows), on the table as written: what collect_table will read
    # (NumPy scalars made plain, infinities as the text "inf"). A failed job's table is removed.
    check_table(read_table(out), artifact_id, f"{artifact_id}.compute")
    write_digest(
        out,
        rows=len(rows),
        points=list(point_ids),
        made_by=the_plan.job_made_by(artifact_id, point_ids),
    )
    log.info("%s: %d points, %d rows written to %s", artifact_id, len(point_ids), len(rows), out)


def _compute_point(
    config: Mapping[str, Any],
    artifact_id: str,
    point_id: str,
    params: Mapping[str, Any],
    extend: int | None = None,
) -> list[dict[str, Any]]:
    """One point's rows, from its own random stream, under the event budget and at most
    ``extend`` doublings of a run (None: ``simulation.extend``). Where its runs doubled, its
    simulated rows say how often (``doublings``): what a workflow extension starts from."""
    artifact = registry.get(artifact_id)
    sim = compute_simulation(config)
    log.info("%s/%s: %s", artifact_id, point_id, params)
    limit = sim.get("extend") if extend is None else extend
    with recording_runs() as runs, event_budget(sim.get("max_events"), limit):
        computed = artifact.compute(
            dict(params), stream(int(config["seed"]), artifact_id, point_id)
        )
    doubled = max((run.doublings for run in runs), default=0)
    rows = []
    for r in computed:
        row = {"artifact": artifact_id, "point": point_id} | r
        if doubled and row.get("method") in SIMULATED:
            row["doublings"] = doubled
        rows.append(row)
    return rows


def extend_points(
    config: Mapping[str, Any], artifact_id: str, inputs: Sequence[str | Path], out: str | Path
) -> None:
    """Run longer the points of the claims the job tables leave undecided, where that would
    decide them within ``simulation.extend`` doublings and the event budget, and write their
    rows (none: nothing to extend) — :mod:`lbrepro.extension`.

    The job tables are verified first, as :func:`collect_table` does. The check runs on the
    table as it stands only to find what to extend (its outcome is not written:
    ``check_claims`` judges the final table); after each round of longer runs it looks again,
    until no undecided claim is within reach — sequential doubling, a look per round.
    """
    artifact = registry.get(artifact_id)
    the_plan = plan(config)
    first = _verified_rows(config, artifact_id, inputs, the_plan)
    table = the_plan.packed(artifact_id)[0]  # the points, computed once for both
    key = str(artifact.run_length)
    extendable = artifact.extendable(table)
    extend = compute_simulation(config).get("extend")
    extend = DEFAULT_EXTEND if extend is None else int(extend)
    cfg = artifact_config(config, artifact_id)
    longer: dict[str, list[dict[str, Any]]] = {}
    looks = 0
    while True:
        current = merge_extension(first, [r for p in sorted(longer) for r in longer[p]])
        todo = plan_extension(
            artifact.check(current, cfg), extendable, doublings_of(current), extend
        )
        if not todo:
            break
        looks += 1
        for point_id, k in todo.items():
            params = extended_params(table[point_id], key, k)
            log.info(
                "%s/%s: run 2^%d times longer (%s = %s)", artifact_id, point_id, k, key, params[key]
            )
            try:
                computed = _compute_point(config, artifact_id, point_id, params, extend - k)
            except ConfigError as err:
                if err.key != "max_events":
                    raise
                log.warning("%s/%s: not extended: %s", artifact_id, point_id, err)
                extendable.discard(point_id)
                continue
            longer[point_id] = lengthen(computed, k, looks)
    rows = [r for p in sorted(longer) for r in longer[p]]
    write_table(rows, out)
    check_table(read_table(out), artifact_id, f"{artifact_id}.extend")
    write_digest(out, rows=len(rows), points=sorted(longer), made_by=the_plan.made_by(artifact_id))
    log.info(
        "%s: %d points run longer in %d rounds, %d rows written to %s",
        artifact_id,
        len(longer),
        looks,
        len(rows),
        out,
    )


def job_table_problem(plan: Plan, artifact_id: str, path: str | Path) -> str | None:
    """Why the job table at ``path`` is not the complete table of its planned points (None:
    it is): no digest record, other points than the plan, truncated, empty or edited."""
    job = Path(path).name.removesuffix(".csv")
    planned = plan.jobs(artifact_id).get(job)
    if planned is None:
        return f"no job {job!r} in the plan"
    return verify(path, points=planned, made_by=plan.job_made_by(artifact_id, planned))


def damaged_job_tables(the_plan: Plan) -> Iterator[tuple[str, str]]:
    """Existing job tables of the plan that are not what their job would write now: (path,
    why) — see :func:`stale_outputs`, which covers every output."""
    for path, why, _ in stale_outputs(the_plan, report=False):
        if "/jobs/" in path:
            yield path, why


def expected_outputs(
    the_plan: Plan, report: bool = True
) -> Iterator[tuple[str, dict[str, Any], list[str] | None, tuple[str, ...]]]:
    """Every output of the plan's enabled artifacts: (path, the ``made_by`` that must have
    made it, the points it must hold (job tables), the outputs made from it). Job tables,
    extensions, tables, claim checks, figures; with ``report``, the report and its config."""
    shown = (registry.REPORT,) if report else ()
    for artifact in registry.enabled(the_plan.config):
        fmt = {"slug": artifact.slug, "artifact": artifact.id}
        finals = tuple(artifact.paths().values())
        for job, planned in the_plan.jobs(artifact.id).items():
            made_by = the_plan.job_made_by(artifact.id, planned)
            yield registry.JOB.format(job=job, **fmt), made_by, planned, finals + shown
        made_by = the_plan.made_by(artifact.id)
        if the_plan.extendable(artifact.id):
            yield registry.EXTENSION.format(**fmt), made_by, None, finals + shown
        for kind, path in artifact.paths().items():
            yield path, made_by, None, (finals if kind == "table" else ()) + shown
    if report:
        made_by = report_made_by(the_plan.config, the_plan.templates)
        yield registry.REPORT, made_by, None, (registry.REPORT_CONFIG,)
        yield registry.REPORT_CONFIG, made_by, None, (registry.REPORT,)


def stale_outputs(
    the_plan: Plan, report: bool = True
) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """Existing outputs that are not what the current config would make: (path, why, the
    outputs made from it).

    Each is verified against its digest record (lbrepro.core.manifest): damaged (truncated,
    emptied, edited — its bytes are hashed, so an edit that keeps the size and the mtime is
    found), without a record, of other points than the plan, or made by another seed,
    other parameters or other code."""
    for path, made_by, points, made_from_it in expected_outputs(the_plan, report):
        if not os.path.lexists(path):
            continue
        problem = verify(path, points=points, made_by=made_by)
        if problem is not None:
            yield path, problem, made_from_it


def remove_stale_outputs(
    the_plan: Plan, *, dry_run: bool = False, targeted: bool = False
) -> list[str]:
    """Remove the outputs :func:`stale_outputs` finds, and every output made from them, with
    one line on stderr for each stale one; return the paths removed (``dry_run``: only name
    them, remove nothing).

    Snakemake then makes them again whatever its rerun triggers: it reruns a job whose output
    is missing, but not one whose input is missing while its own output is there — hence the
    outputs made from a stale one go too (a job table's: its artifact's table, checks, figure
    and the report). Digest records go with their files. ``targeted``: the command line names
    its targets, which may not need every file removed (Snakemake reads the workflow before it
    builds the DAG, so the line cannot say which): the line says so instead of "this run"."""
    from lbrepro.core.manifest import digest_path

    removed: list[str] = []
    # Every output verified before any is removed: removing lazily, a damaged file made from
    # an earlier stale one (a truncated checks file after an emptied job table) went as its
    # consequence and was made again without its line, and a dry run named more than the run.
    stale = list(stale_outputs(the_plan))
    # A folder with files in it where a file (or its record) belongs is never removed — it
    # may hold what its owner keeps: the run stops first, one line naming it, nothing removed
    # (was: "missing; removed", then an IsADirectoryError); a dry run names it so too.
    folders = {
        where: f"{where}: a folder with files in it where the run writes a file; move it away"
        for path, _, made_from_it in stale
        for victim in (path, *made_from_it)
        for where in (victim, str(digest_path(victim)))
        if _is_folder(where) and os.listdir(where)
    }
    if folders and not dry_run:
        raise OutputError(next(iter(folders.values())))
    for line in folders.values():
        print(f"lbrepro: {line}", file=sys.stderr)
    for line in _stale_lines(stale, folders, dry_run=dry_run, targeted=targeted):
        print(f"lbrepro: {line}", file=sys.stderr)
    if dry_run:
        return removed
    for path, _, made_from_it in stale:
        for victim in (path, *made_from_it):
            if victim in removed or not os.path.lexists(victim):
                continue
            _remove(victim)
            with contextlib.suppress(FileNotFoundError):
                _remove(digest_path(victim))
            removed.append(victim)
    return removed


def _stale_lines(
    stale: Sequence[tuple[str, str, tuple[str, ...]]],
    folders: Mapping[str, str],
    *,
    dry_run: bool,
    targeted: bool,
) -> list[str]:
    """One line per stale output (``PATH: why; removed, …``), except outputs made by other
    code, another seed or other parameters: one line for all that share the reason. After an
    update of lbrepro, or with another seed, every output is stale for one reason, and a line
    per file buried the run's start (265 lines)."""
    if dry_run:
        again, them = "a run makes it again", "a run makes them again"
    elif targeted:
        again = "removed, made again by this run if its targets need it, else by the next full run"
        them = again.replace("need it", "need them")
    else:
        again, them = "removed, this run makes it again", "removed, this run makes them again"
    shown = [(path, why) for path, why, _ in stale if not (dry_run and path in folders)]
    by_reason: dict[str, list[str]] = {}
    for path, why in shown:
        if why.startswith(("made by other code", "made with ")):
            by_reason.setdefault(why, []).append(path)
    lines = []
    for path, why in shown:
        paths = by_reason.get(why, [path])
        if len(paths) == 1:
            lines.append(f"{path}: {why}; {again}")
        elif path == paths[0]:
            places = sorted({os.path.dirname(p) for p in paths})
            where = ", ".join(places[:3]) + (
                f" and {len(places) - 3} more" if len(places) > 3 else ""
            )
            lines.append(f"{len(paths)} outputs in {where}: {why}; {them}")
    return lines


class OutputError(LbreproError):
    """An output's place holds what the workflow must not remove (a folder with files in it)."""


def _is_folder(path: str | Path) -> bool:
    """A folder (not a link to one)."""
    return os.path.isdir(path) and not os.path.islink(path)


def _remove(path: str | Path) -> None:
    """Remove a file, a link, a FIFO or an empty folder (one with files in it is refused
    before anything is removed: :func:`remove_stale_outputs`)."""
    if _is_folder(path):
        os.rmdir(path)
    else:
        os.unlink(path)


def target_problem(config: Mapping[str, Any], slug: str, artifact_id: str) -> str | None:
    """Why a target naming paper ``slug`` and artifact ``artifact_id`` cannot be made with
    ``config`` (None: it can): an unknown artifact, one of another paper, or one the config
    leaves out."""
    known = {a.id: a for a in registry.all_artifacts()}
    if artifact_id not in known:
        return f"unknown artifact {artifact_id!r} (`lbrepro list` names them)"
    if known[artifact_id].slug != slug:
        return f"artifact {artifact_id!r} is under {known[artifact_id].slug}/, not {slug}/"
    if artifact_id not in config:
        return (
            f"artifact {artifact_id!r} is not in the config (its section is left out; add "
            "it, e.g. from config/config.yaml, to make it)"
        )
    return None


def snakemake_targets(argv: Sequence[str]) -> list[str] | None:
    """The targets of the Snakemake command line ``argv`` as Snakemake's own parser reads
    them, or None when ``argv`` is not Snakemake's (the workflow run through the API, or
    from another program)."""
    program = os.path.normpath(argv[0]) if argv else ""
    if os.path.basename(program) != "snakemake" and not program.endswith(
        os.path.join("snakemake", "__main__.py")
    ):
        return None
    try:
        from snakemake.cli import get_argument_parser

        parsed, _ = get_argument_parser().parse_known_args(list(argv[1:]))
    except (Exception, SystemExit):  # Snakemake reports its own usage errors itself
        return None
    return [str(t) for t in getattr(parsed, "targets", None) or []]


def unmade_target(
    targets: Sequence[str], rule_names: Collection[str], makes: Callable[[str], bool]
) -> str | None:
    """Why the first of ``targets`` that the workflow cannot make cannot be (None: each is a
    rule's name or a file some rule makes; Snakemake wants a rule even for a file that
    exists): a folder, a path outside the run, a job id that is no point id, a name without
    its suffix. ``makes(path)``: whether a rule produces ``path`` (Snakemake's own match)."""
    here = Path.cwd()
    for target in targets:
        if target in rule_names or makes(target):
            continue
        path = Path(target)
        if path.is_absolute() and here not in path.parents:
            return f"{target!r} is outside the run's folder {str(here)!r}"
        hint = " (give it relative to the run's folder)" if path.is_absolute() else ""
        return (
            f"no rule makes {target!r}{hint}; a target is a rule's name or a file under "
            "results/, figures/ or report/ (`lbrepro list` names the artifacts)"
        )
    return None


#: Snakemake's options that make it plan without running a job (look, list, report, unlock,
#: lint, touch, draw the graph...): with one of them the workflow must change no file.
_NOT_RUNNING = frozenset(
    """-n --dry-run --dryrun --report --unlock --lint --list-rules --list --list-target-rules
    --lt --summary --detailed-summary --dag --d3dag --rulegraph --filegraph --touch
    --list-changes --lc --list-input-changes --li --list-params-changes --lp
    --list-code-changes --lu --list-untracked --cleanup-metadata --cm --print-compilation
    --containerize --archive --delete-all-output --delete-temp-output --cleanup-shadow
    --conda-create-envs-only --conda-cleanup-envs --list-conda-envs --generate-unit-tests
    --export-cwl --list-resources --version -v --help -h -S -D -l -t""".split()  # noqa: SIM905
)


def snakemake_command_line() -> tuple[Any, Any] | None:
    """Snakemake's parsed command line while it reads the Snakefile, as ``(args, parser)``:
    flags, a profile's settings and ``$SNAKEMAKE_PROFILE``'s merged as Snakemake resolved them.
    None when Snakemake is not run from its command line (its Python API) or a release names
    it otherwise.

    Snakemake reads the Snakefile inside ``snakemake.cli.args_to_api(args, parser)``, before it
    tells the workflow whether it will run jobs; that frame is the one place that knows.
    Read only."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "args_to_api" and str(
            frame.f_globals.get("__name__", "")
        ).startswith("snakemake"):
            found = frame.f_locals.get("args"), frame.f_locals.get("parser")
            return found if all(x is not None for x in found) else None
        frame = frame.f_back
    return None


def _settings_plan_only() -> bool:
    """Whether Snakemake's resolved settings ask for one of the :data:`_NOT_RUNNING` options
    (``dryrun: true`` in a profile, say), whatever gave it."""
    found = snakemake_command_line()
    if found is None:
        return False
    args, parser = found
    for action in getattr(parser, "_actions", ()):
        if _NOT_RUNNING.isdisjoint(getattr(action, "option_strings", ())):
            continue
        value = getattr(args, getattr(action, "dest", ""), None)
        if value is not None and value is not False and value != action.default:
            return True
    return False


def runs_jobs(argv: Sequence[str]) -> bool:
    """Whether Snakemake, started with command line ``argv``, runs jobs (not a dry run, a
    report, a listing...). Snakemake reads the workflow before it knows (``workflow.dryrun`` is
    False while the Snakefile is read), so the workflow asks the settings Snakemake resolved
    (:func:`snakemake_command_line`: a profile's ``dryrun: true`` is a dry run too — was: taken
    for a run, which removed the damaged outputs it only had to name) and its command line;
    short options may be bundled (``-np``). Targets after ``--`` are not options."""
    if _settings_plan_only():
        return False
    args = list(argv[1:])
    if "--" in args:
        args = args[: args.index("--")]
    for arg in args:
        name = arg.split("=", 1)[0]
        if name in _NOT_RUNNING:
            return False
        bundled = arg.startswith("-") and not arg.startswith("--") and arg[1:].isalpha()
        if bundled and any(f"-{c}" in _NOT_RUNNING for c in arg[1:]):
            return False
    return True


def collect_table(
    inputs: Sequence[str | Path],
    out: str | Path,
    config: Mapping[str, Any] | None = None,
    artifact_id: str | None = None,
    extension: str | Path | None = None,
) -> None:
    """Concatenate the job tables of one artifact into its tidy table.

    With ``config`` and ``artifact_id``, every job table is first verified against the record
    its job wrote (lbrepro.core.manifest): a table that is not complete — a point missing,
    truncated at or inside a row, empty, edited, from a job that wrote no record, or made with
    another seed, other parameters or other code — is recomputed here, from its planned points,
    rather than collected as it is. ``extension``: the rows of the points run longer
    (:func:`extend_points`), verified the same way, which replace those points' rows. The
    table's record says what made it (:meth:`Plan.made_by`).
    """
    the_plan = plan(config) if config is not None and artifact_id is not None else None
    rows = _verified_rows(config, artifact_id, inputs, the_plan)
    made_by = the_plan.made_by(artifact_id) if the_plan is not None and artifact_id else None
    if extension is not None:
        problem = verify(extension, made_by=made_by)
        if problem is not None:
            if config is None or artifact_id is None:
                raise ValueError(f"{extension}: {problem}")
            log.warning("%s: %s; running the extension again", extension, problem)
            extend_points(config, artifact_id, inputs, extension)
        rows = merge_extension(rows, read_table(extension))
    # Every row as the vocabulary declares it (core.rows): a simulated row without its
    # `converged` fails here, naming the artifact, the row and the column.
    check_table(rows, artifact_id, str(out))
    write_table(rows, out)
    write_digest(out, rows=len(rows), made_by=made_by)


def _verified_rows(
    config: Mapping[str, Any] | None,
    artifact_id: str | None,
    inputs: Sequence[str | Path],
    the_plan: Plan | None = None,
) -> list[dict[str, Any]]:
    """The rows of an artifact's job tables, each verified against its plan and digest
    record first (with ``config`` and ``artifact_id``; ``the_plan`` if the caller has it) and
    recomputed if it is not complete."""
    rows: list[dict[str, Any]] = []
    if the_plan is None and config is not None and artifact_id is not None:
        the_plan = plan(config)
    for path in inputs:
        if the_plan is not None and artifact_id is not None:
            problem = job_table_problem(the_plan, artifact_id, path)
            if problem is not None:
                job = Path(path).name.removesuffix(".csv")
                log.warning("%s: %s; recomputing job %s", path, problem, job)
                compute_points(config, artifact_id, the_plan.jobs(artifact_id)[job], path)
        rows.extend(read_table(path))
    return rows


def current_table(
    config: Mapping[str, Any], artifact_id: str, table: str | Path
) -> list[dict[str, Any]]:
    """The rows of the artifact's collected table, verified against its record first: a table
    that is damaged, unrecorded or made by another config is collected again (its job tables
    and extension verified in turn) before it is read — the figure and the check never read a
    number the current config did not make."""
    the_plan = plan(config)
    problem = verify(table, made_by=the_plan.made_by(artifact_id))
    if problem is not None:
        log.warning("%s: %s; collecting it again", table, problem)
        artifact = registry.get(artifact_id)
        fmt = {"slug": artifact.slug, "artifact": artifact.id}
        jobs = [registry.JOB.format(job=j, **fmt) for j in the_plan.jobs(artifact_id)]
        extension = registry.EXTENSION.format(**fmt) if the_plan.extendable(artifact_id) else None
        collect_table(jobs, table, config, artifact_id, extension)
    return read_table(table)


def verify_results(config: Mapping[str, Any], root: str | Path = ".") -> list[str]:
    """What the report must not show as this config's results: every enabled artifact's table,
    checks and figure that is missing, damaged, or made by another config (one line each;
    empty: all are this config's)."""
    the_plan = plan(config)
    problems = []
    for artifact in registry.enabled(config):
        made_by = the_plan.made_by(artifact.id)
        for rel in artifact.paths().values():
            problem = verify(Path(root) / rel, made_by=made_by)
            if problem is not None:
                problems.append(f"{rel}: {problem}")
    return problems


def plot_artifact(
    config: Mapping[str, Any],
    artifact_id: str,
    table: str | Path,
    png: str | Path,
    svg: str | Path,
    pdf: str | Path,
) -> None:
    """Draw the artifact's figure from its table and save it as PNG, SVG and PDF."""
    from lbrepro.plotting.style import save_figure

    artifact = registry.get(artifact_id)
    fig = artifact.plot(
        current_table(config, artifact_id, table), artifact_config(config, artifact_id)
    )
    save_figure(fig, png, svg, pdf)
    made_by = plan(config).made_by(artifact_id)
    for path in (png, svg, pdf):
        write_digest(path, made_by=made_by)


def check_artifact(
    config: Mapping[str, Any], artifact_id: str, table: str | Path, out: str | Path
) -> None:
    """Check the artifact's claims against its table and write checks.json; a claim whose
    ``runs`` name a point the table does not hold fails the step, naming the artifact and the
    id (:func:`lbrepro.core.claims.check_runs`)."""
    artifact = registry.get(artifact_id)
    rows = current_table(config, artifact_id, table)
    claims = artifact.check(rows, artifact_config(config, artifact_id))
    check_runs(claims, rows, artifact_id)
    for c in claims:
        log.info("%s: %s — %s", c.status, c.claim, c.measured)
    write_checks(claims, out)
    write_digest(out, made_by=plan(config).made_by(artifact_id))


@contextlib.contextmanager
def logging_to(path: str | Path | None) -> Iterator[None]:
    """Send this step's log records and stderr (progress bars, warnings) to its log file."""
    if path is None:
        yield
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        handler = logging.StreamHandler(fh)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        root = logging.getLogger()
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        old_stderr, sys.stderr = sys.stderr, fh
        try:
            yield
        except Exception:
            logging.getLogger("lbrepro").exception("step failed")
            raise
        finally:
            sys.stderr = old_stderr
            root.removeHandler(handler)
