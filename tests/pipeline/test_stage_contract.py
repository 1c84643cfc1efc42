"""The stage contract (one name, timer, done-check, typed hand-offs) and the flow-owned model runtime."""

from __future__ import annotations

from typing import get_type_hints

import pytest

from genenv.tasks.context import GenerationRef
from genenv.tasks.contract import Adapters, Measured, Rewarded, Rollouts, Scored, TaskSet, generation_stage
from genenv.tasks.finetune import finetune
from genenv.tasks.generate import generate
from genenv.tasks.heldout import evaluate_heldout
from genenv.tasks.rewards import rewards
from genenv.tasks.rollout import rollout
from genenv.tasks.runtime import current_runtime, model_runtime
from genenv.tasks.seed import seed_pool
from genenv.tasks.verify import verify
from genenv.tasks.warm_start import warm_start

REF = GenerationRef("unused", "run", 3)


def test_a_finished_stage_is_skipped_and_still_hands_its_output_on() -> None:
    calls: list[str] = []
    finished: dict[str, Rollouts] = {}

    @generation_stage(done=lambda tasks: finished.get("rollouts"))
    def roll_out_something(tasks: TaskSet) -> Rollouts:
        calls.append("body")
        return Rollouts(tasks.ref, {"rollouts": 4}, uri="staged")

    first = roll_out_something.fn(TaskSet(REF))
    assert calls == ["body"]
    assert (first.stage, first.skipped, first.counts, first.uri) == (
        "roll-out-something",
        False,
        {"rollouts": 4},
        "staged",
    )
    assert roll_out_something.name == "roll-out-something" and first.seconds >= 0
    finished["rollouts"] = Rollouts(REF, uri="staged")
    again = roll_out_something.fn(TaskSet(REF))
    assert calls == ["body"] and again.skipped and again.uri == "staged" and again.stage == "roll-out-something"


def test_each_stage_takes_the_previous_stages_output() -> None:
    """The generation's data path, as the stage signatures state it (Algorithm 1's order)."""
    chain = [
        (generate, GenerationRef, TaskSet),
        (rollout, TaskSet, Rollouts),
        (verify, Rollouts, Scored),
        (rewards, Scored, Rewarded),
        (finetune, Rewarded, Adapters),
        (evaluate_heldout, Adapters, Measured),
        (seed_pool, GenerationRef, TaskSet),
        (warm_start, TaskSet, Adapters),
    ]
    for stage, takes, returns in chain:
        hints = get_type_hints(stage.fn)
        argument = next(iter(hints))
        assert (hints[argument], hints["return"]) == (takes, returns), stage.name


def test_the_outermost_flow_owns_the_runtime_and_releases_it() -> None:
    with pytest.raises(RuntimeError, match="inside a flow that holds `model_runtime"):
        current_runtime()
    with model_runtime() as outer:
        assert current_runtime() is outer
        with model_runtime() as inner:  # a generation inside evolve, an arm inside compare
            assert inner is outer
        assert current_runtime() is outer
    with pytest.raises(RuntimeError):
        current_runtime()


def test_a_stage_progress_card_is_removed_when_its_work_ends(prefect_server) -> None:
    from prefect import flow, get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterType

    from genenv.tasks.context import progress_bar

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
