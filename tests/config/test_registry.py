"""The one registry class behind domains, generator rewards, generation backends and benchmarks."""

from __future__ import annotations

import pytest

from genenv.config import ConfigError, GenEnvConfig
from genenv.curriculum.rewards import GENERATOR_REWARDS, alpha_curriculum_reward, register_reward
from genenv.domains.base import DOMAINS, get_domain, register_domain
from genenv.evaluation.registry import BENCHMARKS, get_benchmark, register_benchmark
from genenv.models.generation import BACKENDS, TransformersBackend, register_backend
from genenv.registry import Registry, UnknownNameError


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


def test_the_config_names_the_known_entries():
    with pytest.raises(ConfigError, match=r"domain: must be one of \['text_game', 'tool_call'\] \(got 'chess'\)"):
        GenEnvConfig(domain="chess")
