"""Pandera schemas of every warehouse table, checked on every write.

The schema is the single source of truth: writers build frames with `polars_schema(table)` and the
Delta tables take their column types from it.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pandera.polars as pa
import polars as pl

from genenv.warehouse.purposes import Purpose

SCHEMA_VERSION = 1


class _Strict(pa.DataFrameModel):
    class Config:
        strict = True
        coerce = False


class Runs(_Strict):
    run_id: str = pa.Field(unique=True)
    run_name: str
    created_at: pl.Datetime("us", "UTC")
    config_json: str
    config_hash: str
    model: str
    domain: str
    parent_run_id: str | None = pa.Field(nullable=True)
    parent_generation: int | None = pa.Field(nullable=True, ge=0)
    schema_version: int


class Generations(_Strict):
    run_id: str
    generation: int = pa.Field(ge=0)
    status: str = pa.Field(isin=["committed"])
    committed_at: pl.Datetime("us", "UTC")
    table_versions: str
    """JSON {table: Delta version} as of this commit: the generation's snapshot."""
    agent_checkpoint: str
    simulator_checkpoint: str
    config_hash: str
    seed: int
    metrics: str
    """JSON of the generation's headline numbers (valid rate, mean p̂, band share, success, losses, seconds)."""


class Tasks(_Strict):
    run_id: str
    generation: int = pa.Field(ge=0)
    task_id: str = pa.Field(unique=True)
    origin: str = pa.Field(isin=["seed", "simulator", "abstention"])
    """seed: shipped; simulator: written by the simulator; abstention: built by construction for the agent's batch
    (a training request put to functions that cannot serve it, `seed_task_id` the task whose functions it offers)."""
    seed_task_id: str | None = pa.Field(nullable=True)
    batch_id: str | None = pa.Field(nullable=True)
    family: str
    question: str | None = pa.Field(nullable=True)
    spec_json: str | None = pa.Field(nullable=True)
    answer: str | None = pa.Field(nullable=True)
    raw_output: str | None = pa.Field(nullable=True)
    """The simulator's text exactly as written (kept for rejected outputs too)."""
    simulator_context: str | None = pa.Field(nullable=True)
    """JSON chat messages the simulator was conditioned on: the RWR update's input."""
    simulator_prompt_ids: pl.List(pl.Int64) = pa.Field(nullable=True)
    """The simulator's prompt and output as token ids, as generated: its GRPO update trains on them (null for tasks
    the simulator did not write, and for outputs stored before the column existed)."""
    simulator_completion_ids: pl.List(pl.Int64) = pa.Field(nullable=True)
    valid: bool
    reject_reason: str | None = pa.Field(nullable=True)
    heldout: bool


class Pool(_Strict):
    run_id: str
    generation: int = pa.Field(ge=0)
    """The generation in which the task joined the pool."""
    pool: str = pa.Field(isin=["train", "env"])
    """'train' = D_train (agent), 'env' = D_env (simulator's weighted records)."""
    task_id: str
    weight: float = pa.Field(ge=0)


class Trajectories(_Strict):
    run_id: str
    generation: int = pa.Field(ge=0)
    trajectory_id: str = pa.Field(unique=True)
    task_id: str
    purpose: str = pa.Field(isin=[p.value for p in Purpose])
    """fresh / pool / abstention: the GRPO groups (simulator tasks, D_train draws, abstention tasks); rescore: sampled,
    on D_env records of earlier generations (their p̂ now, simulator_pool_rescore); heldout: greedy,
    on held-out seeds; probe_before / probe_after: greedy, on a fixed sample of this generation's fresh tasks, before
    and after the agent's update."""
    sample_index: int = pa.Field(ge=0)
    completion: str
    finished: bool
    prompt_tokens: int = pa.Field(ge=0)
    completion_tokens: int = pa.Field(ge=0)
    parsed_action: str | None = pa.Field(nullable=True)
    parse_error: str | None = pa.Field(nullable=True)
    reward: float = pa.Field(ge=0, le=1)
    solved: bool
    prompt_ids: pl.List(pl.Int64)
    completion_ids: pl.List(pl.Int64)
    completion_mask: pl.List(pl.Int8) = pa.Field(nullable=True)
    """Multi-turn episodes: 1 on the completion tokens the agent wrote (they carry GRPO's loss), 0 on the
    observations between them; null for single-turn answers (every completion token is the agent's)."""


class Turns(_Strict):
    """One turn of a multi-turn trajectory as the verifier replayed it: the agent's command and the game's answer."""

    run_id: str
    generation: int = pa.Field(ge=0)
    trajectory_id: str
    turn: int = pa.Field(ge=1)
    command: str
    observation: str
    won: bool
    lost: bool


class Batches(_Strict):
    """One reward unit of the simulator's: a seed's batch of n variations (reward_scope=batch, `task_id` null) or one
    of its outputs with its k rollouts (reward_scope=task, one row per output, valid or not)."""

    run_id: str
    generation: int = pa.Field(ge=1)
    batch_id: str
    seed_task_id: str
    task_id: str | None = pa.Field(nullable=True)
    n_variations: int = pa.Field(ge=1)
    n_valid: int = pa.Field(ge=0)
    p_hat: float | None = pa.Field(nullable=True, ge=0, le=1)
    reward_name: str
    generator_reward: float
    """R_env of p̂; for a rejected output (reward_scope=task) simulator_invalid_advantage; for a batch with no valid
    variation 0."""
    in_band: bool
    rwr_weight: float = pa.Field(ge=0)
    """The unit's tasks' weight in D_env (Alg. 1), 0 outside the band."""


class Rescores(_Strict):
    """A D_env record of an earlier generation answered again by this generation's agent before the simulator's RWR
    (simulator_pool_rescore): its p̂ now, and whether it is still in the α band (out of it, RWR skips it this
    generation; it stays in D_env)."""

    run_id: str
    generation: int = pa.Field(ge=1)
    task_id: str
    n_answers: int = pa.Field(ge=1)
    p_hat: float = pa.Field(ge=0, le=1)
    generator_reward: float
    in_band: bool
    rwr_weight: float = pa.Field(ge=0)
    """Its weight in this generation's RWR, w ∝ exp(λ R_env) among the rescored records in the band; 0 outside it."""


class Training(_Strict):
    run_id: str
    generation: int = pa.Field(ge=0)
    role: str = pa.Field(isin=["agent", "simulator"])
    phase: str = pa.Field(isin=["warm_start", "grpo", "replay", "rwr"])
    step: int = pa.Field(ge=0)
    loss: float
    kl: float | None = pa.Field(nullable=True)
    n_rows: int = pa.Field(ge=0)
    lr: float
    seconds: float = pa.Field(ge=0)
    grad_norm: float | None = pa.Field(nullable=True, ge=0)
    """Gradient norm before clipping."""
    entropy: float | None = pa.Field(nullable=True)
    """Mean per-token entropy of the policy over the step's target tokens."""
    clip_ratio: float | None = pa.Field(nullable=True, ge=0, le=1)
    """GRPO: share of completion tokens whose ratio to the rollout policy was clipped."""
    approx_kl: float | None = pa.Field(nullable=True)
    """GRPO: token-mean k3 KL between the rollout policy and the updated one (how far the update moved)."""
    zero_spread_share: float | None = pa.Field(nullable=True, ge=0, le=1)
    """GRPO: share of groups whose rewards are all equal (no learning signal)."""
    weight_min: float | None = pa.Field(nullable=True)
    """The per-row weights the phase trained with in this generation (RWR weights, GRPO advantages): minimum,
    median and maximum, the same on every step of the phase; null where rows are unweighted (warm start, replay)."""
    weight_median: float | None = pa.Field(nullable=True)
    weight_max: float | None = pa.Field(nullable=True)


class Evaluations(_Strict):
    """One score of one model on one benchmark category (outside the generation loop: no commit needed)."""

    eval_id: str
    run_id: str
    """The run whose agent was scored, or "base" for a model outside any run."""
    generation: int | None = pa.Field(nullable=True, ge=0)
    model: str
    benchmark: str
    category: str
    metric: str
    value: float
    n: int = pa.Field(ge=0)
    evaluated_at: pl.Datetime("us", "UTC")
    ci_low: float | None = pa.Field(nullable=True)
    """95% bootstrap interval of `value` over the items (percentile, 2,000 resamples, seed 0; evaluation.bootstrap);
    null in rows written before the column existed."""
    ci_high: float | None = pa.Field(nullable=True)


class EvaluationItems(_Strict):
    """The model's output on one benchmark item, with its score: the evidence behind `evaluations`."""

    eval_id: str
    run_id: str
    benchmark: str
    category: str
    item_id: str
    output: str
    score: float = pa.Field(ge=0, le=1)
    error: str | None = pa.Field(nullable=True)
    answer_key: str | None = pa.Field(nullable=True)
    """SHA-256 of what decides the greedy `output`: base model, precision, backend, the adapter's bytes, the prompt
    and the token cap (tasks.benchmarks.answer_key). A later scoring with the same key reuses the output instead of
    generating it again. Null in rows written before the column existed."""


TABLES: dict[str, type[pa.DataFrameModel]] = {
    "runs": Runs,
    "generations": Generations,
    "tasks": Tasks,
    "pool": Pool,
    "trajectories": Trajectories,
    "turns": Turns,
    "batches": Batches,
    "rescores": Rescores,
    "training": Training,
    "evaluations": Evaluations,
    "evaluation_items": EvaluationItems,
}
GENERATION_TABLES = ("tasks", "pool", "trajectories", "turns", "batches", "rescores", "training")
"""Tables whose rows belong to one generation: readers see them once the generation is committed."""

PARTITIONS: dict[str, list[str]] = {
    table: ["run_id", "generation"] if table in GENERATION_TABLES else ["run_id"] for table in TABLES
}
"""Delta partition columns of new tables: the pipeline reads one (run, generation) at a time, and compaction
then never mixes generations, so per-generation reads prune to one folder (see bench/warehouse_queries.py)."""


def polars_schema(table: str) -> pl.Schema:
    return pl.Schema({name: column.dtype.type for name, column in TABLES[table].to_schema().columns.items()})


def frame(table: str, rows: list[dict]) -> pl.DataFrame:
    """Rows as a frame with the table's exact column types (validation happens on write)."""
    schema = polars_schema(table)
    if rows and set(rows[0]) != set(schema):
        extra, missing = sorted(set(rows[0]) - set(schema)), sorted(set(schema) - set(rows[0]))
        raise ValueError(f"rows for table {table!r} do not match its columns: extra {extra}, missing {missing}")
    return pl.DataFrame(rows, schema=schema)


def now() -> datetime:
    return datetime.now(UTC)
