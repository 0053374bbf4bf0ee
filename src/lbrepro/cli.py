"""The ``lbrepro`` command: list artifacts, solve or simulate one model, validate a config.

Results go to stdout as JSON; progress bars and errors go to stderr. Any bad input ends with
one line on stderr and exit code 2, never a traceback.

    lbrepro list
    lbrepro solve supermarket --lam 0.9 --d 2
    lbrepro simulate supermarket --lam 0.9 --d 2 --N 1000 --horizon 2000 --warmup 200 --seed 1
    lbrepro validate config/config.yaml config/quick.yaml
    lbrepro diff RUN_A RUN_B
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import io
import json
import logging
import math
import os
import pkgutil
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NoReturn

from lbrepro import __version__
from lbrepro.core.errors import ConfigError, ConvergenceError, LbreproError, UnstableError
from lbrepro.models.spec import RUN_OPTIONS, Model, Param

EXIT_USAGE = 2
# Above this many expected events a simulation shows a progress bar on stderr by default.
PROGRESS_EVENTS = 2e7
# Wall time a solve may take by default (``--max-seconds``): its ODE integrations stop with
# their own line at this budget (lbrepro.core.equilibrium.time_budget); any other numerics (the
# value iteration of a K-server chain near capacity, say) are stopped SOLVE_GRACE later, or
# as much again as a shorter budget, at least a second (--max-seconds 1: stopped after 2 s).
SOLVE_SECONDS = 120.0
SOLVE_GRACE = 5.0


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line (no usage dump) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"lbrepro: error: {message}\n")


def _schema_max(definition: str) -> float:
    """The config schema's maximum for ``definition``: the CLI and the config share limits."""
    from lbrepro.config import schema_bound

    return schema_bound(definition)


def _real(text: str) -> float:
    """A finite real number (nan, inf and 1e400 refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def _integer(text: str) -> int:
    """An integer; ``1e3`` is accepted, ``1.5`` and ``1e400`` are not."""
    try:
        return int(text)
    except ValueError:
        number = _real(text)
        if not number.is_integer():
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        return int(number)


def _event_budget(text: str) -> float:
    """``--max-events``: a number > 0; ``inf`` for no limit (was: ``max_events: must be > 0,
    got nan``, naming no flag, after the model's arguments were checked)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0 (inf: no limit), got {text!r}")
    return value


def _seconds(text: str) -> float:
    """``--max-seconds``: a number of seconds > 0; ``inf`` for no limit."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0 (inf: no limit), got {text!r}")
    return value


def _number(value: float | None) -> str:
    """A bound as the user would write it (10000000, not 1e+07)."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _argument_type(param: Param) -> Callable[[str], Any]:
    """The argparse ``type`` of a declared parameter: parse, then check its bounds."""

    def parse(text: str) -> Any:
        if param.kind == "real":
            value: Any = _real(text)
        elif param.kind == "integer":
            value = _integer(text)
        else:
            value = text
        if param.parse is not None:
            try:
                value = param.parse(value)
            except ValueError as err:
                raise argparse.ArgumentTypeError(str(err)) from None
        if param.kind in ("real", "integer"):
            lo = param.minimum
            hi = _schema_max(param.maximum) if isinstance(param.maximum, str) else param.maximum
            low_ok = lo is None or (value > lo if param.exclusive_minimum else value >= lo)
            if hi is not None and (not low_ok or value > hi):
                raise argparse.ArgumentTypeError(
                    f"must be between {_number(lo)} and {_number(hi)}, got {text!r}"
                )
            if not low_ok:
                op = ">" if param.exclusive_minimum else ">="
                raise argparse.ArgumentTypeError(f"must be {op} {_number(lo)}, got {text!r}")
        return value

    parse.__name__ = {"real": "number", "integer": "integer"}.get(param.kind, "value")
    return parse


@functools.cache
def models() -> dict[str, Model]:
    """Every model that declares ``MODEL`` in a module of ``lbrepro.models`` (discovered)."""
    import lbrepro.models as package

    found: dict[str, Model] = {}
    for info in pkgutil.iter_modules(package.__path__):
        if info.name in ("spec",) or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        model = getattr(module, "MODEL", None)
        if isinstance(model, Model):
            found[model.name] = model
    return dict(sorted(found.items()))


def _add_params(parser: argparse.ArgumentParser, model: Model, command: str) -> None:
    """One flag per declared parameter; required unless the function gives a default."""
    defaults = model.defaults(command)
    for p in model.params_for(command):
        required = p.name not in defaults
        default = defaults.get(p.name)
        shown = "" if required or default is None else f" (default: {default})"
        parser.add_argument(
            f"--{p.name}",
            type=_argument_type(p),
            choices=p.choices or None,
            default=default,
            required=required,
            help=p.help + shown,
        )


def _add_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=("table", "json"),
        default=None,
        help="table (for a person) or json (for a script); default: a table on a terminal, "
        "JSON otherwise",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, with one sub-parser per model for solve and simulate."""
    parser = _Parser(prog="lbrepro", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"lbrepro {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p_list = sub.add_parser("list", help="list the artifacts the pipeline produces")
    p_list.add_argument("--json", action="store_true", help="print JSON (as --format json)")
    _add_format(p_list)

    p_val = sub.add_parser("validate", help="validate config files (merged left to right)")
    p_val.add_argument("configs", nargs="*", help="config files (default: config/config.yaml)")
    p_val.add_argument(
        "--configfile",
        "--configfiles",
        nargs="+",
        action="extend",
        default=[],
        metavar="FILE",
        help="config files as Snakemake is given them (after the positional ones)",
    )

    p_diff = sub.add_parser("diff", help="claims whose status or statistic moved between two runs")
    p_diff.add_argument("runs", nargs=2, metavar="RUN", help="result trees (or their results/)")

    for command in ("solve", "simulate"):
        p_cmd = sub.add_parser(command, help=f"{command} one model: a table, or JSON")
        subparsers = p_cmd.add_subparsers(
            dest="model", required=True, parser_class=_Parser, metavar="MODEL"
        )
        for name, model in models().items():
            if getattr(model, command) is None:
                continue
            p_model = subparsers.add_parser(name, help=f"{command} {model.help}")
            _add_params(p_model, model, command)
            _add_format(p_model)
            if command == "solve":
                p_model.add_argument(
                    "--max-seconds",
                    type=_seconds,
                    default=None,
                    help=f"stop a solve that takes longer, with one line (default "
                    f"{SOLVE_SECONDS:g}; inf: no limit)",
                )
            if command != "simulate":
                continue
            if model.takes(command, "replace"):
                p_model.add_argument(
                    "--no-replace",
                    dest="replace",
                    action="store_false",
                    help="sample the d servers without replacement",
                )
            p_model.add_argument(
                "--max-events",
                type=_event_budget,
                default=None,
                help="refuse a run expected to take more events than this "
                "(default 1e10, see lbrepro.sim.runlength)",
            )
            if model.takes(command, "progress"):
                p_model.add_argument(
                    "--progress",
                    choices=("auto", "on", "off"),
                    default="auto",
                    help="progress bar on stderr (auto: for long runs)",
                )
    return parser


def _output_format(args: argparse.Namespace) -> str:
    """``table`` or ``json``: as asked, else a table on a terminal and JSON into a pipe or a
    file (scripts keep reading JSON)."""
    chosen = getattr(args, "format", None)
    if getattr(args, "json", False):
        return "json"
    if chosen:
        return chosen
    try:
        return "table" if sys.stdout.isatty() else "json"
    except (AttributeError, ValueError):
        return "json"


def _paper_name(paper: Any) -> str:
    """The paper as a reader names it: authors and year (``Li & Lui (2010)``); the baseline
    says so."""
    name = getattr(paper, "name", "") or paper.slug
    return f"baseline: {name}" if getattr(paper, "baseline", False) else name


def _list(args: argparse.Namespace) -> None:
    from lbrepro.artifacts import registry

    papers = registry.papers()
    items = [
        {
            "id": a.id,
            "paper": a.slug,
            "paper_name": _paper_name(papers[a.slug]) if a.slug in papers else a.slug,
            "kind": a.kind,
            "methods": list(a.methods),
            "title": a.title,
        }
        for a in registry.all_artifacts()
    ]
    if _output_format(args) == "json":
        print(json.dumps(items, indent=2))
        return
    rows = [
        (i["id"], i["paper_name"], i["kind"], "+".join(i["methods"]), i["title"]) for i in items
    ]
    print("\n".join(_table(("artifact", "paper", "kind", "methods", "title"), rows)))


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Left-aligned columns under a header and a rule; every cell terminal-safe."""
    cells = [[_one_line(str(c)) for c in row] for row in [header, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def _fmt(value: Any) -> str:
    """A number to 6 significant digits; null, NaN and ±inf as an em dash (as the JSON's
    null: an undefined quantity, or interval, is not a number — "nan" was printed as one)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


#: At most this many elements of a list are shown as rows of a table (the JSON has them all).
TABLE_ITEMS = 12


def _result_rows(out: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(quantity, value, 95% interval) rows of a result, lists one row per element."""
    import numpy as np

    from lbrepro.core.rows import NO_CI, not_converged

    cis = out.get("ci") if isinstance(out.get("ci"), dict) else {}
    # A run that did not converge: its estimates say why they have no interval.
    withheld = not_converged(out.get("converged"))
    rows: list[tuple[str, str, str]] = []

    def add(
        name: str, value: Any, low: Any = None, high: Any = None, estimate: bool = False
    ) -> None:
        shown = "" if low is None or high is None else f"[{_fmt(low)}, {_fmt(high)}]"
        if not shown and estimate and withheld and value is not None:
            shown = NO_CI
        rows.append((name, _fmt(value), shown))

    for key, value in out.items():
        if key in ("model", "params", "ci", "notes", "warnings", "unresolved"):
            continue
        if isinstance(value, dict):
            for sub, item in value.items():
                if not isinstance(item, dict | list):
                    add(f"{key}.{sub}", item)
            continue
        if not isinstance(value, list):
            add(key, value, *_bounds(value, cis.get(key)), estimate=key in cis)
            continue
        if any(isinstance(v, dict) for v in value):
            for i, item in enumerate(value[:TABLE_ITEMS]):
                for sub, x in item.items() if isinstance(item, dict) else ():
                    if not isinstance(x, dict | list):
                        add(f"{key}[{i}].{sub}", x)
            continue
        flat = np.array(value, dtype=object)
        if flat.dtype == object and any(isinstance(v, list) for v in flat.ravel()):
            add(key, json.dumps(value)[:60] + "…")  # ragged: as text
            continue
        layout = _interval_layout(value, cis.get(key)) if cis.get(key) is not None else None
        for n, index in enumerate(np.ndindex(flat.shape)):
            if n == TABLE_ITEMS:
                rows.append((f"{key}[…]", f"{flat.size - n} more in --format json", ""))
                break
            bounds = (layout[0][index], layout[1][index]) if layout is not None else (None, None)
            bounds = tuple(None if b is None or b != b else float(b) for b in bounds)
            add(key + "".join(f"[{i}]" for i in index), flat[index], *bounds, estimate=key in cis)
    return rows


def _bounds(value: Any, ci: Any) -> tuple[Any, Any]:
    """(low, high) of a scalar's interval, or (None, None)."""
    if isinstance(ci, list) and len(ci) == 2 and not isinstance(ci[0], list):
        return ci[0], ci[1]
    return None, None


def _print_result(out: dict[str, Any], args: argparse.Namespace) -> None:
    """The result as JSON, or as a table for a person (see :func:`_output_format`)."""
    if _output_format(args) == "json":
        print(json.dumps(_json_safe(out), indent=2, allow_nan=False))
        return
    params = ", ".join(f"{k} = {_fmt(v)}" for k, v in out.get("params", {}).items())
    print(_one_line(f"lbrepro {args.command} {out['model']}: {params}"))
    print()
    print("\n".join(_table(("quantity", "value", "95% interval"), _result_rows(out))))
    unresolved = out.get("unresolved")
    if unresolved:
        print()
        print(_one_line("unresolved (—): " + ", ".join(unresolved["quantities"])))
    for note in out.get("warnings", ()):
        print(_one_line(f"warning: {note}"))


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


def _diff(run_a: str, run_b: str) -> None:
    from lbrepro.report.diff import diff_trees, format_diff, load_tree

    print("\n".join(format_diff(diff_trees(load_tree(run_a), load_tree(run_b)), run_a, run_b)))


def _run_model(args: argparse.Namespace) -> dict[str, Any]:
    """Call the model's function with the parsed flags; the JSON the command prints."""
    model = models()[args.model]
    params = model.params_for(args.command)
    kwargs = {p.name: getattr(args, p.name) for p in params}
    if args.command == "simulate" and model.takes("simulate", "replace"):
        kwargs["replace"] = args.replace
    if model.check is not None:
        model.check(args.command, kwargs)
    echo = {k: v for k, v in kwargs.items() if k not in RUN_OPTIONS}
    # A solver's warnings (an integral slowly convergent, …) never reach the terminal: with a
    # result they are part of its JSON ("warnings"); with an error, the error line says it all.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if args.command == "solve":
            result = _solve(model, kwargs, args.max_seconds)
        else:
            if model.takes("simulate", "progress"):
                # Events ≈ arrivals + departures (slots for a slotted model).
                events = 2.0 * kwargs.get(model.load, 0.5) * kwargs.get("N", 1) * kwargs["horizon"]
                progress = {"on": True, "off": False}.get(args.progress, events >= PROGRESS_EVENTS)
                kwargs["progress"] = progress
            from lbrepro.sim.runlength import event_budget

            def run() -> tuple[dict[str, Any], list[str]]:
                # Progress is best effort: a closed or full stderr never costs the result.
                with warnings.catch_warnings(record=True) as inner, _logged() as logged:
                    warnings.simplefilter("always")
                    with event_budget(args.max_events), _best_effort_stderr():
                        simulated = _as_json(model.simulate(**kwargs))
                return simulated, [_note(w) for w in inner] + logged

            result, notes = interruptible(run)
            for note in notes:
                warnings.warn(note, _Relayed, stacklevel=1)
            _check_measured(result, kwargs, model.load)
            result = _judge_run(model, kwargs, result)
    out = {"model": model.name, "params": echo} | result
    notes = sorted({_note(w) for w in caught})
    if notes:
        out["warnings"] = notes
    return out


def _solve(model: Model, kwargs: dict[str, Any], max_seconds: float | None) -> dict[str, Any]:
    """``model.solve(**kwargs)`` as JSON, in a child process (:func:`interruptible`): Ctrl-C
    stops it at once, and so does its time budget, whatever its numerics. A mean-field ODE near
    capacity crept on in tiny steps for hours, and the value iteration of a K-server chain at
    p/Σq = 0.99 for over ten minutes, with no answer and no line: one line instead."""
    from lbrepro.core.equilibrium import time_budget

    seconds = SOLVE_SECONDS if max_seconds is None else max_seconds

    def run() -> tuple[dict[str, Any], list[str]]:
        with warnings.catch_warnings(record=True) as inner, _logged() as logged:
            warnings.simplefilter("always")
            # The ODE's own budget says what did not settle (IntegrationTimeoutError).
            budget = time_budget(seconds) if math.isfinite(seconds) else contextlib.nullcontext()
            with budget:
                solved = _as_json(model.solve(**kwargs))
        return solved, [_note(w) for w in inner] + logged

    try:
        grace = min(SOLVE_GRACE, max(seconds, 1.0))
        result, notes = interruptible(run, seconds=seconds + grace)
    except TimeoutError:
        raise ConvergenceError(
            f"the solve did not finish within {seconds:g} s (--max-seconds): at these "
            "parameters its numerics converge too slowly (a load near capacity needs a large "
            "state space); raise --max-seconds (inf: no limit) or lower the load"
        ) from None
    for note in notes:
        warnings.warn(note, _Relayed, stacklevel=1)
    return result


@contextlib.contextmanager
def _logged() -> Iterator[list[str]]:
    """Collect what lbrepro's modules log at warning level, as one line each.

    A library module logs (a run that did not converge, say) for the workflow's log files;
    here that goes into the result's ``warnings`` like any other, not onto the terminal,
    where Python's last-resort handler would print it without the ``lbrepro:`` prefix.
    """
    lines: list[str] = []

    class _Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(_one_line(record.getMessage()))

    logger = logging.getLogger("lbrepro")
    handler, propagate = _Collect(logging.WARNING), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


class _Relayed(UserWarning):
    """A warning of the simulation's process, already formatted, relayed to this one."""


def _note(w: warnings.WarningMessage) -> str:
    """A caught warning as one line of the result's ``warnings``."""
    first = str(w.message).splitlines()[0] if str(w.message) else ""
    return first if w.category is _Relayed else f"{w.category.__name__}: {first}"


def interruptible(function: Callable[[], Any], seconds: float | None = None) -> Any:
    """``function()``, run in a child process, so that Ctrl-C stops it at once.

    A numba kernel runs for seconds to minutes without returning to Python, and Python acts
    on a signal only between bytecodes: Ctrl-C would wait for the kernel. Here the parent
    waits on a pipe, where SIGINT lands at once (KeyboardInterrupt); it kills the child and
    re-raises. The child ignores SIGINT (a terminal sends it to both: the parent decides) and
    sends back its result, or its exception (re-raised here as the same class, same fields).
    After ``seconds`` of wall time (None or inf: no limit) the child is killed and
    :class:`TimeoutError` raised. Without ``fork`` (not POSIX) the function runs in this
    process, without a time limit.
    """
    import pickle
    import signal
    import traceback

    if not hasattr(os, "fork"):
        return function()
    read_fd, write_fd = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.close(read_fd)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            _die_with(parent)
            try:
                payload: Any = ("result", function())
            except BaseException as err:  # relayed whatever it is
                payload = ("error", type(err), err.args, dict(vars(err)))
                if not isinstance(err, LbreproError | OSError | KeyboardInterrupt):
                    payload = ("error", RuntimeError, (traceback.format_exc(),), {})
            try:
                data = pickle.dumps(payload)
            except Exception:
                data = pickle.dumps(("error", RuntimeError, (traceback.format_exc(),), {}))
            with os.fdopen(write_fd, "wb") as pipe:
                pipe.write(data)
        except BaseException:
            code = 1
        finally:
            os._exit(code)  # no atexit, no flush of the parent's buffers a second time
    os.close(write_fd)
    previous = _end_child_on_termination(pid)
    try:
        data = _read_until(read_fd, seconds)
    except BaseException:
        _end_child(pid)
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    _, status = os.waitpid(pid, 0)
    if not data:
        raise LbreproError(
            f"the computation's process ended without a result (wait status {status}): "
            "out of memory?"
        )
    payload = pickle.loads(data)
    if payload[0] == "result":
        return payload[1]
    _, cls, error_args, fields = payload
    err = cls.__new__(cls, *error_args)
    err.args = error_args
    err.__dict__.update(fields)
    raise err


def _end_child(pid: int) -> None:
    """Kill the child ``pid`` and reap it (it may be gone already)."""
    import signal

    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.waitpid(pid, 0)


def _end_child_on_termination(pid: int) -> dict[int, Any]:
    """SIGTERM and SIGHUP (a ``kill``, a closed terminal) end the child ``pid`` first, then
    this process by the same signal, as it would have ended without the child: the child ran
    its kernel on, orphaned, for minutes. The handlers replaced (to restore); none off the
    main thread, where no handler can be set, or where a signal is ignored (``nohup``)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}

    def end(signum: int, frame: Any) -> None:
        _end_child(pid)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    previous = {}
    for signum in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if signum is not None and signal.getsignal(signum) is signal.SIG_DFL:
            previous[signum] = signal.signal(signum, end)
    return previous


def _die_with(parent: int) -> None:
    """In the child: end when the parent ``parent`` ends, however it ends (a SIGKILL too, on
    Linux, through PR_SET_PDEATHSIG), so that no kernel runs on for nobody."""
    import signal

    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            import ctypes

            PR_SET_PDEATHSIG = 1
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent ended before the call above
        os._exit(1)


def _read_until(fd: int, seconds: float | None) -> bytes:
    """All of pipe ``fd`` up to its end (then closed); TimeoutError once ``seconds`` of wall
    time have passed without its end (None or inf: no limit)."""
    import select
    import time

    deadline = None if seconds is None or not math.isfinite(seconds) else time.monotonic() + seconds
    chunks: list[bytes] = []
    try:
        while True:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    raise TimeoutError(f"no result within {seconds:g} s")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


#: A run with fewer events than this measured nothing worth an interval.
MIN_EVENTS = 1


def _check_measured(result: dict[str, Any], kwargs: dict[str, Any], load: str) -> None:
    """Refuse a run too short to measure anything: no event at all — the start
    state reported as a measurement, with a zero-width interval — fewer events than batch
    means, or, for sojourn times, no job arriving."""
    events = result.get("events_total", result.get("events"))
    horizon = kwargs.get("horizon")
    batches = result.get("batches")
    if isinstance(events, int | float) and events < MIN_EVENTS:
        raise ConfigError(
            "horizon",
            f"the run took no events in horizon {horizon:g}: nothing was measured (the start "
            "state is not a measurement); lengthen --horizon",
        )
    if isinstance(events, int | float) and isinstance(batches, int) and events < batches:
        raise ConfigError(
            "horizon",
            f"the run took {events:g} events for {batches} batch means: too short to measure; "
            "lengthen --horizon",
        )
    if result.get("arrivals") == 0:
        raise ConfigError(
            "horizon",
            f"no job arrived in horizon {horizon:g} (--{load} {kwargs.get(load, 0):g}): no "
            "sojourn time was measured; lengthen --horizon or raise --" + load,
        )


def _measured_time(result: dict[str, Any], kwargs: dict[str, Any]) -> float:
    """The simulated time the estimates average over: horizon minus the warm-up used; for a
    slotted model (whittle: ``--horizon`` counts the slots after the warm-up, and MSER-5 may
    discard more), the slots it measured, ``slots`` in its result."""
    if isinstance(result.get("slots"), int | float) and not isinstance(result["slots"], bool):
        return max(float(result["slots"]), 0.0)
    horizon = float(result.get("horizon") or kwargs["horizon"])
    warmup = result.get("warmup_used", result.get("warmup", kwargs.get("warmup")))
    warmup = 0.1 * float(kwargs["horizon"]) if warmup is None else float(warmup)
    return max(horizon - warmup, 0.0)


def _work_conservation(
    model: Model, kwargs: dict[str, Any], result: dict[str, Any]
) -> dict[str, Any] | None:
    """The pipeline's work-conservation diagnostic on a command-line run, or None if the model
    has no such identity: the run's busy fraction must be consistent with its exact value (the
    99.9% interval plus the resolution 1/(N·T) covers it), else the run is not in equilibrium
    and none of its numbers can be trusted.

    A run flagged converged = False has no honest interval to show that the identity holds:
    ``held`` is then null ("not judged"), unless even its own interval excludes the exact
    value (held false: u₁ = 0.0007 where ρ = 0.7 says so whatever the interval's width)."""
    conserved = model.conservation(result) if model.conservation is not None else None
    if conserved is None or not all(
        math.isfinite(v) for v in (conserved.mean, conserved.low, conserved.high)
    ):
        return None
    from lbrepro.core.rows import not_converged
    from lbrepro.core.stats import Estimate
    from lbrepro.core.verdicts import REPRODUCED
    from lbrepro.judging.tails import work_conservation

    N = int(result.get("N") or kwargs.get("N") or 1)
    # The resolution floor is step/T: 1/(N·T) for a fraction of N servers, min q_k/T for
    # whittle's served capacity (work_conservation takes it as a number of servers).
    servers = 1.0 / conserved.step if conserved.step and conserved.step > 0 else N
    batches = int(result.get("batches") or kwargs.get("batches") or 20)
    half = (conserved.high - conserved.low) / 2
    u1 = Estimate(conserved.mean, conserved.low, conserved.high, half, batches, N)
    verdict = work_conservation(u1, conserved.exact, servers, _measured_time(result, kwargs))
    held: bool | None = verdict.outcome == REPRODUCED
    if held and not_converged(result.get("converged")):
        held = None
    return {
        "identity": conserved.what,
        "exact": conserved.exact,
        "measured": conserved.mean,
        "interval": [conserved.low, conserved.high],
        "statistic": verdict.measured,
        "held": held,
    }


def _interval_layout(value: Any, ci: Any) -> tuple[Any, Any] | None:
    """(lows, highs) of a result's CI, as arrays shaped like its value, or None if the CI's
    shape is neither [lows, highs] nor a [low, high] pair per element."""
    import numpy as np

    def array(x: Any) -> Any:
        return np.array(x if x is not None else np.nan, dtype=float)

    try:
        v, c = array(value), array(ci)
    except (TypeError, ValueError):
        return None
    options = []
    if c.shape == (2, *v.shape):
        options.append((c[0], c[1]))
    if c.shape == (*v.shape, 2):
        options.append((c[..., 0], c[..., 1]))
    with np.errstate(invalid="ignore"):
        for low, high in options:  # the reading whose intervals hold their values
            if np.all(np.isnan(v) | np.isnan(low) | ((low <= v + 1e-12) & (v <= high + 1e-12))):
                return low, high
    return options[0] if options else None


#: Estimates constant by definition, whose zero-width interval is exact: the fraction of
#: servers with at least 0 jobs (``u[j][0]``, ``u_all[0]``, ``u[0]`` = 1).
_EXACT_BY_DEFINITION = re.compile(r"u(_all)?(\[\d+\])*\[0\]")


def _exact_by_definition(name: str, value: Any) -> bool:
    """Whether ``name`` (``u[0][0]``) is constant by definition; so is the routing fraction
    of a single server type (every arrival goes to it)."""
    if _EXACT_BY_DEFINITION.fullmatch(name):
        return True
    return name == "route[0]" and isinstance(value, list) and len(value) == 1


def _unresolved(result: dict[str, Any]) -> list[str]:
    """Estimates the run did not resolve — the same in every batch, reported with a
    zero-width interval (0 in [0, 0], or 1 in [1, 1] for a queue that never emptied) — set to
    null (value and interval) in ``result``; their names (``u[0][5]``). Quantities constant
    by definition (:func:`_exact_by_definition`) keep their exact value."""
    import numpy as np

    names = []
    cis = result.get("ci")
    if not isinstance(cis, dict):
        return names
    for name, ci in cis.items():
        value = result.get(name)
        layout = _interval_layout(value, ci) if value is not None and ci is not None else None
        if layout is None:
            continue
        v = np.array(value, dtype=float)
        low, high = layout
        # A zero-width interval on a measured quantity: every batch saw the same value, i.e.
        # the run never saw it change (a queue that never emptied read as u_k = 1 in [1, 1]).
        zero = np.atleast_1d((low == v) & (high == v))
        if v.ndim == 0 and _exact_by_definition(name, value):
            continue
        for index in zip(*np.nonzero(zero), strict=True) if v.ndim else ():
            label = name + "".join(f"[{int(i)}]" for i in index)
            if _exact_by_definition(label, value):
                zero[index] = False
        if not zero.any():
            continue
        if v.ndim == 0:
            result[name], cis[name] = None, None
            names.append(name)
            continue
        pairs = np.array(ci, dtype=object).shape == (*v.shape, 2)
        for index in zip(*np.nonzero(zero), strict=True):
            names.append(name + "".join(f"[{int(i)}]" for i in index))
            _set(result[name], index, None)
            if pairs:
                _set(cis[name], index, [None, None])
            else:
                _set(cis[name][0], index, None)
                _set(cis[name][1], index, None)
    return names


def _set(nested: Any, index: Sequence[Any], value: Any) -> None:
    """``nested[i][j]… = value`` for a nested list."""
    for i in index[:-1]:
        nested = nested[int(i)]
    nested[int(index[-1])] = value


def _lengthen_advice(model: Model) -> str:
    """What may bring a run to equilibrium, naming only the flags ``model`` has: "lengthen
    --horizon, raise --N or --warmup" (whittle has no --N: its servers are --q)."""
    flags = {p.name for p in model.params_for("simulate")}
    raise_ = [f"--{name}" for name in ("N", "warmup") if name in flags]
    advice = "lengthen --horizon" if "horizon" in flags else "run longer"
    if raise_:
        advice += ", raise " + " or ".join(raise_)
    return advice


def _judge_run(model: Model, kwargs: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """The pipeline's checks on a command-line simulation: work conservation (a failure is a
    stderr line and ``"work_conservation": {"held": false, …}``), and estimates the run did not
    resolve, reported as null under ``"unresolved"`` with the events a run would need (never
    as 0 in [0, 0], which reads as a certain answer)."""
    result = dict(result)
    notes: list[str] = []
    conserved = _work_conservation(model, kwargs, result)
    if conserved is not None:
        result["work_conservation"] = conserved
        if conserved["held"] is False:
            lo, hi = conserved["interval"]
            notes.append(
                f"work conservation fails ({conserved['identity']}): measured "
                f"{conserved['measured']:.4g} [{lo:.4g}, {hi:.4g}], exact "
                f"{conserved['exact']:.4g}; the run is not in equilibrium and its numbers are "
                f"not to be trusted ({_lengthen_advice(model)})"
            )
    names = _unresolved(result)
    if names:
        events = result.get("events_total", result.get("events"))
        events = float(events) if isinstance(events, int | float) else math.nan
        load = float(kwargs.get(model.load, 0.0))
        servers = 1 if model.load == "p" else int(kwargs.get("N") or 1)
        arrivals = load * servers * _measured_time(result, kwargs)
        # Too few arrivals: a run long enough for about ten of them; else, beyond this run.
        needed = events * 10.0 / arrivals if 0 < arrivals < 10 else math.nan
        need = (
            f"about {needed:.2g} events would give ten arrivals"
            if math.isfinite(needed)
            else f"it needs more than this run's {events:.4g} events"
        )
        result["unresolved"] = {"quantities": names, "events": events, "needs_events": needed}
        shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        notes.append(
            f"not resolved by this run (constant throughout its {events:.4g} events, reported as "
            f"null): {shown}; {need}"
        )
    withheld = _withhold_intervals(result)
    if withheld:
        shown = ", ".join(withheld[:6]) + (" and more" if len(withheld) > 6 else "")
        notes.append(
            "no interval is shown: the run did not converge, so none of its intervals is "
            f"honest (its warning says why); {shown} have their values alone"
        )
    if notes:
        result["notes"] = notes
    return result


def _withhold_intervals(result: dict[str, Any]) -> list[str]:
    """A run flagged ``converged = False`` has no honest interval (the relaxation check,
    :func:`lbrepro.core.rows.not_converged`): its estimates keep their values, their
    intervals become null, as the pipeline's figures and summaries leave them out; the names
    of the estimates whose interval was withheld."""
    from lbrepro.core.rows import not_converged

    cis = result.get("ci")
    if not isinstance(cis, dict) or not not_converged(result.get("converged")):
        return []
    names = [name for name, ci in cis.items() if ci is not None]
    result["ci"] = dict.fromkeys(cis)
    return names


class _BestEffort(io.TextIOBase):
    """A text stream whose write failures (closed, full disk) are dropped, not raised."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        if self._inner is not None:
            try:
                self._inner.write(text)
            except (OSError, ValueError, AttributeError):
                self._inner = None
        return len(text)

    def flush(self) -> None:
        if self._inner is not None:
            try:
                self._inner.flush()
            except (OSError, ValueError, AttributeError):
                self._inner = None

    def isatty(self) -> bool:
        try:
            return bool(self._inner.isatty())
        except (OSError, ValueError, AttributeError):
            return False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._inner, "encoding", None) or "utf-8"


@contextlib.contextmanager
def _best_effort_stderr() -> Iterator[None]:
    """Run the block with a stderr whose failures are dropped (progress bars)."""
    old = sys.stderr
    sys.stderr = _BestEffort(old)
    try:
        yield
    finally:
        sys.stderr = old


def _say(text: str) -> None:
    """One line on stderr, if stderr can take it (a closed stderr must not raise)."""
    try:
        if sys.stderr is not None:
            print(text, file=sys.stderr)
            sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _check_environment() -> None:
    """Environment variables that would crash a solver or a kernel deep inside numba, or that
    numba ignores with a warning: one line naming the variable (``NUMBA_NUM_THREADS=0`` was a
    42-line traceback). Runs before the models (and so numba) are imported."""
    value = os.environ.get("NUMBA_NUM_THREADS")
    if value is not None:
        try:
            ok = int(value) >= 1
        except ValueError:
            ok = False
        if not ok:
            raise ConfigError("NUMBA_NUM_THREADS", f"must be a whole number >= 1, got {value!r}")
    if not any(name.startswith("NUMBA_") for name in os.environ):
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            import numba  # noqa: F401  (reads every NUMBA_* variable)
        except Exception as err:  # numba's own configuration errors, whatever their type
            first = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise ConfigError(
                "environment", f"numba cannot start ({first}): check the NUMBA_* variables"
            ) from None
    for w in caught:
        found = re.search(
            r"variable '(\w+)' is defined but its associated value '(.*?)'", str(w.message)
        )
        if found:
            raise ConfigError(found.group(1), f"numba cannot read the value {found.group(2)!r}")


def _tolerant_streams() -> None:
    """Characters the terminal's encoding lacks (``PYTHONIOENCODING=ascii``) are escaped,
    not a UnicodeEncodeError: titles hold ρ, λ and dashes."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(OSError, ValueError):
                reconfigure(errors="backslashreplace")


def _as_json(result: Any) -> dict[str, Any]:
    """A model's result as a JSON-ready mapping (``to_json()``, ``to_dict()`` or a mapping)."""
    for method in ("to_json", "to_dict"):
        if hasattr(result, method):
            return getattr(result, method)()
    return dict(result)


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
    model = models()[args.model]
    flags = {p.name for p in model.params}
    key = getattr(err, "key", None)
    if isinstance(err, ConfigError) and key in flags:
        return f"--{key}: {err.message}"
    if isinstance(err, UnstableError):
        return f"--{model.load}: {text.removeprefix(f'{model.load}: ')}"
    return text


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lbrepro`` console script; returns the exit code.

    Ctrl-C at any moment (importing, building the parser, simulating) is one line and exit
    code 130. As the process's own entry point (``argv`` None) it then ends at once: the
    interpreter's teardown with numba and LLVM loaded takes seconds on a busy machine.
    """
    try:
        return _main(argv)
    except KeyboardInterrupt:
        code = 130
    except SystemError as err:
        # Ctrl-C inside numba's boxing of a kernel's results surfaces as a SystemError chain.
        cause: BaseException | None = err
        while cause is not None and not isinstance(cause, KeyboardInterrupt):
            cause = cause.__cause__ or cause.__context__
        if cause is None:
            raise
        code = 130
    _say("lbrepro: interrupted")
    if argv is None:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stdout.flush()
        os._exit(code)
    return code


def _main(argv: Sequence[str] | None) -> int:
    """:func:`main` but for interruption."""
    _tolerant_streams()
    if sys.stdout is None:  # started with stdout closed (`lbrepro list >&-`)
        _say("lbrepro: error: stdout is closed: nowhere to write the result")
        return EXIT_USAGE
    try:
        _check_environment()
    except ConfigError as err:
        _say(f"lbrepro: error: {_one_line(str(err))}")
        return EXIT_USAGE
    args = build_parser().parse_args(argv)
    try:
        if args.command == "list":
            _list(args)
        elif args.command == "validate":
            _validate([*args.configs, *args.configfile])
        elif args.command == "diff":
            _diff(*args.runs)
        else:
            out = _run_model(args)
            for note in out.get("notes", ()):
                _say(f"lbrepro: warning: {note}")
            _print_result(out, args)
        sys.stdout.flush()
    except BrokenPipeError:
        # `lbrepro list | head -1`: the reader has all it wanted; say nothing more.
        _silence_stdout()
        return 0
    except (LbreproError, OSError, MemoryError, RecursionError) as err:
        if isinstance(err, OSError):
            _silence_stdout()  # stdout on a full disk: do not fail again at exit
        if isinstance(err, MemoryError | RecursionError):
            text = f"out of memory or nesting too deep ({type(err).__name__}): {err}"
        else:
            text = _message(err, args)
        _say(f"lbrepro: error: {_one_line(text)}")
        return EXIT_USAGE
    return 0


def _one_line(text: str) -> str:
    """An error message as one terminal-safe line (a path or a value may hold a newline or an
    escape sequence)."""
    from lbrepro.report.diff import safe_text

    return safe_text(text.strip())


def _silence_stdout() -> None:
    """Point stdout at /dev/null: what is buffered is dropped, not flushed again at exit."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
