"""Loading and validating the pipeline configuration before any job runs.

Three layers: every number must be finite (YAML reads ``.nan`` and ``.inf`` as floats, which
pass any ``minimum``); the JSON schema (``lbrepro/schemas/config.schema.yaml``, shipped inside
the package so a non-editable install finds it) checks types, ranges and unknown keys; each
artifact's ``validate`` then checks relations between keys (stability, warm-up shorter than
the horizon) and its point ids (unique, file-name safe). Every failure is a
:class:`ConfigError` whose message starts with the dotted key that is wrong, e.g.
``supermarket-tail.rho[1]: ...``.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from lbrepro.core.errors import ConfigError
from lbrepro.core.io import FileTooLargeError, NotRegularFileError, read_regular_bounded

REPO_ROOT = Path(__file__).resolve().parents[2]
# The one schema: inside the package (the Snakefile validates with it too).
SCHEMA_PATH = Path(__file__).resolve().parent / "schemas" / "config.schema.yaml"
# The checkout's default config (exists in a source checkout, not in an installed wheel).
CONFIG_PATH = REPO_ROOT / "config" / "config.yaml"


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``override`` into a copy of ``base``: mappings recursively, everything else replaced.

    This is how Snakemake merges ``--configfile`` over ``configfile:``, so the CLI and tests see
    the same config the workflow does.
    """
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


#: Largest config file read (a 10⁵-point sweep written out as lists is ~1 MB). Read from a
#: pipe or ``<(yes 'a: 1')`` too: never more than this.
MAX_CONFIG_BYTES = 8 * 1024 * 1024
#: Deepest nesting of a config (the pipeline's own configs nest 4 levels).
MAX_DEPTH = 32
#: Most values a config may hold once its aliases are expanded (a 400-byte alias bomb holds
#: 10⁹; the full config ~3000).
MAX_NODES = 2_000_000
#: Longest integer literal (10¹⁸ is beyond every bound of the schema).
MAX_INT_DIGITS = 19
#: Snakemake evaluates a config file holding this key as a YTE template: Python code.
YTE_KEY = "__use_yte__"

# YAML 1.1 reads these plain scalars as numbers or booleans other YAML readers (and people)
# read differently: 0100 is 64 (octal), 0x10 is 16, 1:30 is 90 (base 60), 1_000 is 1000,
# yes/no/on/off are booleans.
_SURPRISING_INT = re.compile(
    r"[-+]?(0[0-7_]+|0b[01_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*(:[0-5]?\d)+|\d[\d_]*_[\d_]*)"
)
_SURPRISING_BOOL = re.compile(r"yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF|y|Y|n|N")


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, strict: bounded depth and alias expansion, no duplicate keys,
    no YAML 1.1 surprises (octal, base 60, yes/no), no integer of more than 19 digits."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise yaml.composer.ComposerError(
                    None, None, f"nested more than {MAX_DEPTH} levels deep", mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    continue  # PyYAML refuses unhashable keys itself
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        f"duplicate key {key!r} (first on line {seen[key].line + 1}): "
                        "YAML keeps only the last one",
                        key_node.start_mark,
                    )
                seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: Any) -> Any:
        text = str(node.value)
        if _SURPRISING_INT.fullmatch(text):
            value = super().construct_yaml_int(node)
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"{text} is read by YAML 1.1 as {value} (octal, hexadecimal, base 60 or with "
                "'_'): write the number in plain decimal, or quote it if it is text",
                node.start_mark,
            )
        if len(text.lstrip("+-")) > MAX_INT_DIGITS:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"an integer of {len(text.lstrip('+-'))} digits (at most {MAX_INT_DIGITS})",
                node.start_mark,
            )
        return super().construct_yaml_int(node)

    def construct_yaml_bool(self, node: Any) -> Any:
        text = str(node.value)
        if _SURPRISING_BOOL.fullmatch(text):
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"{text} is read by YAML 1.1 as a boolean: write true or false, or quote it",
                node.start_mark,
            )
        return super().construct_yaml_bool(node)


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _StrictLoader.construct_yaml_int)
_StrictLoader.add_constructor("tag:yaml.org,2002:bool", _StrictLoader.construct_yaml_bool)
_StrictLoader.add_constructor("tag:yaml.org,2002:map", _StrictLoader.construct_yaml_map)


def _expanded_size(node: Any, memo: dict[int, int]) -> int:
    """How many values ``node`` holds with every alias expanded (computed without expanding)."""
    stack = [(node, False)]
    while stack:
        item, done = stack.pop()
        if id(item) in memo:
            continue
        children = item.value if isinstance(item, yaml.SequenceNode) else []
        if isinstance(item, yaml.MappingNode):
            children = [n for pair in item.value for n in pair]
        if done:
            memo[id(item)] = min(1 + sum(memo[id(c)] for c in children), MAX_NODES + 1)
        else:
            stack.append((item, True))
            stack.extend((c, False) for c in children if id(c) not in memo)
    return memo[id(node)]


def read_yaml_text(text: str, where: str) -> Any:
    """Parse YAML strictly (see :class:`_StrictLoader`); ConfigError naming ``where``."""
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node, {}) > MAX_NODES:
            raise ConfigError(
                where,
                f"more than {MAX_NODES} values once its aliases are expanded (an alias bomb?)",
            )
        return loader.construct_document(node)
    except yaml.YAMLError as err:
        raise ConfigError(where, f"not valid YAML: {_yaml_problem(err)}") from None
    except RecursionError:
        raise ConfigError(
            where, f"not valid YAML: nested more than {MAX_DEPTH} levels deep"
        ) from None
    finally:
        loader.dispose()


def _read_regular_file(path: str | Path, where: str) -> bytes:
    """The bytes of a regular file of at most :data:`MAX_CONFIG_BYTES`; ConfigError otherwise.

    A pipe, a FIFO, a device (``/dev/zero``, ``/dev/stdin``), a socket or a directory is
    refused by what it is, before a byte is read: a FIFO without a writer would block, a
    device or a pipe that never ends would be read forever (lbrepro.core.io's bounded reader).
    """
    try:
        return read_regular_bounded(path, MAX_CONFIG_BYTES, what="a config file")
    except NotRegularFileError:
        raise ConfigError(
            where, "not a regular file (a pipe, a device or a directory): give a config file"
        ) from None
    except FileTooLargeError:
        raise ConfigError(
            where, f"larger than {MAX_CONFIG_BYTES // 2**20} MiB: not a config file"
        ) from None
    except OSError as err:
        raise ConfigError(where, f"cannot be read: {err.strerror or err}") from None


def read_config_file(path: str | Path) -> dict[str, Any]:
    """One config file, read strictly and boundedly; ConfigError (one line) if it is not a
    config: not a regular file (a pipe, a FIFO, /dev/zero), too large, not text, not YAML,
    duplicate keys, YAML 1.1 surprises, too deep, an alias bomb, a YTE template, or not a
    mapping."""
    where = str(path)
    raw = _read_regular_file(path, where)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(where, "not a text file (expected a YAML config)") from None
    if "\x00" in text:
        raise ConfigError(where, "not a text file (expected a YAML config)")
    # Before parsing: a YTE template need not be plain YAML, and it is refused for what it is.
    yte = re.search(rf"^[\"']?{YTE_KEY}[\"']?\s*:", text, re.MULTILINE)
    data = read_yaml_text(text, where) if yte is None else None
    if yte is not None or (isinstance(data, Mapping) and YTE_KEY in data):
        raise ConfigError(
            f"{where}: {YTE_KEY}",
            "a YTE template: Snakemake would run the Python code in it; lbrepro configs are "
            "plain YAML (refused)",
        )
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(where, "a config file must hold a mapping of keys to values")
    return dict(data)


#: The file in which a paper package ships the default sections of its artifacts.
PAPER_DEFAULTS = "config.yaml"


def paper_defaults() -> dict[str, Any]:
    """The default config sections that paper packages ship (``<package>/config.yaml``).

    A paper installed as a plugin (entry-point group ``lbrepro.papers``) brings its own
    defaults, so that ``snakemake`` runs it with no file of lbrepro edited; lbrepro's own
    papers keep theirs in ``config/config.yaml`` and ship none. A package may only set its
    own artifacts' sections (ids starting with its slug): it cannot change the seed, the
    shared ``simulation`` keys or another paper.
    """
    from importlib.util import find_spec

    from lbrepro.artifacts.registry import paper_packages

    defaults: dict[str, Any] = {}
    for slug, module in paper_packages().items():
        spec = find_spec(module)
        locations = list(spec.submodule_search_locations or []) if spec else []
        for location in locations:
            path = Path(location) / PAPER_DEFAULTS
            if not path.is_file():
                continue
            for key, section in read_config_file(path).items():
                if not str(key).startswith(f"{slug}-"):
                    raise ConfigError(
                        f"{path}: {key}",
                        f"a paper's defaults may only set its own artifacts ({slug}-…)",
                    )
                defaults[key] = section
    return defaults


def with_paper_defaults(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with the sections plugins ship by default added where it has none (a
    section given in a config file replaces nothing of it: the file's keys win)."""
    return deep_merge(paper_defaults(), config)


def load_config(*paths: str | Path) -> dict[str, Any]:
    """Read YAML config files and merge them left to right (later files override), over the
    default sections of papers installed as plugins (:func:`with_paper_defaults`)."""
    config: dict[str, Any] = {}
    for path in paths:
        config = deep_merge(config, read_config_file(path))
    return with_paper_defaults(config) if paths else config


def retype_command_line(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``--config`` values as YAML reads them in a file: Snakemake parses a nested value
    (``simulation={batches: 5}``) with YAML's BaseLoader, where every scalar is text, so
    ``5`` arrived as ``'5'``. The nested values of ``overrides`` with each text scalar read
    again strictly (``5`` → 5, ``0.9`` → 0.9, ``H2`` stays text); top-level scalars, which
    Snakemake types itself, are left out.

    A 400-byte alias bomb given with ``--config`` (``x={a: &a [x,x,…], b: [*a,*a,…], …}``)
    arrives as lists shared 10⁹ times over: refused first, by its size once shared values are
    counted (:func:`check_finite`), and each shared list is read once, not once per path."""
    check_finite(dict(overrides))
    done: dict[int, Any] = {}

    def retype(value: Any, key: str) -> Any:
        if isinstance(value, Mapping | list) and id(value) in done:
            return done[id(value)]
        if isinstance(value, Mapping):
            done[id(value)] = {k: retype(v, f"{key}.{k}") for k, v in value.items()}
            return done[id(value)]
        if isinstance(value, list):
            done[id(value)] = [retype(v, f"{key}[{i}]") for i, v in enumerate(value)]
            return done[id(value)]
        if isinstance(value, str):
            parsed = read_yaml_text(value, key)
            return parsed if isinstance(parsed, int | float | bool) or parsed is None else value
        return value

    return {
        key: retype(value, key)
        for key, value in overrides.items()
        if isinstance(value, Mapping | list)
    }


def _yaml_problem(err: yaml.YAMLError) -> str:
    """One line: where and what (tabs, an unclosed bracket…), without the YAML excerpt."""
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    hint = " (YAML does not allow tabs for indentation)" if "\\t" in problem else ""
    return f"{where}{problem}{hint}"


def check_finite(value: Any, path: tuple[Any, ...] = ()) -> None:
    """Refuse NaN and ±inf anywhere in the config, naming the key (YAML ``.nan``, ``.inf``);
    and a config too deep, too large once shared values are counted (an alias bomb loaded by
    Snakemake itself), or holding an integer of more than :data:`MAX_INT_DIGITS` digits.

    Iterative: a config nested 5000 deep gives one line, not a RecursionError.
    """
    if isinstance(value, Mapping):  # shared values first: counted without expanding them
        memo: dict[int, int] = {}
        for key, item in value.items():
            if _value_count(item, memo) > MAX_NODES:
                raise ConfigError(
                    _dotted((*path, key)),
                    f"holds more than {MAX_NODES} values once shared ones are expanded "
                    "(an alias bomb?)",
                )
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, path)]
    count = 0
    while stack:
        item, where = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise ConfigError(
                _dotted(where), f"the config holds more than {MAX_NODES} values (an alias bomb?)"
            )
        if len(where) > MAX_DEPTH:
            raise ConfigError(_dotted(where[:MAX_DEPTH]), f"nested more than {MAX_DEPTH} levels")
        if isinstance(item, float) and not math.isfinite(item):
            raise ConfigError(_dotted(where), f"must be a finite number, got {item}")
        if isinstance(item, int) and not isinstance(item, bool) and abs(item) >= 10**MAX_INT_DIGITS:
            raise ConfigError(
                _dotted(where), f"an integer of more than {MAX_INT_DIGITS} digits is out of range"
            )
        if isinstance(item, Mapping):
            stack.extend((v, (*where, k)) for k, v in reversed(list(item.items())))
        elif isinstance(item, list | tuple):
            stack.extend((v, (*where, i)) for i, v in reversed(list(enumerate(item))))


def _value_count(value: Any, memo: dict[int, int]) -> int:
    """How many values ``value`` holds, shared lists and mappings counted each time they
    occur, computed once per distinct object (iteratively)."""
    stack = [(value, False)]
    while stack:
        item, done = stack.pop()
        if id(item) in memo or not isinstance(item, Mapping | list | tuple):
            continue
        children = list(item.values()) if isinstance(item, Mapping) else list(item)
        if done:
            total = 1 + sum(
                memo.get(id(c), 1) if isinstance(c, Mapping | list | tuple) else 1 for c in children
            )
            memo[id(item)] = min(total, MAX_NODES + 1)
        else:
            stack.append((item, True))
            stack.extend((c, False) for c in children)
    return memo.get(id(value), 1)


def error_line(err: ConfigError) -> str:
    """The workflow's one line for a bad config, terminal-safe: a key or a value is the
    user's text (a key ``"\\e[2J"`` reached the terminal as an escape sequence)."""
    from lbrepro.report.diff import safe_text

    return f"invalid configuration: {safe_text(str(err))}"


def _dotted(path: Any) -> str:
    key = ""
    for part in path:
        key += f"[{part}]" if isinstance(part, int) else (f".{part}" if key else str(part))
    return key or "<config>"


def _schema_error(error: Any) -> ConfigError:
    """Turn a jsonschema ValidationError into a ConfigError that names the offending key."""
    path = list(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
        allowed = set(error.schema.get("properties", {}))
        unknown = sorted(k for k in error.instance if k not in allowed)
        known = ", ".join(sorted(allowed))
        return ConfigError(_dotted([*path, unknown[0]]), f"unknown key (known keys: {known})")
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return ConfigError(_dotted([*path, missing]), "required key is missing")
    message = error.message
    if error.validator == "type" and isinstance(error.instance, str):
        if re.fullmatch(r"[+-]?\d+(\.\d*)?[eE]\d+", error.instance):
            message += " (YAML reads 1e8 as text: write 1.0e+8 or 100000000)"
        elif re.fullmatch(r"[+-]?\d+(\.\d*)?", error.instance):
            message += " (a number written as text: drop the quotes)"
    return ConfigError(_dotted(path), message)


def load_schema(schema_path: str | Path = SCHEMA_PATH) -> dict[str, Any]:
    """Read the base JSON schema (written in YAML): seed, simulation and the shared ``$defs``."""
    with open(schema_path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def assemble_schema(
    sections: Mapping[str, Any], defs: Mapping[str, Any], schema_path: str | Path = SCHEMA_PATH
) -> dict[str, Any]:
    """The base schema with the papers' config sections and ``$defs`` merged in."""
    schema = load_schema(schema_path)
    for key, value in defs.items():
        if key in schema["$defs"]:
            raise ValueError(f"$defs {key!r} is declared by the base schema and a paper")
        schema["$defs"][key] = value
    for key, value in sections.items():
        if key in schema["properties"]:
            raise ValueError(f"config section {key!r} is declared twice")
        schema["properties"][key] = value
    return schema


@functools.lru_cache(maxsize=8)
def _validator(schema_json: str) -> Any:
    """The schema's validator, built once per schema (the CLI and the tests call it often).

    jsonschema is imported here, not at the top: a compute job never validates, and its
    import costs every one of the pipeline's hundreds of jobs.
    """
    import jsonschema

    return jsonschema.Draft202012Validator(json.loads(schema_json))


def schema_bound(definition: str, bound: str = "maximum") -> Any:
    """A bound of one ``$defs`` entry of the base schema: the CLI enforces the config's limits.

    >>> schema_bound("servers")
    10000000
    """
    return _base_schema()["$defs"][definition][bound]


@functools.lru_cache(maxsize=1)
def _base_schema() -> dict[str, Any]:
    """The base schema, read once."""
    return load_schema()


def validate_schema(config: Mapping[str, Any], schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """Check ``config`` for NaN/inf and against ``schema``; the first problem names its key.

    Raises
    ------
    ConfigError
        For the first problem found, its message starting with the dotted key.
    """
    check_finite(config)
    validator = _validator(json.dumps(schema, sort_keys=True))
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        # The most specific error is the most useful one: prefer the deepest path.
        raise _schema_error(max(errors, key=lambda e: len(e.absolute_path)))
    return config


def config_hash(config: Mapping[str, Any]) -> str:
    """A short, order-independent fingerprint of the config (shown in the report's provenance)."""
    canonical = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]
