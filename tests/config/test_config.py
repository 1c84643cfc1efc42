import ast
from pathlib import Path

import pytest

from genenv.config import (
    FIELDS,
    NOT_SHAPING,
    ConfigError,
    GenEnvConfig,
    check_values,
    config_from_dict,
    field_help,
    load_config,
    parse_overrides,
    resume_differences,
)
from genenv.validation import validate

REPO = Path(__file__).resolve().parents[2]


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
    """As an entry point checks a config (`validate`): its values, then the names it looks up in a registry."""
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


def _outside(field: str) -> list[float]:
    """Values just past each finite end of a field's interval (the end itself where it is open)."""
    within = FIELDS[field].metadata["within"]
    low, high = within.ends()
    values = [] if low == float("-inf") else [low if within.text[0] == "(" else low - 1]
    return values + ([] if high == float("inf") else [high if within.text[-1] == ")" else high + 1])


@pytest.mark.parametrize("field", [name for name, f in FIELDS.items() if "within" in f.metadata])
def test_every_bound_in_a_fields_metadata_refuses_a_value_outside_it_naming_the_field(field):
    """No list of names to keep in step: a field whose metadata gives an interval is checked against it."""
    kind = type(FIELDS[field].default)
    for value in _outside(field):
        with pytest.raises(ConfigError, match=rf"^{field}: must be (in |[<>]=? ).* \(got {kind(value)!r}\)$"):
            validate(GenEnvConfig(**{field: kind(value)}))


@pytest.mark.parametrize("field", [name for name, f in FIELDS.items() if "choices" in f.metadata])
def test_every_choice_in_a_fields_metadata_is_enforced(field):
    with pytest.raises(ConfigError, match=rf"^{field}: must be one of \[.*\] \(got 'nope'\)$"):
        validate(GenEnvConfig(**{field: "nope"}))


def test_the_config_is_data_a_bad_value_is_refused_by_validate_not_when_built(tmp_path):
    """Building checks only types; the one call an entry point makes, `validate`, checks the rest."""
    out_of_band = GenEnvConfig(alpha=1.5, data_dir=str(tmp_path))
    assert out_of_band.alpha == 1.5
    with pytest.raises(ConfigError, match=r"^alpha: must be in \[0, 1\] \(got 1.5\)$"):
        validate(out_of_band)
    with pytest.raises(ConfigError, match="^alpha: expected float, got '0.3'"):
        GenEnvConfig(alpha="0.3")
    assert validate(GenEnvConfig(data_dir=str(tmp_path))) == GenEnvConfig(data_dir=str(tmp_path))


def test_rules_that_tie_fields_together_name_the_field_and_why(tmp_path):
    cases = [
        ({"alpha": 0.95, "k_min": 0.1}, r"^k_min: the α band alpha ± k_min \(0.95 ± 0.1\) must lie inside \[0, 1\]"),
        ({"agent_wrong_call_reward": 0.5}, "^agent_wrong_call_reward: must be below solved_threshold"),
        ({"reward_scope": "batch"}, "^simulator_update: grpo needs reward_scope=task"),
        ({"run_name": " "}, "^run_name: must not be empty"),
        ({"lora_targets": "q_proj,,v_proj"}, "^lora_targets: must name modules"),
        ({"simulator_pool_rescore": True}, "^simulator_pool_rescore: re-reads D_env's records for RWR: needs .*=rwr"),
        (
            {"d_train_needs_agreement": True, "reward_scope": "batch", "simulator_update": "rwr"},
            "^d_train_needs_agreement: reads each task's own p̂: needs reward_scope=task",
        ),
    ]
    for values, message in cases:
        with pytest.raises(ConfigError, match=message):
            validate(GenEnvConfig(data_dir=str(tmp_path), **values))
    validate(GenEnvConfig(data_dir=str(tmp_path), reward_scope="batch", simulator_update="rwr"))


def test_replace_takes_typed_values_without_a_text_round_trip():
    config = GenEnvConfig().replace(alpha=0.3, generations=5, warm_start=False)
    assert (config.alpha, config.generations, config.warm_start) == (0.3, 5, False)
    assert GenEnvConfig().replace(alpha=1).alpha == 1.0 and isinstance(GenEnvConfig().replace(alpha=1).alpha, float)
    with pytest.raises(ConfigError, match="^alpha: expected float, got '0.3'"):
        GenEnvConfig().replace(alpha="0.3")  # text is parsed by load_config, which knows it is text
    with pytest.raises(ConfigError, match="^colour: unknown config field"):
        GenEnvConfig().replace(colour="blue")


def test_the_config_hash_of_runs_already_stored_is_unchanged():
    """Runs resume and are compared by these hashes: the default config's and configs/laptop.yaml's, as they were
    before the hash flag moved into the fields' metadata. A new field that shapes results changes them on purpose."""
    assert GenEnvConfig().hash() == "92233c6a5c7bc269"  # + d_train_needs_agreement, simulator_seed_draw, ...
    laptop = load_config(REPO / "configs" / "laptop.yaml")  # precision: auto, stored as the machine resolved it
    assert laptop.replace(precision="bfloat16").hash() == "2063726bbafdbd58"  # + d_train_needs_agreement: true


def test_the_fields_outside_the_hash_are_where_and_under_which_name_results_are_made():
    assert {
        "run_name",
        "vllm_gpu_memory_utilization",
        "data_dir",
        "warehouse_uri",
        "benchmarks_dir",
        "checkpoint_activations",
        "ray_address",
        "rollout_workers",
        "worker_cpus",
        "worker_gpus",
        "trainer_shards",
        "vllm_tensor_parallel",
    } == NOT_SHAPING
    base = GenEnvConfig()
    assert resume_differences(base, base.replace(ray_address="local", data_dir="x", generations=9)) == []
    assert resume_differences(base, base.replace(alpha=0.3)) == ["alpha: 0.5 -> 0.3"]


def test_genenv_config_says_what_each_field_may_take_and_whether_it_is_hashed():
    helps = {name: text for name, _kind, _default, text in field_help()}
    assert helps["alpha"].endswith("Must be in [0, 1].")
    assert helps["generations"].endswith("Must be >= 0.")
    assert helps["reward_scope"].endswith("One of ['task', 'batch'].")
    assert helps["worker_cpus"].endswith("Must be > 0. Outside the config hash.")


CHECKS = {"check_values", "check_built", "check_names", "check_local_paths", "check_cluster", "validate"}


def _checks_called(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    called = {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    called |= {
        node.func.attr for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    }
    return called & CHECKS


def test_entry_points_check_a_config_with_one_call_validate():
    """Every command and flow that checks a config calls `validate` alone (`genenv plan`, which plans a config to run
    elsewhere, checks its values alone); the config module opens no socket and reads no file system path."""
    commands = REPO / "genenv" / "cli" / "commands"
    entry_points = [*sorted(commands.glob("*.py")), *sorted((REPO / "flows").glob("*.py"))]
    calls = {path.relative_to(REPO).as_posix(): _checks_called(path) for path in entry_points}
    assert {path: checks for path, checks in calls.items() if checks - {"validate"}} == {
        "genenv/cli/commands/plan.py": {"check_values"}
    }
    assert {"genenv/cli/commands/evolve.py", "flows/evolve.py", "flows/rerun.py", "flows/evaluate.py"} <= {
        path for path, checks in calls.items() if checks == {"validate"}
    }
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(ast.parse((REPO / "genenv" / "config.py").read_text(encoding="utf-8")))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])
    }
    assert not imported & {"socket", "os", "tempfile", "importlib"}


def test_the_agent_and_the_simulator_have_the_same_update_settings():
    """Each GRPO setting of the agent has its simulator twin (the simulator's clip range was once a silent 0.2)."""
    settings = ("lr", "kl_coef", "epochs", "minibatch_size", "clip_epsilon")
    for role in ("agent", "simulator"):
        assert all(f"{role}_{name}" in FIELDS for name in settings), role
    assert GenEnvConfig().simulator_clip_epsilon == GenEnvConfig().agent_clip_epsilon == 0.2


def test_both_roles_are_updated_with_the_same_set_of_settings():
    """RoleUpdate is the one way a stage configures an update: every setting it has exists for the agent and the
    simulator (the simulator's GRPO once ran without a clip setting of its own), and each reads its own role's."""
    config = GenEnvConfig(agent_lr=1e-4, simulator_lr=1e-3, agent_clip_epsilon=0.1, simulator_clip_epsilon=0.3)
    agent, simulator = config.role_update("agent"), config.role_update("simulator")
    assert (agent.lr, agent.clip_epsilon, simulator.lr, simulator.clip_epsilon) == (1e-4, 0.1, 1e-3, 0.3)
    assert set(agent.grpo()) == {"lr", "kl_coef", "epochs", "minibatch_size", "clip_epsilon"}
    assert agent.sft() == {"lr": 1e-4, "kl_coef": config.agent_kl_coef, "epochs": config.agent_epochs}


@pytest.mark.parametrize("name", ["trainer_shards", "vllm_tensor_parallel"])
def test_settings_planned_but_not_built_are_refused_by_a_run_before_anything_loads(tmp_path, name: str) -> None:
    """By `validate`, which every entry point calls before a run registers; `genenv plan` (values alone) takes them."""
    config = GenEnvConfig(data_dir=str(tmp_path), **{name: 2})
    with pytest.raises(ConfigError, match=f"{name}: planned, not built .* \\(got 2\\)"):
        validate(config)
    assert check_values(config) is config
