"""One generation of GenEnv, as Algorithm 1 reads: generate -> rollout -> verify -> rewards -> grow-pools ->
finetune -> evaluate -> commit. Each stage hands the next a typed reference to where its data is (pipeline/contract.py).

Generation 0 records the seed set, warm-starts both adapters and measures the agent. Every stage is
idempotent on (run, generation), so re-running this flow after a crash completes what is missing.
"""

from __future__ import annotations

from prefect import flow

from genenv.pipeline.context import GenerationRef
from genenv.pipeline.contract import Adapters, StageOutput
from genenv.pipeline.options import stage_tags
from genenv.runtime.handle import ModelRuntime, model_runtime
from genenv.tasks.commit import commit
from genenv.tasks.finetune import finetune
from genenv.tasks.generate import generate
from genenv.tasks.grow_pools import grow_pools
from genenv.tasks.heldout import evaluate_heldout
from genenv.tasks.rewards import rewards
from genenv.tasks.rollout import rollout
from genenv.tasks.seed import seed_pool
from genenv.tasks.verify import verify
from genenv.tasks.warm_start import warm_start
from genenv.warehouse.leases import run_lease


@flow(name="genenv-generation", flow_run_name="{run_id}-g{generation}")
def run_generation(warehouse_uri: str, run_id: str, generation: int, runtime: ModelRuntime | None = None) -> dict:
    """Returns the commit's counts and each stage's seconds. `runtime`: the calling flow's models (evolve's, across
    its generations); without it, this flow loads its own and releases them at the end."""
    with run_lease(warehouse_uri, run_id), model_runtime(given=runtime) as models, stage_tags():  # tags: off stages
        ref = GenerationRef(warehouse_uri, run_id, generation, models)
        adapters, measured, stages = generation_zero(ref) if generation == 0 else genenv_generation(ref)
        committed = commit(measured, adapters, stages)
    return {**committed.counts, "seconds": {output.stage: output.seconds for output in [*stages, committed]}}


Stages = tuple[Adapters, StageOutput, list[StageOutput]]
"""What the commit needs by name (the adapters to point at, the measured agent), and every stage for its timings."""


def generation_zero(ref: GenerationRef) -> Stages:
    seeds = seed_pool(ref)
    adapters = warm_start(seeds)
    measured = evaluate_heldout(adapters)
    return adapters, measured, [seeds, adapters, measured]


def genenv_generation(ref: GenerationRef) -> Stages:
    generated = generate(ref)
    rollouts = rollout(generated)
    scored = verify(rollouts)
    rewarded = rewards(scored)
    pooled = grow_pools(rewarded)
    adapters = finetune(pooled)
    measured = evaluate_heldout(adapters)
    return adapters, measured, [generated, rollouts, scored, rewarded, pooled, adapters, measured]
