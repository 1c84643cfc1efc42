"""One generation of GenEnv: generate -> rollout -> verify -> rewards -> finetune -> evaluate -> commit.

Generation 0 records the seed set, warm-starts both adapters and measures the agent. Every stage is
idempotent on (run, generation), so re-running this flow after a crash completes what is missing.
"""

from __future__ import annotations

from prefect import flow

from genenv.faults import crash_point
from genenv.tasks.commit import commit
from genenv.tasks.context import GenerationRef
from genenv.tasks.evaluate import evaluate_heldout
from genenv.tasks.finetune import finetune
from genenv.tasks.generate import generate
from genenv.tasks.rewards import rewards
from genenv.tasks.rollout import rollout
from genenv.tasks.seed import seed_pool
from genenv.tasks.verify import verify
from genenv.tasks.warm_start import warm_start

GENERATION_ZERO = (seed_pool, warm_start, evaluate_heldout)
GENENV_GENERATION = (generate, rollout, verify, rewards, finetune, evaluate_heldout)


@flow(name="genenv-generation", flow_run_name="{run_id}-g{generation}")
def run_generation(warehouse_uri: str, run_id: str, generation: int) -> dict:
    ref = GenerationRef(warehouse_uri, run_id, generation)
    stages = GENERATION_ZERO if generation == 0 else GENENV_GENERATION
    seconds = {}
    for stage in stages:
        crash_point(f"g{generation}:before:{stage.name}")
        result = stage(ref)
        seconds[result["stage"]] = result["seconds"]
    crash_point(f"g{generation}:before:commit")
    return commit(ref, seconds)
