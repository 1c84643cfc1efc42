"""The stage contract (one name, timer, done-check, typed hand-offs) and the flow-owned model runtime."""

from __future__ import annotations

import dataclasses
from typing import get_type_hints

import pytest

from genenv.config import GenEnvConfig
from genenv.pipeline.context import Declared, GenerationRef, UndeclaredTable
from genenv.pipeline.contract import Adapters, Rollouts, StageOutput, generation_stage
from genenv.runtime.checkpoints import NO_CHECKPOINTS
from genenv.runtime.handle import ModelRuntime, model_runtime
from genenv.tasks.finetune import finetune
from genenv.tasks.generate import generate
from genenv.tasks.grow_pools import grow_pools
from genenv.tasks.heldout import evaluate_heldout
from genenv.tasks.rewards import rewards
from genenv.tasks.rollout import rollout
from genenv.tasks.seed import seed_pool
from genenv.tasks.verify import verify
from genenv.tasks.warm_start import warm_start
from genenv.warehouse.store import Warehouse, WarehouseError

REF = GenerationRef("unused", "run", 3, ModelRuntime())


def test_a_finished_stage_is_skipped_and_still_hands_its_output_on() -> None:
    calls: list[str] = []
    finished: dict[str, Rollouts] = {}

    @generation_stage(done=lambda tasks: finished.get("rollouts"))
    def roll_out_something(tasks: StageOutput) -> Rollouts:
        calls.append("body")
        return Rollouts(tasks.ref, {"rollouts": 4}, uri="staged")

    first = roll_out_something.fn(StageOutput(REF))
    assert calls == ["body"]
    assert (first.stage, first.skipped, first.counts, first.uri) == (
        "roll-out-something",
        False,
        {"rollouts": 4},
        "staged",
    )
    assert roll_out_something.name == "roll-out-something" and first.seconds >= 0
    finished["rollouts"] = Rollouts(REF, uri="staged")
    again = roll_out_something.fn(StageOutput(REF))
    assert calls == ["body"] and again.skipped and again.uri == "staged" and again.stage == "roll-out-something"


def _pool_row(task_id: str) -> dict:
    return {"run_id": "run", "generation": 1, "pool": "train", "task_id": task_id, "weight": 1.0}


def test_a_stage_reads_the_tables_at_the_versions_handed_on(tmp_path) -> None:
    ref = GenerationRef(str(tmp_path / "warehouse"), "run", 1, ModelRuntime())

    @generation_stage(done=lambda ref: None, writes=("pool",))
    def grow_pool(ref: GenerationRef) -> StageOutput:
        ref.warehouse.append("pool", [_pool_row("t1")])
        return StageOutput(ref)

    @generation_stage(done=lambda tasks: None, reads=("pool",))
    def read_pool(tasks: StageOutput) -> Rollouts:
        return Rollouts(tasks.ref, {"pool": tasks.ref.warehouse.read("pool")["task_id"].to_list()})

    def pool_grown(tasks: StageOutput) -> StageOutput | None:
        return StageOutput(tasks.ref) if tasks.ref.warehouse.has_rows("pool", "run", 1, task_id="t2") else None

    @generation_stage(done=pool_grown, writes=("pool",))
    def grow_again(tasks: StageOutput) -> StageOutput:
        raise AssertionError("its rows are there: the done check reads the table it writes at the latest version")

    grown = grow_pool.fn(ref)
    Warehouse(ref.warehouse_uri).append("pool", [_pool_row("t2")])  # after the hand-off
    read = read_pool.fn(grown)
    assert grown.ref.versions == read.ref.versions == {"pool": 0}
    assert read.counts["pool"] == ["t1"]
    with pytest.raises(WarehouseError, match="'pool' is pinned at version 0"):
        read.ref.warehouse.append("pool", [_pool_row("t3")])
    again = grow_again.fn(StageOutput(read.ref))
    assert again.skipped and again.ref.versions == {"pool": 1}


def test_a_stage_that_reads_a_table_it_does_not_declare_fails_naming_it(tmp_path) -> None:
    ref = GenerationRef(str(tmp_path / "warehouse"), "run", 1, ModelRuntime())
    Warehouse(ref.warehouse_uri).append("pool", [_pool_row("t1")])

    @generation_stage(done=lambda ref: None, reads=("tasks",))
    def peek_at_pool(ref: GenerationRef) -> StageOutput:
        return StageOutput(ref, {"pool": ref.warehouse.read("pool").height})

    with pytest.raises(
        UndeclaredTable, match=r"stage peek-at-pool uses table 'pool', .* \(reads=\['tasks'\], writes=\[\]\)"
    ):
        peek_at_pool.fn(ref)

    @generation_stage(done=lambda ref: None, reads=("pool",))
    def write_pool(ref: GenerationRef) -> StageOutput:
        ref.warehouse.append("pool", [_pool_row("t2")])
        return StageOutput(ref)

    with pytest.raises(UndeclaredTable, match="stage write-pool writes table 'pool'"):
        write_pool.fn(ref)

    @generation_stage(done=lambda ref: None, reads=("pool",), writes=("batches",))
    def write_batches_read_pool(ref: GenerationRef) -> StageOutput:
        ref.warehouse.append("batches", [])
        return StageOutput(ref, {"done": ref.warehouse.has_rows("trajectories", "run", 1)})

    with pytest.raises(UndeclaredTable, match="stage write-batches-read-pool uses table 'trajectories'"):
        write_batches_read_pool.fn(ref)
    assert Warehouse(ref.warehouse_uri).read("pool").height == 1  # nothing was written by the refused stages


def test_a_contract_naming_an_unknown_table_fails_when_the_stage_is_defined() -> None:
    with pytest.raises(ValueError, match=r"unknown tables \['poool'\]"):
        generation_stage(done=lambda ref: None, reads=("poool",))


def test_the_real_stages_declare_what_they_read_and_write() -> None:
    """Every stage's warehouse serves its declared tables only; the pipeline tests run them all under it."""
    for stage in (seed_pool, generate, rollout, verify, rewards, grow_pools, finetune, evaluate_heldout, warm_start):
        assert stage.fn.__wrapped__.__name__.replace("_", "-") == stage.name
    handed = dataclasses.replace(REF, declared=Declared("rollout", reads=("tasks",)))
    with pytest.raises(UndeclaredTable, match="stage rollout uses table 'batches'"):
        handed.warehouse.read("batches")


def test_a_handed_on_reference_shares_the_config_read_once_and_stays_frozen(tmp_path) -> None:
    from genenv.pipeline.run_records import register_run

    config = GenEnvConfig(data_dir=str(tmp_path))
    register_run(Warehouse(config.resolved_warehouse_uri), config, "run")
    ref = GenerationRef(config.resolved_warehouse_uri, "run", 1, ModelRuntime())

    @generation_stage(done=lambda ref: None)
    def look(ref: GenerationRef) -> StageOutput:
        return StageOutput(ref, {"alpha": ref.config.alpha})

    output = look.fn(ref)
    assert output.counts == {"alpha": 0.5}
    assert output.ref.config is ref.config  # read once, in the stage, and handed on with the reference
    assert set(vars(output.ref)) == {f.name for f in dataclasses.fields(GenerationRef)}
    with pytest.raises(dataclasses.FrozenInstanceError):
        output.ref.versions = {}  # type: ignore[misc]


def test_each_stage_takes_the_previous_stages_output() -> None:
    """The generation's data path, as the stage signatures state it (Algorithm 1's order)."""
    chain = [
        (generate, GenerationRef, StageOutput),
        (rollout, StageOutput, Rollouts),
        (verify, Rollouts, StageOutput),
        (rewards, StageOutput, StageOutput),
        (grow_pools, StageOutput, StageOutput),
        (finetune, StageOutput, Adapters),
        (evaluate_heldout, Adapters, StageOutput),
        (seed_pool, GenerationRef, StageOutput),
        (warm_start, StageOutput, Adapters),
    ]
    for stage, takes, returns in chain:
        hints = get_type_hints(stage.fn)
        argument = next(iter(hints))
        assert (hints[argument], hints["return"]) == (takes, returns), stage.name


def test_a_flow_given_a_runtime_uses_it_and_leaves_it_loaded(tiny_model_dir) -> None:
    config = GenEnvConfig(model=str(tiny_model_dir))
    with model_runtime() as outer:
        policy = outer.training(config, NO_CHECKPOINTS)
        with model_runtime(given=outer) as inner:  # a generation inside evolve, an arm inside compare
            assert inner is outer
        assert outer.training(config, NO_CHECKPOINTS) is policy  # not released by the inner flow
    assert outer.training(config, NO_CHECKPOINTS) is not policy  # released by its owner, so loaded again


def test_prefect_stores_a_runtime_parameter_as_its_name_without_walking_the_models(tiny_model_dir) -> None:
    """A flow run's parameters go to the Prefect API as JSON; the loaded models must not."""
    from genenv.flows.generation import run_generation

    with model_runtime() as runtime:
        runtime.training(GenEnvConfig(model=str(tiny_model_dir)), NO_CHECKPOINTS)
        stored = run_generation.serialize_parameters(
            {"warehouse_uri": "w", "run_id": "r", "generation": 1, "runtime": runtime}
        )
    assert stored == {"warehouse_uri": "w", "run_id": "r", "generation": 1, "runtime": "<ModelRuntime>"}


def test_a_stage_progress_card_is_removed_when_its_work_ends(prefect_server) -> None:
    from prefect import flow, get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterType

    from genenv.pipeline.context import progress_bar

    def progress_cards() -> int:
        with get_client(sync_client=True) as client:
            kind = ArtifactFilter(type=ArtifactFilterType(any_=["progress"]))
            return len(client.read_artifacts(artifact_filter=kind))

    @flow
    def long_stage() -> int:
        with progress_bar("work", total=3) as bar:
            bar.update(3)
            during = progress_cards()
        return during

    before = progress_cards()
    assert long_stage() == before + 1
    assert progress_cards() == before
