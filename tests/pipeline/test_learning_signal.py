"""The stage-level parts of the learning signal, on a real warehouse and without models: what the simulator is
told, which seeds are held out, and which adapters the KL terms are anchored to."""

import json

import polars as pl
import pytest

from genenv.config import GenEnvConfig
from genenv.runtime.handle import ModelRuntime
from genenv.tasks.adapter_lineage import reference_checkpoints
from genenv.tasks.context import GenerationRef
from genenv.tasks.generate import recent_success_rate
from genenv.tasks.run_records import register_run
from genenv.tasks.seed import seed_pool
from genenv.warehouse.store import Warehouse


def _run(tmp_path, **settings) -> GenerationRef:
    config = GenEnvConfig(data_dir=str(tmp_path), **settings)
    warehouse = Warehouse(config.resolved_warehouse_uri)
    register_run(warehouse, config, "r1")
    return GenerationRef(config.resolved_warehouse_uri, "r1", 0, ModelRuntime())


def _commit(ref: GenerationRef, generation: int, metrics: dict) -> None:
    ref.warehouse.commit_generation(
        ref.run_id,
        generation,
        agent_checkpoint=f"ckpt/g{generation}/agent",
        simulator_checkpoint=f"ckpt/g{generation}/simulator",
        config_hash="h",
        seed=0,
        metrics=metrics,
    )


def test_generation_one_tells_the_simulator_the_held_out_success_of_the_warm_start(tmp_path):
    ref = _run(tmp_path)
    _commit(ref, 0, {"fresh_success": None, "heldout_success": 0.34})
    assert recent_success_rate(GenerationRef(ref.warehouse_uri, ref.run_id, 1, ModelRuntime())) == 0.34
    _commit(ref, 1, {"fresh_success": 0.5, "heldout_success": 0.4})
    assert recent_success_rate(GenerationRef(ref.warehouse_uri, ref.run_id, 2, ModelRuntime())) == 0.5


def test_the_seed_stage_holds_out_whole_function_families(tmp_path):
    ref = _run(tmp_path, heldout_fraction=0.2)
    seed_pool.fn(ref)
    seeds = ref.warehouse.read("tasks", run_id="r1", generation=0)
    train = ref.warehouse.read("pool", run_id="r1", pool="train")["task_id"]
    heldout_families = set(seeds.filter(pl.col("heldout"))["family"])
    train_families = set(seeds.filter(pl.col("task_id").is_in(train.to_list()))["family"])
    assert heldout_families and train_families
    assert not heldout_families & train_families
    assert 0.1 < len(heldout_families) / seeds["family"].n_unique() < 0.3  # a fifth of the families
    assert seeds.filter(pl.col("heldout")).height >= 250  # each with its extension seeds (make_seeds.py)


@pytest.mark.parametrize("warm_start", [True, False])
def test_the_kl_reference_is_the_warm_started_adapter_or_the_base_without_warm_start(tmp_path, warm_start):
    ref = _run(tmp_path, warm_start=warm_start)
    _commit(ref, 0, {})
    _commit(ref, 1, {})
    later = GenerationRef(ref.warehouse_uri, ref.run_id, 2, ModelRuntime())
    expected = ("ckpt/g0/agent", "ckpt/g0/simulator") if warm_start else (None, None)
    assert reference_checkpoints(later) == expected
    assert reference_checkpoints(ref) == (None, None)


def test_a_stored_config_with_a_retired_field_still_loads(tmp_path):
    from genenv.config import ConfigError, config_from_dict

    stored = json.loads(json.dumps(GenEnvConfig().to_dict()))
    stored["agent_steps"] = 1
    assert config_from_dict(stored) == GenEnvConfig()
    stored["no_such_field"] = 1
    with pytest.raises(ConfigError, match="no_such_field: unknown config field"):
        config_from_dict(stored)


def test_the_replay_anchor_draws_gold_training_tasks_a_quarter_of_them_abstentions(tmp_path):
    from genenv.tasks.finetune import replay_tasks

    ref = _run(tmp_path, heldout_fraction=0.2, agent_replay_rows=16)
    seed_pool.fn(ref)
    later = GenerationRef(ref.warehouse_uri, ref.run_id, 1, ModelRuntime())
    chosen = replay_tasks(later)
    train = set(ref.warehouse.read("pool", run_id="r1", pool="train")["task_id"])
    assert len(chosen) == 16 and {t.task_id for t in chosen} <= train  # gold answers of D_train only
    assert sum(t.answer == "[]" for t in chosen) == 4  # 31 of 229 training seeds abstain; the replay holds a quarter
    assert [t.task_id for t in replay_tasks(later)] == [t.task_id for t in chosen]
    assert replay_tasks(_run(tmp_path / "off", heldout_fraction=0.2)) == []
