"""Bad configs are rejected before any job runs, with a message naming the key."""

from __future__ import annotations

import copy

import pytest
import yaml

from lbrepro.config import CONFIG_PATH, config_hash, deep_merge, load_config
from lbrepro.core.errors import ConfigError
from lbrepro.pipeline import validate_config

QUICK = CONFIG_PATH.parent / "quick.yaml"


@pytest.fixture()
def config():
    return load_config(CONFIG_PATH)


def test_shipped_configs_are_valid(config):
    validate_config(config)
    validate_config(load_config(CONFIG_PATH, QUICK))


def test_quick_overrides_merge_like_snakemake(config):
    merged = load_config(CONFIG_PATH, QUICK)
    assert merged["supermarket-tail"]["N"] == 200
    assert merged["supermarket-tail"]["kmax"] == config["supermarket-tail"]["kmax"]
    assert merged["seed"] == config["seed"]


def _set(config, path, value):
    bad = copy.deepcopy(config)
    node = bad
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return bad


@pytest.mark.parametrize(
    ("path", "value", "key"),
    [
        (("supermarket-tail", "rho"), [0.9, 1.0], "supermarket-tail.rho[1]"),  # rho >= 1
        (("supermarket-tail", "rho"), [1.2], "supermarket-tail.rho[0]"),
        (("supermarket-tail", "rho"), [-0.5], "supermarket-tail.rho[0]"),  # negative rate
        (("supermarket-tail", "d"), [2, 0], "supermarket-tail.d[1]"),  # d < 1
        (("supermarket-tail", "N"), "1000", "supermarket-tail.N"),  # wrong type
        (("supermarket-tail", "N"), 10.5, "supermarket-tail.N"),
        (("supermarket-tail", "horizon"), -1, "supermarket-tail.horizon"),
        (("supermarket-tail", "warmup"), 1e9, "supermarket-tail.warmup"),
        (("supermarket-tail", "colour"), "red", "supermarket-tail.colour"),  # unknown key
        (
            ("supermarket-accuracy", "cases"),
            [[0.95, 2], [1.1, 2]],
            "supermarket-accuracy.cases[1][0]",
        ),
        (("supermarket-accuracy", "cases"), [[0.9, 0]], "supermarket-accuracy.cases[0][1]"),
        (("simulation", "batches"), 1, "simulation.batches"),
        (("universality-fluid", "lam"), 1.0, "universality-fluid.lam"),
        (("universality-fluid", "d"), [2, "sqrtM"], "universality-fluid.d[1]"),
        (("universality-fluid", "d"), [0], "universality-fluid.d[0]"),
        (("universality-fluid", "N"), [1, 100], "universality-fluid.N[0]"),
        (("universality-diffusion", "beta"), 0.0, "universality-diffusion.beta"),
        (("universality-diffusion", "beta"), 40.0, "universality-diffusion.beta"),  # β ≥ √N
        (("universality-overhead", "d"), [2, 5000], "universality-overhead.d[1]"),  # d > N
        (("seed",), "abc", "seed"),
        (("sed",), 1, "sed"),  # unknown top-level key (typo)
    ],
)
def test_bad_values_name_the_key(refused, config, path, value, key):
    """A bad value is refused with one line that starts with its key."""
    err = refused(validate_config, _set(config, path, value))
    assert str(err).startswith(key + ":"), str(err)


def test_missing_required_key_is_named(config):
    bad = copy.deepcopy(config)
    del bad["supermarket-tail"]["N"]
    with pytest.raises(ConfigError, match=r"^supermarket-tail\.N: required"):
        validate_config(bad)


def test_unstable_message_says_why(config):
    with pytest.raises(ConfigError, match="unstable"):
        validate_config(_set(config, ("supermarket-tail", "rho"), [1.0]))


def test_deep_merge_replaces_lists_and_merges_mappings():
    base = {"a": {"x": [1, 2], "y": 1}, "b": 2}
    assert deep_merge(base, {"a": {"x": [3]}}) == {"a": {"x": [3], "y": 1}, "b": 2}
    assert base["a"]["x"] == [1, 2]


def test_config_hash_is_order_independent_and_sensitive(config):
    reordered = dict(reversed(list(config.items())))
    assert config_hash(reordered) == config_hash(config)
    assert config_hash(_set(config, ("seed",), 7)) != config_hash(config)


def test_config_readme_describes_every_section():
    """config/README.md (the Snakemake workflow catalog's config page) names every section of
    config.yaml and quick.yaml, so a new artifact cannot arrive undocumented."""
    readme = (CONFIG_PATH.parent / "README.md").read_text(encoding="utf-8")
    sections = set(load_config(CONFIG_PATH)) | set(load_config(QUICK))
    missing = sorted(key for key in sections if f"`{key}`" not in readme)
    assert not missing, f"config/README.md does not describe: {missing}"


def test_workflow_catalog_file_declares_usage():
    """.snakemake-workflow-catalog.yml has the usage keys the catalog reads."""
    path = CONFIG_PATH.parents[1] / ".snakemake-workflow-catalog.yml"
    usage = yaml.safe_load(path.read_text(encoding="utf-8"))["usage"]
    assert {"mandatory-flags", "software-stack-deployment", "report"} <= set(usage)
    assert usage["report"] is True  # `snakemake --report` works (tests/test_workflow.py)


def test_config_error_carries_key_and_message_and_rekeys_without_string_surgery():
    """A ConfigError keeps its key and message apart, so a caller re-keys it under its own
    section (or replaces the key) without slicing the text."""
    err = ConfigError("rho[0]", "load 1.2: must be below 1: the system is unstable")
    assert (err.key, err.message) == ("rho[0]", "load 1.2: must be below 1: the system is unstable")
    assert str(err) == "rho[0]: load 1.2: must be below 1: the system is unstable"
    outer = err.under("supermarket-tail")
    assert isinstance(outer, ConfigError) and outer.key == "supermarket-tail.rho[0]"
    assert outer.message == err.message  # a message holding ": " survives intact
    assert err.under("hetero-tail.systems[1]", key="C").key == "hetero-tail.systems[1].C"
    assert err.under("sec", key="").key == "sec"


@pytest.mark.parametrize(
    ("section", "bad", "says"),
    [
        ("supermarket-tail", "rho: [0.9, 1.2]", "supermarket-tail.rho[1]: load 1.2 >= 1: unstable"),
        ("universality-fluid", "lam: 1.0", "universality-fluid.lam: load 1 >= 1: unstable"),
        ("supermarket-tail", "warmup: 200000", "supermarket-tail.warmup: 200000 must be shorter"),
        ("universality-overhead", "warmup: 1.0e+9", "universality-overhead.warmup: 1e+09 must be"),
    ],
)
def test_stable_load_and_warmup_are_one_rule_everywhere(tmp_path, section, bad, says):
    """ "Load < 1" and "warm-up < horizon" are one shared rule each (lbrepro.core.args), with
    one message, whichever paper's section breaks them."""
    path = tmp_path / "bad.yaml"
    path.write_text(f"{section}:\n  {bad}\n")
    with pytest.raises(ConfigError) as err:
        validate_config(load_config(CONFIG_PATH, path))
    assert str(err.value).startswith(says), str(err.value)
