import pytest

from genenv.config import ConfigError, GenEnvConfig, config_from_dict, field_help, load_config, parse_overrides
from genenv.flows.validation import validate


def test_defaults_follow_the_paper():
    config = GenEnvConfig()
    assert (config.alpha, config.beta, config.k_min, config.rwr_lambda) == (0.5, 2.0, 0.1, 1.0)
    assert config.generator_reward == "alpha_curriculum"
    assert config.agent_kl_coef == 0.001


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"alpha": "1.5"}, "alpha"),
        ({"beta": "0"}, "beta"),
        ({"k_min": "-0.1"}, "k_min"),
        ({"alpha": "0.9", "k_min": "0.2"}, "k_min"),
        ({"variations_per_seed": "0"}, "variations_per_seed"),
        ({"solved_threshold": "0"}, "solved_threshold"),
        ({"generator_reward": "nope"}, "generator_reward"),
        ({"domain": "chess"}, "domain"),
        ({"backend": "tensorrt"}, "backend"),
        ({"generations": "two"}, "generations"),
        ({"warm_start": "maybe"}, "warm_start"),
        ({"colour": "blue"}, "colour"),
        ({"reward_scope": "seed"}, "reward_scope"),
        ({"simulator_update": "ppo"}, "simulator_update"),
        ({"reward_scope": "batch"}, "simulator_update"),  # grpo needs a reward per task
        ({"simulator_invalid_advantage": "0.5"}, "simulator_invalid_advantage"),
        ({"simulator_minibatch_size": "0"}, "simulator_minibatch_size"),
    ],
)
def test_bad_values_fail_naming_the_field(overrides, field):
    """As an entry point checks a config: its values when built, then the names it looks up in a registry."""
    with pytest.raises(ConfigError, match=rf"^{field}:"):
        validate(load_config(None, overrides))


def test_yaml_then_overrides(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("generations: 3\nalpha: 0.4\nwarm_start: false\nagent_lr: 5e-5\n")
    config = load_config(path, {"alpha": "0.45"})
    assert (config.generations, config.alpha, config.warm_start, config.agent_lr) == (3, 0.45, False, 5e-5)


def test_yaml_errors_are_clear(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("generations: [1\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("generations: two\n")
    with pytest.raises(ConfigError, match="^generations: expected int"):
        load_config(wrong)


def test_int_is_accepted_for_float_fields_and_hash_ignores_names():
    a = GenEnvConfig(alpha=1, k_min=0, run_name="a", data_dir="x")
    b = GenEnvConfig(alpha=1.0, k_min=0.0, run_name="b", data_dir="y")
    assert a.alpha == 1.0 and isinstance(a.alpha, float)
    assert a.hash() == b.hash()
    assert a.hash() != GenEnvConfig(alpha=0.4).hash()


def test_overrides_parse():
    assert parse_overrides(["alpha=0.4", "run_name = x=y"]) == {"alpha": "0.4", "run_name": "x=y"}
    with pytest.raises(ConfigError, match="expected key=value"):
        parse_overrides(["alpha"])


def test_every_field_is_documented():
    for name, _kind, _default, help_text in field_help():
        assert len(help_text) > 10, name


def test_overrides_may_be_typed_as_the_prefect_run_form_sends_them() -> None:
    config = load_config(None, {"generations": 1, "alpha": 0.3, "warm_start": False, "run_name": "typed"})
    assert (config.generations, config.alpha, config.warm_start, config.run_name) == (1, 0.3, False, "typed")
    with pytest.raises(ConfigError, match="alpha: expected float"):
        load_config(None, {"alpha": [1]})


def test_a_stored_config_from_before_the_simulator_update_choice_keeps_the_papers_update():
    """Resuming a run stored before reward_scope and simulator_update existed must not switch it to GRPO mid-run."""
    stored = GenEnvConfig().to_dict()
    del stored["reward_scope"], stored["simulator_update"]
    old = config_from_dict(stored)
    assert (old.reward_scope, old.simulator_update) == ("batch", "rwr")
    assert (GenEnvConfig().reward_scope, GenEnvConfig().simulator_update) == ("task", "grpo")


def test_every_simulator_update_the_config_accepts_exists():
    """genenv.config names the updates (the floor cannot import tasks); tasks/simulator_update.py implements them."""
    from genenv import config
    from genenv.tasks.simulator_update import SIMULATOR_UPDATES

    assert set(SIMULATOR_UPDATES) == set(config.SIMULATOR_UPDATES)
