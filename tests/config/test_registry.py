"""The one registry class behind domains, generator rewards, generation backends and benchmarks."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import pytest

from genenv.config import ConfigError, GenEnvConfig
from genenv.curriculum.generator_rewards import GENERATOR_REWARDS, alpha_curriculum_reward, register_reward
from genenv.domains.base import DOMAINS, get_domain, register_domain
from genenv.evaluation.benchmark_registry import BENCHMARKS, get_benchmark, register_benchmark
from genenv.models.backends import BACKENDS, register_backend
from genenv.models.transformers_backend import TransformersBackend
from genenv.registry import PluginError, Registry, UnknownNameError
from genenv.validation import validate


def test_register_then_get():
    colours: Registry[int] = Registry("colour")

    @colours.register("red")
    def red() -> int:
        return 1

    assert colours.get("red") is red and colours["red"] is red
    assert "red" in colours and "blue" not in colours
    assert colours.names() == ["red"]


def test_a_repeat_name_is_refused_and_the_first_entry_stays():
    colours: Registry[str] = Registry("colour")
    colours.register("red")("first")
    with pytest.raises(ValueError, match="colour 'red' is registered twice"):
        colours.register("red")("second")
    assert colours.get("red") == "first"


def test_an_unknown_name_is_named_with_the_known_ones():
    colours: Registry[str] = Registry("colour")
    colours.register("red")("r")
    colours.register("green")("g")
    with pytest.raises(UnknownNameError) as error:
        colours.get("blue")
    assert isinstance(error.value, KeyError)
    assert str(error.value) == "unknown colour 'blue'; known: ['green', 'red']"


@pytest.mark.parametrize(
    ("registry", "register", "kind", "builtin"),
    [
        (DOMAINS, register_domain, "domain", "tool_call"),
        (GENERATOR_REWARDS, register_reward, "generator reward", "alpha_curriculum"),
        (BACKENDS, register_backend, "backend", "transformers"),
        (BENCHMARKS, register_benchmark, "benchmark", "bfcl"),
    ],
)
def test_each_registry_holds_its_builtins_and_refuses_repeats(registry, register, kind, builtin):
    original = registry.get(builtin)
    with pytest.raises(ValueError, match=f"{kind} '{builtin}' is registered twice"):
        register(builtin)(lambda: None)
    assert registry.get(builtin) is original
    with pytest.raises(KeyError, match=rf"unknown {kind} 'nope'; known: \[.*'{builtin}'.*\]"):
        registry.get("nope")


def test_the_builtins_resolve_by_name():
    assert get_domain("tool_call").name == "tool_call"
    assert get_benchmark("bfcl").name == "bfcl"
    assert BACKENDS["transformers"] is TransformersBackend
    assert GENERATOR_REWARDS["alpha_curriculum"] is alpha_curriculum_reward


def test_the_config_names_the_registered_domains_and_how_to_add_one():
    declared = sorted(point.name for point in entry_points(group="genenv.domains"))
    assert {"text_game", "tool_call"} <= set(declared)
    assert DOMAINS.names() == declared
    chess = GenEnvConfig(domain="chess")  # the config is data: names are looked up at the entry points
    with pytest.raises(ConfigError) as error:
        validate(chess)
    assert str(error.value) == (
        f"domain: must be one of {declared}; a new domain registers under the entry-point group genenv.domains "
        "(docs/domains.md) (got 'chess')"
    )


def test_the_builtin_domains_are_their_entry_points_once():
    for name in ("text_game", "tool_call"):
        [point] = entry_points(group="genenv.domains", name=name)
        assert DOMAINS.get(name) is point.load()


def _install(site: Path, dist: str, points: dict[str, str], module: str = "") -> None:
    """A distribution as pip lays one out (dist-info with METADATA and entry_points.txt), and its module if any."""
    info = site / f"{dist}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in points.items())
    (info / "entry_points.txt").write_text(f"[genenv.test_colours]\n{lines}")
    if module:
        (site / f"{dist}.py").write_text(module)


def test_entry_points_register_and_a_broken_one_is_named_when_chosen(tmp_path, monkeypatch):
    _install(tmp_path, "colour_plugin", {"red": "colour_plugin:RED", "blue": "colour_plugin:BLUE"}, 'RED = "r"\n')
    monkeypatch.syspath_prepend(tmp_path)
    colours: Registry[str] = Registry("colour", group="genenv.test_colours", guide="the colour guide")
    assert colours.names() == ["blue", "red"] and "blue" in colours
    assert colours.get("red") == "r"
    with pytest.raises(PluginError) as broken:
        colours.get("blue")
    assert str(broken.value).startswith(
        "colour 'blue': entry point 'blue = colour_plugin:BLUE' (group genenv.test_colours, from colour_plugin 1.0) "
        "failed to load: AttributeError"
    )
    with pytest.raises(ValueError, match="colour 'red' is registered twice"):
        colours.register("red")("again")
    with pytest.raises(UnknownNameError) as unknown:
        colours.get("green")
    assert str(unknown.value) == (
        "unknown colour 'green'; known: ['blue', 'red']; a new colour registers under the entry-point group "
        "genenv.test_colours (the colour guide)"
    )


def test_one_name_declared_by_two_packages_is_refused_naming_both(tmp_path, monkeypatch):
    _install(tmp_path, "first_colours", {"red": "first_colours:RED"}, 'RED = "first"\n')
    _install(tmp_path, "second_colours", {"red": "second_colours:RED"}, 'RED = "second"\n')
    monkeypatch.syspath_prepend(tmp_path)
    colours: Registry[str] = Registry("colour", group="genenv.test_colours")
    with pytest.raises(PluginError, match="colour 'red' is registered twice: ") as twice:
        colours.get("red")
    assert "first_colours:RED" in str(twice.value) and "second_colours:RED" in str(twice.value)
