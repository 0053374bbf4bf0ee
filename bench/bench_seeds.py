"""Seed stability: the quick profile under K seeds, every claim's status compared across them.

Usage, from the repository root with the virtual environment active::

    nice python bench/bench_seeds.py                    # seeds 0..4, one core
    nice python bench/bench_seeds.py --seeds 0 1 2 --cores 2
    python bench/bench_seeds.py --tabulate-only         # re-read the runs, write the record

Each seed runs the pipeline's claim checks (every enabled artifact's ``checks.json``) in its
own folder, ``snakemake --directory WORK/seedN --configfile config/config.yaml
config/quick.yaml --config seed=N``, so no run overwrites another and a rerun only redoes
what is missing. Claims are then keyed by artifact and text (``lbrepro.report.diff``, the
same keys as ``lbrepro diff``) and tabulated: per claim its status at each seed; per seed the
verdicts reproduced / not reproduced / undecided and the null statistics; and the three
numbers of issue 19's "done when": claims that moved between reproduced and not reproduced
(must be 0), the undecided fraction of all verdicts (≤ 10%) and null statistics (0).

The record goes to ``src/lbrepro/report/seed_stability.json`` (committed, like
``coverage.json``: the report's Methods section shows it with the commit it was measured at)
and a markdown summary to stdout. Exit code 0 when all three targets are met, else 1.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lbrepro.artifacts import registry
from lbrepro.config import load_config
from lbrepro.core.io import write_json
from lbrepro.report.diff import DiffError, load_tree, seed_table
from lbrepro.report.provenance import git_state
from lbrepro.report.render import SEEDS_FILE

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = (ROOT / "config" / "config.yaml", ROOT / "config" / "quick.yaml")
WORK = Path(tempfile.gettempdir()) / "lbrepro-seeds"
#: Issue 19's targets: at most this fraction of the verdicts undecided.
MAX_UNDECIDED = 0.10


def targets(configs: Sequence[Path], only: Sequence[str] = ()) -> list[str]:
    """The checks files of the enabled artifacts (relative to a run folder)."""
    config = load_config(*configs)
    chosen = [a for a in registry.enabled(config) if not only or a.id in only]
    missing = set(only) - {a.id for a in chosen}
    if missing:
        raise SystemExit(f"bench_seeds: not an enabled artifact: {', '.join(sorted(missing))}")
    return [str(a.paths()["checks"]) for a in chosen]


def run_seed(seed: int, folder: Path, files: Sequence[str], cores: int) -> dict[str, Any]:
    """Snakemake on the checks files of one seed in its own folder; never stops the bench.

    ``--keep-going``: an artifact that fails leaves its checks missing (listed as claims in
    the other seeds only), the others still run.
    """
    folder.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--directory",
        str(folder),
        "--configfile",
        *map(str, CONFIGS),
        "--config",
        f"seed={seed}",
        "--cores",
        str(cores),
        "--keep-going",
        "--",
        *files,
    ]
    start = time.monotonic()
    with open(folder / "snakemake.log", "w", encoding="utf-8") as log:
        done = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False)
    return {"seed": seed, "returncode": done.returncode, "seconds": time.monotonic() - start}


def markdown(table: Mapping[str, Any]) -> str:
    """The record as markdown: the three targets, one row per seed, the claims that moved."""
    lines = [
        f"seeds {', '.join(map(str, table['seeds']))}: {table['flips']} claims moved between "
        f"reproduced and not reproduced ({table['flips_paper']} paper claims); "
        f"undecided {table['undecided_fraction']:.1%} of "
        f"{table['verdicts']} verdicts; {table['null_statistics']} null statistics",
        "",
        "| seed | verdicts | reproduced | not reproduced | undecided | null |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for p in table["per_seed"]:
        lines.append(
            f"| {p['seed']} | {p['verdicts']} | {p['reproduced']} | {p['not_reproduced']} "
            f"| {p['undecided']} | {p['null_statistics']} |"
        )
    moved = [r for r in table["rows"] if not r["stable"]]
    if moved:
        seeds = " | ".join(f"seed {s}" for s in table["seeds"])
        lines += ["", f"| artifact | claim | {seeds} |"]
        lines.append("|---|---|" + "---|" * len(table["seeds"]))
        for r in sorted(moved, key=lambda r: (not r["flip"], r["artifact"], r["claim"])):
            cells = " | ".join(s or "absent" for s in r["statuses"])
            flag = " **(flip)**" if r["flip"] else ""
            lines.append(f"| {r['artifact']} | {r['claim']}{flag} | {cells} |")
    return "\n".join(lines)


def record(
    table: Mapping[str, Any], runs: Sequence[Mapping[str, Any]], argv: Sequence[str]
) -> dict[str, Any]:
    """The committed record: the table with what, when and at which commit it was measured."""
    state = git_state(ROOT)
    return {
        "what": "claim statuses of the quick profile across seeds (issue 19)",
        "profile": "quick profile (config/config.yaml + config/quick.yaml)",
        "commit": state["commit"],
        "dirty": state["dirty"],
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "produced_by": "nice python bench/bench_seeds.py " + " ".join(argv),
        "targets": {"flips": 0, "undecided_fraction": MAX_UNDECIDED, "null_statistics": 0},
        "runs": list(runs),
        **table,
    }


def main(argv: list[str] | None = None) -> int:
    """Run (or re-read) the seeds, write the record, print the markdown summary."""
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--cores", type=int, default=1, help="Snakemake --cores per seed")
    ap.add_argument("--work", type=Path, default=WORK, help="one folder per seed in here")
    ap.add_argument("--artifact", action="append", default=[], help="only these artifacts")
    ap.add_argument("--tabulate-only", action="store_true", help="do not run, re-read --work")
    ap.add_argument("--out", type=Path, default=SEEDS_FILE)
    ap.add_argument("--markdown", type=Path, help="also write the markdown summary here")
    args = ap.parse_args(argv)

    files = targets(CONFIGS, args.artifact)
    runs = []
    for seed in args.seeds:
        folder = args.work / f"seed{seed}"
        if not args.tabulate_only:
            runs.append(run_seed(seed, folder, files, args.cores))
            print(f"seed {seed}: exit {runs[-1]['returncode']}, {runs[-1]['seconds']:.0f} s")
    try:
        trees = {seed: load_tree(args.work / f"seed{seed}") for seed in args.seeds}
    except DiffError as err:  # a seed that produced no checks at all: see its snakemake.log
        print(f"bench_seeds: {err}", file=sys.stderr)
        return 2
    table = seed_table(trees)
    write_json(record(table, runs, argv), args.out)
    text = markdown(table)
    if args.markdown:
        args.markdown.write_text(text + "\n", encoding="utf-8")
    print(text)
    print(f"written to {args.out}")
    met = (
        table["flips"] == 0
        and table["undecided_fraction"] <= MAX_UNDECIDED
        and table["null_statistics"] == 0
    )
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
