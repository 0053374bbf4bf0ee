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


def load_config(*paths: str | Path) -> dict[str, Any]:
    """Read YAML config files and merge them left to right (later files override)."""
    config: dict[str, Any] = {}
    for path in paths:
        try:
            with open(path, encoding="utf-8") as fh:
                data = yaml.safe_load(fh) or {}
        except UnicodeDecodeError:
            raise ConfigError(str(path), "not a text file (expected a YAML config)") from None
        except yaml.YAMLError as err:
            raise ConfigError(str(path), f"not valid YAML: {_yaml_problem(err)}") from None
        if not isinstance(data, Mapping):
            raise ConfigError(str(path), "a config file must hold a mapping of keys to values")
        config = deep_merge(config, data)
    return config


def _yaml_problem(err: yaml.YAMLError) -> str:
    """One line: where and what (tabs, an unclosed bracket…), without the YAML excerpt."""
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    hint = " (YAML does not allow tabs for indentation)" if "\\t" in problem else ""
    return f"{where}{problem}{hint}"


def check_finite(value: Any, path: tuple[Any, ...] = ()) -> None:
    """Refuse NaN and ±inf anywhere in the config, naming the key (YAML ``.nan``, ``.inf``)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(_dotted(path), f"must be a finite number, got {value}")
    if isinstance(value, Mapping):
        for k, v in value.items():
            check_finite(v, (*path, k))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            check_finite(v, (*path, i))


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
