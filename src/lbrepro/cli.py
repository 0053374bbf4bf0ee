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
import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from lbrepro import __version__
from lbrepro.core.errors import ConfigError, LbreproError, UnstableError

EXIT_USAGE = 2
# Above this many expected events a simulation shows a progress bar on stderr by default.
PROGRESS_EVENTS = 2e7
# Refuse a computation whose arrays would exceed this (estimated before allocating).
MEMORY_LIMIT = 2 * 2**30


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


def _schema_max(definition: str) -> int:
    """The config schema's maximum for ``definition``: the CLI and the config share limits."""
    from lbrepro.config import schema_bound

    return int(schema_bound(definition))


def _real(text: str) -> float:
    """A finite real number (nan, inf and 1e400 refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def _positive_real(text: str) -> float:
    value = _real(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


def _nonnegative_real(text: str) -> float:
    value = _real(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def _int_range(lo: int, hi: int | str) -> Callable[[str], int]:
    """An integer in [lo, hi] (``hi`` a number or a schema ``$defs`` name); 1e3 is accepted."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            number = _real(text)
            if not number.is_integer():
                raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
            value = int(number)
        top = _schema_max(hi) if isinstance(hi, str) else hi
        if not lo <= value <= top:
            raise argparse.ArgumentTypeError(f"must be between {lo} and {top}, got {text!r}")
        return value

    parse.__name__ = "integer"
    return parse


_positive_int = _int_range(1, "servers")
_servers = _int_range(1, "servers")
_seed = _int_range(0, 2**63 - 1)
_batches = _int_range(2, 10**6)


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
    Param("lam", _real, "arrival rate per server (capacity is mu*sum(gamma*C))", required=True),
    Param("gamma", str, "fractions of servers per type, comma-separated (sum 1)", required=True),
    Param("C", str, "capacity of each type, comma-separated, distinct", required=True),
    Param("d", str, "servers sampled per type, comma-separated", required=True),
    Param("mu", _real, "service rate per unit capacity", default=1.0),
    Param(
        "policy",
        str,
        "scheme1 (default), scheme2, sqd (whole system), typed (static split, then SQ(d_j)), "
        "random (proportional to capacity)",
    ),
    Param("scheme", str, "1 or 2: shorthand for --policy scheme1|scheme2"),
    Param("d_pool", _positive_int, "sqd: servers sampled from the whole pool"),
    Param("split", str, "typed: routing probabilities per type, comma-separated"),
    Param("lam_hat", _real, "typed: use the split optimised for this assumed load"),
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
    Param("N", _servers, "number of servers", required=True),
    Param("horizon", _positive_real, "simulated time (mean service times)", required=True),
    Param("warmup", _nonnegative_real, "initial time discarded", default=None),
    Param("seed", _seed, "seed of the random stream", default=1),
    Param("batches", _batches, "batches for the batch-means CI", default=20),
)

MODELS: dict[str, ModelCommands] = {
    "supermarket": ModelCommands(
        params=(
            Param("lam", _real, "arrival rate per server", required=True),
            Param("d", _positive_int, "servers sampled per job", required=True),
            Param("mu", _real, "service rate", default=1.0),
        ),
        solve=_solve_supermarket,
        simulate=_simulate_supermarket,
        sim_params=SIM_PARAMS,
    ),
}
MODELS["universality"] = ModelCommands(
    params=(
        Param("lam", _real, "arrival rate per server (λ(N)/N)", required=True),
        Param(
            "d",
            _d_family,
            "servers sampled (without replacement): an integer, or logN, "
            "sqrtN, sqrtNlogN, sqrtNlog2N, N (solve: an integer, or N for the JSQ limit)",
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
        Param("lam", _real, "arrival rate per server (< mu1)", required=True),
        Param("mu2", _real, "type-II service rate (< mu1)", default=0.5),
        Param("mu1", _real, "type-I service rate", default=1.0),
        Param("d1", _positive_int, "primary servers per type-I job", required=True),
    ),
    solve=_solve_affinity,
    simulate=_simulate_affinity,
    sim_params=SIM_PARAMS,
)
MODELS["whittle"] = ModelCommands(
    params=(
        Param("p", _real, "arrival probability per slot", required=True),
        Param("q", str, "service capacities, comma-separated (one per server)", required=True),
        Param("d", str, "LPS levels, comma-separated; inf for processor sharing", required=True),
        Param("cost", str, "linear or meanvar", default="linear"),
        Param("beta", _real, "mean–variance weight β", default=0.0),
        Param(
            "B",
            _int_range(2, "buffer"),
            "starting buffer per server (grown to 1e-6 mass)",
            default=20,
        ),
    ),
    solve=_solve_whittle,
    simulate=_simulate_whittle,
    sim_params=(
        Param("policy", str, "whittle, jsq, jsew, rsa or optimal", default="whittle"),
        Param("horizon", _positive_real, "simulated slots", required=True),
        Param(
            "warmup", _nonnegative_real, "slots discarded first (default: a tenth of the horizon)"
        ),
        Param("seed", _seed, "seed of the random stream", default=1),
        Param("batches", _batches, "batches for the batch-means CI", default=20),
    ),
    solve_params=(
        Param("nmax", _int_range(1, "nmax"), "largest state whose index is printed", default=20),
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
        Param("lam", _real, "arrival rate per server (= ρ)", required=True),
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
    from lbrepro.config import CONFIG_PATH, load_config
    from lbrepro.pipeline import validate_config

    if not paths:
        # The config of the checkout in the working directory, else of this source checkout.
        here = os.path.join("config", "config.yaml")
        default = here if os.path.exists(here) else str(CONFIG_PATH)
        if not os.path.exists(default):
            raise ConfigError("configs", f"no config file given and no {here} here")
        paths = [default]
    config = load_config(*paths)
    validate_config(config)
    print(json.dumps({"valid": True, "files": list(paths)}))


def _levels(rho: float, d: int, tol: float) -> float:
    """Levels k until the mean-field tail ρ^((d^k−1)/(d−1)) falls below ``tol`` (an estimate)."""
    if not 0 < rho < 1:
        return 0.0  # refused by the model with its own message
    if d == 1:
        return math.log(tol) / math.log(rho)
    # Doubly exponential: a few levels, e_k = (d^k − 1)/(d − 1) ≥ log(tol)/log(ρ) for small k.
    return math.log1p((d - 1) * math.log(tol) / math.log(rho)) / math.log(d) + 1


def _check_memory(args: argparse.Namespace, kwargs: dict[str, Any]) -> None:
    """Estimate the arrays a run would allocate and refuse one beyond MEMORY_LIMIT, before
    allocating anything (``solve supermarket --lam 0.999999999 --d 1`` wanted 274 GiB)."""
    if args.model != "supermarket":
        return  # N, nmax and B are bounded by the schema's limits at parse time
    from lbrepro.models import supermarket

    rho = kwargs["lam"] / kwargs["mu"] if kwargs["mu"] > 0 else 0.0
    if args.command == "solve":
        levels = _levels(rho, kwargs["d"], 1e-16)
        what, limit = "the mean-field tail to fall below 1e-16", supermarket.K_MAX
    else:
        levels = _levels(rho, kwargs["d"], 0.1 / kwargs["N"])
        what, limit = "the initial state (the fixed point rounded to N servers)", math.inf
    nbytes = 8.0 * levels
    if levels > limit or nbytes > MEMORY_LIMIT:
        bound = f"{limit} levels" if levels > limit else f"{MEMORY_LIMIT / 2**30:g} GiB"
        raise ConfigError(
            "lam",
            f"load {rho:.10g} with d = {kwargs['d']}: {what} needs about {levels:.3g} levels "
            f"(~{nbytes / 2**30:.3g} GiB), beyond {bound}; lower --lam or raise --d",
        )


def _run_model(args: argparse.Namespace) -> dict[str, Any]:
    spec = MODELS[args.model]
    names = [p.name for p in spec.params]
    kwargs = {n: getattr(args, n) for n in names}
    _check_memory(args, kwargs | {"N": getattr(args, "N", None)})
    if args.command == "solve":
        return spec.solve(**kwargs, **{p.name: getattr(args, p.name) for p in spec.solve_params})
    kwargs |= {p.name: getattr(args, p.name) for p in spec.sim_params}
    if kwargs["warmup"] is None:
        kwargs["warmup"] = 0.1 * kwargs["horizon"]
    elif kwargs["warmup"] >= kwargs["horizon"]:
        raise ConfigError("warmup", f"must be shorter than --horizon = {kwargs['horizon']:g}")
    # Events ≈ arrivals + departures (slots for the slotted whittle model).
    expected_events = 2.0 * kwargs.get("lam", 0.5) * kwargs.get("N", 1) * kwargs["horizon"]
    progress = {"on": True, "off": False}.get(args.progress, expected_events >= PROGRESS_EVENTS)
    from lbrepro.sim.runlength import event_budget

    with event_budget(args.max_events):
        return spec.simulate(**kwargs, replace=args.replace, progress=progress, start=args.start)


def _json_safe(value: Any) -> Any:
    """NaN and ±inf are not JSON: write them as null (an undefined or unbounded quantity)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def _message(err: Exception, args: argparse.Namespace) -> str:
    """One line naming the flag: a model's ``lam: …`` becomes ``--lam: …``."""
    text = str(err)
    if getattr(args, "model", None) is None:
        return text  # list / validate: config keys, already named
    spec = MODELS[args.model]
    flags = {p.name for p in (*spec.params, *spec.sim_params, *spec.solve_params)}
    key = getattr(err, "key", None)
    if isinstance(err, ConfigError) and key in flags:
        return f"--{key}: {text.removeprefix(f'{key}: ')}"
    if isinstance(err, UnstableError):
        load = "p" if args.model == "whittle" else "lam"
        return f"--{load}: {text.removeprefix(f'{load}: ')}"
    return text


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lbrepro`` console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "list":
            _list(args.json)
        elif args.command == "validate":
            _validate(args.configs)
        else:
            print(json.dumps(_json_safe(_run_model(args)), indent=2, allow_nan=False))
        sys.stdout.flush()
    except BrokenPipeError:
        # `lbrepro list | head -1`: the reader has all it wanted; say nothing more.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except (LbreproError, OSError) as err:
        print(f"lbrepro: error: {_message(err, args)}", file=sys.stderr)
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
