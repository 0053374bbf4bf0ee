"""The ``lbrepro`` command: list artifacts, solve or simulate one model, validate a config.

Results go to stdout as JSON; progress bars and errors go to stderr. Any bad input ends with
one line on stderr and exit code 2, never a traceback.

    lbrepro list
    lbrepro solve supermarket --lam 0.9 --d 2
    lbrepro simulate supermarket --lam 0.9 --d 2 --N 1000 --horizon 2000 --warmup 200 --seed 1
    lbrepro validate config/config.yaml config/quick.yaml
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from lbrepro import __version__
from lbrepro.core.errors import LbreproError

EXIT_USAGE = 2
# Above this many expected events a simulation shows a progress bar on stderr by default.
PROGRESS_EVENTS = 2e7


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line (no usage dump) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"lbrepro: error: {message}\n")


@dataclass(frozen=True)
class Param:
    """A model parameter on the command line (names follow models.md)."""

    name: str
    type: Callable[[str], Any]
    help: str
    default: Any = None
    required: bool = False


@dataclass(frozen=True)
class ModelCommands:
    """What the CLI can do with one model (slug)."""

    params: tuple[Param, ...]
    solve: Callable[..., dict[str, Any]] | None = None
    simulate: Callable[..., dict[str, Any]] | None = None
    sim_params: tuple[Param, ...] = field(default_factory=tuple)
    solve_params: tuple[Param, ...] = field(default_factory=tuple)


def _positive_int(text: str) -> int:
    value = int(float(text))
    if value != float(text):
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}")
    return value


def _solve_supermarket(lam: float, d: int, mu: float) -> dict[str, Any]:
    from lbrepro.models import supermarket

    return supermarket.solve(lam, d, mu)


def _simulate_supermarket(
    lam: float,
    d: int,
    mu: float,
    N: int,
    horizon: float,
    warmup: float,
    seed: int,
    batches: int,
    replace: bool,
    progress: bool,
    start: str | None,
) -> dict[str, Any]:
    from lbrepro.models import supermarket

    result = supermarket.simulate(
        lam=lam,
        d=d,
        mu=mu,
        N=N,
        horizon=horizon,
        warmup=warmup,
        seed=seed,
        batches=batches,
        replace=replace,
        progress=progress,
        start=start or "fixed_point",
    )
    return {
        "model": "supermarket",
        "params": {"lam": lam, "d": d, "mu": mu, "start": start or "fixed_point"},
    } | result.to_dict()


def _d_family(text: str) -> int | str:
    """A fixed d (integer) or a d(N) family name, as in the config."""
    return int(text) if text.lstrip("+-").isdigit() else text


def _solve_universality(lam: float, d: int | str) -> dict[str, Any]:
    from lbrepro.models import universality

    return universality.solve(lam, d)


def _simulate_universality(
    lam: float,
    d: int | str,
    N: int,
    horizon: float,
    warmup: float,
    seed: int,
    batches: int,
    replace: bool,
    progress: bool,
    start: str | None,
) -> dict[str, Any]:
    # The universality paper samples d(N) servers without replacement (d = N is JSQ), so
    # --no-replace is implied here and `replace` is not used.
    from lbrepro.models import universality

    d_value = universality.d_of_N(d, N)
    result = universality.simulate(
        lam=lam,
        N=N,
        d=d_value,
        horizon=horizon,
        warmup=warmup,
        seed=seed,
        batches=batches,
        progress=progress,
        start=start or "fixed_point",
    )
    return {
        "model": "universality",
        "params": {"lam": lam, "d": d, "d_value": d_value, "start": start or "fixed_point"},
    } | result.to_dict()


HETERO_PARAMS = (
    Param("lam", float, "arrival rate per server (capacity is mu*sum(gamma*C))", required=True),
    Param("gamma", str, "fractions of servers per type, comma-separated (sum 1)", required=True),
    Param("C", str, "capacity of each type, comma-separated, distinct", required=True),
    Param("d", str, "servers sampled per type, comma-separated", required=True),
    Param("mu", float, "service rate per unit capacity", default=1.0),
    Param(
        "policy",
        str,
        "scheme1 (default), scheme2, sqd (whole system), typed (static split, then SQ(d_j)), "
        "random (proportional to capacity)",
    ),
    Param("scheme", str, "1 or 2: shorthand for --policy scheme1|scheme2"),
    Param("d_pool", _positive_int, "sqd: servers sampled from the whole pool"),
    Param("split", str, "typed: routing probabilities per type, comma-separated"),
    Param("lam_hat", float, "typed: use the split optimised for this assumed load"),
)


def _solve_hetero(**kwargs: Any) -> dict[str, Any]:
    from lbrepro.models import hetero

    return hetero.solve(**kwargs)


def _simulate_hetero(
    N: int,
    horizon: float,
    warmup: float,
    seed: int,
    batches: int,
    replace: bool,
    progress: bool,
    start: str | None,
    **kwargs: Any,
) -> dict[str, Any]:
    from lbrepro.models import hetero

    if not replace:
        raise LbreproError("replace: the heterogeneous kernel samples with replacement only")
    return hetero.simulate_summary(
        **kwargs,
        N=N,
        horizon=horizon,
        warmup=warmup,
        seed=seed,
        batches=batches,
        progress=progress,
        start=start or "fixed_point",
    )


SIM_PARAMS = (
    Param("N", _positive_int, "number of servers", required=True),
    Param("horizon", float, "simulated time (mean service times)", required=True),
    Param("warmup", float, "initial time discarded", default=None),
    Param("seed", _positive_int, "seed of the random stream", default=1),
    Param("batches", _positive_int, "batches for the batch-means CI", default=20),
)

MODELS: dict[str, ModelCommands] = {
    "supermarket": ModelCommands(
        params=(
            Param("lam", float, "arrival rate per server", required=True),
            Param("d", _positive_int, "servers sampled per job", required=True),
            Param("mu", float, "service rate", default=1.0),
        ),
        solve=_solve_supermarket,
        simulate=_simulate_supermarket,
        sim_params=SIM_PARAMS,
    ),
}
MODELS["universality"] = ModelCommands(
    params=(
        Param("lam", float, "arrival rate per server (λ(N)/N)", required=True),
        Param(
            "d",
            _d_family,
            "servers sampled (without replacement): an integer, or logN, "
            "sqrtN, sqrtNlogN, N (solve: an integer, or N for the JSQ limit)",
            required=True,
        ),
    ),
    solve=_solve_universality,
    simulate=_simulate_universality,
    sim_params=SIM_PARAMS,
)


def _solve_whittle(**kwargs: Any) -> dict[str, Any]:
    from lbrepro.models import whittle_policies

    return whittle_policies.cli_solve(**kwargs)


def _simulate_whittle(
    replace: bool, progress: bool, start: str | None, **kwargs: Any
) -> dict[str, Any]:
    from lbrepro.models import whittle_policies

    if not replace or start is not None:
        raise LbreproError("--no-replace and --start do not apply to the slotted whittle model")
    return whittle_policies.cli_simulate(**kwargs)


def _solve_general(dist: str, lam: float, d: int) -> dict[str, Any]:
    from lbrepro.models import general

    return general.solve(dist, lam, d)


def _simulate_general(
    dist: str,
    lam: float,
    d: int,
    N: int,
    horizon: float,
    warmup: float,
    seed: int,
    batches: int,
    replace: bool,
    progress: bool,
    start: str | None,
) -> dict[str, Any]:
    from lbrepro.models import general

    if not replace:
        raise LbreproError("replace: the general-service kernel samples with replacement only")
    if start not in (None, "empty"):
        raise LbreproError("start: the general-service simulation starts empty")
    return general.simulate_cli(dist, lam, d, N, horizon, warmup, seed, batches)


def _solve_affinity(lam: float, mu2: float, mu1: float, d1: int) -> dict[str, Any]:
    from lbrepro.models import affinity

    return affinity.cli_solve(lam, mu2, mu1, d1)


def _simulate_affinity(
    lam: float,
    mu2: float,
    mu1: float,
    d1: int,
    N: int,
    horizon: float,
    warmup: float,
    seed: int,
    batches: int,
    replace: bool,
    progress: bool,
    start: str | None,
) -> dict[str, Any]:
    from lbrepro.models import affinity

    if not replace:
        raise LbreproError("replace: the d1 primary servers are always distinct already")
    return affinity.cli_simulate(
        lam, mu2, mu1, d1, N, horizon, warmup, seed, batches, True, progress, start or "fixed_point"
    )


MODELS["affinity"] = ModelCommands(
    params=(
        Param("lam", float, "arrival rate per server (< mu1)", required=True),
        Param("mu2", float, "type-II service rate (< mu1)", default=0.5),
        Param("mu1", float, "type-I service rate", default=1.0),
        Param("d1", _positive_int, "primary servers per type-I job", required=True),
    ),
    solve=_solve_affinity,
    simulate=_simulate_affinity,
    sim_params=SIM_PARAMS,
)
MODELS["whittle"] = ModelCommands(
    params=(
        Param("p", float, "arrival probability per slot", required=True),
        Param("q", str, "service capacities, comma-separated (one per server)", required=True),
        Param("d", str, "LPS levels, comma-separated; inf for processor sharing", required=True),
        Param("cost", str, "linear or meanvar", default="linear"),
        Param("beta", float, "mean–variance weight β", default=0.0),
        Param("B", _positive_int, "starting buffer per server (grown to 1e-6 mass)", default=20),
    ),
    solve=_solve_whittle,
    simulate=_simulate_whittle,
    sim_params=(
        Param("policy", str, "whittle, jsq, jsew, rsa or optimal", default="whittle"),
        Param("horizon", float, "simulated slots", required=True),
        Param("warmup", float, "slots discarded first (default: a tenth of the horizon)"),
        Param("seed", _positive_int, "seed of the random stream", default=1),
        Param("batches", _positive_int, "batches for the batch-means CI", default=20),
    ),
    solve_params=(
        Param("nmax", _positive_int, "largest state whose index is printed", default=20),
    ),
)
MODELS["general"] = ModelCommands(
    params=(
        Param(
            "dist",
            str,
            "service distribution, scaled to mean 1: exp, erlang:m, hyperexp:scv, "
            "coxian:r1,..,c1,.., det, weibull:k, lomax:alpha, lognormal:sigma",
            default="exp",
        ),
        Param("lam", float, "arrival rate per server (= ρ)", required=True),
        Param("d", _positive_int, "servers sampled per job", required=True),
    ),
    solve=_solve_general,
    simulate=_simulate_general,
    sim_params=SIM_PARAMS,
)
MODELS["hetero"] = ModelCommands(
    params=HETERO_PARAMS,
    solve=_solve_hetero,
    simulate=_simulate_hetero,
    sim_params=SIM_PARAMS,
)


def _add_params(parser: argparse.ArgumentParser, params: Sequence[Param]) -> None:
    for p in params:
        parser.add_argument(
            f"--{p.name}", type=p.type, default=p.default, required=p.required, help=p.help
        )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, with one sub-parser per model for solve and simulate."""
    parser = _Parser(prog="lbrepro", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"lbrepro {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p_list = sub.add_parser("list", help="list the artifacts the pipeline produces")
    p_list.add_argument("--json", action="store_true", help="print JSON instead of a table")

    p_val = sub.add_parser("validate", help="validate config files (merged left to right)")
    p_val.add_argument("configs", nargs="*", help="config files (default: config/config.yaml)")

    for command in ("solve", "simulate"):
        p_cmd = sub.add_parser(command, help=f"{command} one model, print JSON")
        models = p_cmd.add_subparsers(
            dest="model", required=True, parser_class=_Parser, metavar="MODEL"
        )
        for slug, spec in MODELS.items():
            if getattr(spec, command) is None:
                continue
            p_model = models.add_parser(slug, help=f"{command} the {slug} model")
            _add_params(p_model, spec.params)
            if command == "solve":
                _add_params(p_model, spec.solve_params)
            if command == "simulate":
                _add_params(p_model, spec.sim_params)
                p_model.add_argument(
                    "--no-replace",
                    dest="replace",
                    action="store_false",
                    help="sample the d servers without replacement",
                )
                p_model.add_argument(
                    "--start",
                    choices=("fixed_point", "empty", "type2"),
                    default=None,
                    help="initial state: the mean-field fixed point rounded to N servers "
                    "(default where the model has one), empty, or (affinity) one type-II job "
                    "at every server",
                )
                p_model.add_argument(
                    "--max-events",
                    type=float,
                    default=None,
                    help="refuse a run expected to take more events than this "
                    "(default 1e10, see lbrepro.sim.runlength)",
                )
                p_model.add_argument(
                    "--progress",
                    choices=("auto", "on", "off"),
                    default="auto",
                    help="progress bar on stderr (auto: for long runs)",
                )
    return parser


def _list(as_json: bool) -> None:
    from lbrepro.artifacts import registry

    items = [
        {"id": a.id, "paper": a.slug, "kind": a.kind, "methods": list(a.methods), "title": a.title}
        for a in registry.all_artifacts()
    ]
    if as_json:
        print(json.dumps(items, indent=2))
        return
    width = max(len(i["id"]) for i in items)
    for i in items:
        print(f"{i['id']:<{width}}  {i['kind']:<14}  {'+'.join(i['methods']):<12}  {i['title']}")


def _validate(paths: Sequence[str]) -> None:
    from lbrepro.config import CONFIG_PATH, load_config, validate_config

    config = load_config(*(paths or [CONFIG_PATH]))
    validate_config(config)
    print(json.dumps({"valid": True, "files": list(paths) or [str(CONFIG_PATH)]}))


def _run_model(args: argparse.Namespace) -> dict[str, Any]:
    spec = MODELS[args.model]
    names = [p.name for p in spec.params]
    kwargs = {n: getattr(args, n) for n in names}
    if args.command == "solve":
        return spec.solve(**kwargs, **{p.name: getattr(args, p.name) for p in spec.solve_params})
    kwargs |= {p.name: getattr(args, p.name) for p in spec.sim_params}
    if kwargs["warmup"] is None:
        kwargs["warmup"] = 0.1 * kwargs["horizon"]
    # Events ≈ arrivals + departures (slots for the slotted whittle model).
    expected_events = 2.0 * kwargs.get("lam", 0.5) * kwargs.get("N", 1) * kwargs["horizon"]
    progress = {"on": True, "off": False}.get(args.progress, expected_events >= PROGRESS_EVENTS)
    from lbrepro.sim.runlength import event_budget

    with event_budget(args.max_events):
        return spec.simulate(**kwargs, replace=args.replace, progress=progress, start=args.start)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lbrepro`` console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "list":
            _list(args.json)
        elif args.command == "validate":
            _validate(args.configs)
        else:
            print(json.dumps(_run_model(args), indent=2))
    except (LbreproError, OSError) as err:
        print(f"lbrepro: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        # The kernels return to Python after every micro-batch, so Ctrl-C lands here.
        print("lbrepro: interrupted", file=sys.stderr)
        return 130
    except SystemError as err:
        # Ctrl-C inside numba's boxing of a kernel's results surfaces as a SystemError chain.
        cause: BaseException | None = err
        while cause is not None and not isinstance(cause, KeyboardInterrupt):
            cause = cause.__cause__ or cause.__context__
        if cause is None:
            raise
        print("lbrepro: interrupted", file=sys.stderr)
        return 130
    return 0
