"""A realistic synthetic run, written through the real write path: for the cookbook tests, the concurrency
test and the benchmark, which need warehouses of known shape (from a few rows to a million trajectories).

The shape is deterministic: seed s of generation g has `variations` simulator outputs; output j is rejected
when (s + j + g) % 5 == 0, with reason REJECT_REASONS[(s + j) % 4]; every valid output gets `k` rollouts.
Seeds with s % 5 == 0 are held out; seeds with s % 10 == 9 are never solved. Other successes
are random (seeded) with a per-seed difficulty that eases over generations, so p̂, the α band and the
curves look like a run's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

from genenv.warehouse.schemas import SCHEMA_VERSION, now, polars_schema
from genenv.warehouse.store import Warehouse

REJECT_REASONS = ("parse_error", "checker_rejects_own_answer", "duplicate", "benchmark_overlap")
TOOLS = ("get_weather", "book_flight", "convert_currency", "search_docs", "send_email", "create_event")


@dataclass(frozen=True)
class Shape:
    seeds: int = 10
    variations: int = 4
    k: int = 4
    pool_samples: int = 8
    prompt_tokens: int = 48
    text_chars: int = 120


def _table(table: str, data: dict) -> pl.DataFrame:
    schema = polars_schema(table)
    return pl.DataFrame(data).select(list(schema)).cast(schema)


def _token_lists(rng: np.random.Generator, lengths: np.ndarray) -> pl.Series:
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    values = pa.array(rng.integers(0, 49152, int(offsets[-1])), pa.int64())
    return pl.Series(pa.ListArray.from_arrays(pa.array(offsets), values))


def run_row(run_id: str, config_json: str = "{}") -> dict:
    return {
        "run_id": run_id,
        "run_name": run_id,
        "created_at": now(),
        "config_json": config_json,
        "config_hash": "synthetic",
        "model": "embedded:smollm2-135m-instruct",
        "domain": "tool_call",
        "parent_run_id": None,
        "parent_generation": None,
        "schema_version": SCHEMA_VERSION,
    }


def _trajectories(
    run_id: str, g: int, task_ids: list[str], purpose: str, k: int, p: np.ndarray, shape: Shape, rng
) -> pl.DataFrame:
    n = len(task_ids) * k
    solved = rng.random(n) < np.repeat(p, k)
    lengths = np.maximum(4, rng.normal(30 + 3 * g, 8, n)).astype(np.int64)
    tools = np.array(TOOLS)[rng.integers(0, len(TOOLS), n)]
    prefix = f"{run_id}/g{g}/{purpose}/"
    return _table(
        "trajectories",
        {
            "run_id": run_id,
            "generation": g,
            "trajectory_id": [f"{prefix}{i}" for i in range(n)],
            "task_id": np.repeat(task_ids, k),
            "purpose": purpose,
            "sample_index": np.tile(np.arange(k), len(task_ids)),
            "completion": [
                f'[{{"name": "{t}", "arguments": {{"q": "{"x" * (shape.text_chars // 2)}"}}}}]' for t in tools
            ],
            "finished": lengths < 60,
            "prompt_tokens": shape.prompt_tokens,
            "completion_tokens": lengths,
            "parsed_action": [f'[{{"name": "{t}"}}]' for t in tools],
            "parse_error": None,
            "reward": solved.astype(float),
            "solved": solved,
            "prompt_ids": _token_lists(rng, np.full(n, shape.prompt_tokens)),
            "completion_ids": _token_lists(rng, lengths),
            "completion_mask": None,
        },
    )


def generation_frames(run_id: str, g: int, shape: Shape = Shape()) -> dict[str, pl.DataFrame]:
    """Every table's rows of generation g, in the order the pipeline writes them."""
    rng = np.random.default_rng([g, len(run_id)])
    seeds = np.arange(shape.seeds)
    heldout = seeds % 5 == 0
    seed_ids = [f"{run_id}/seed/{s}" for s in seeds]
    difficulty = (seeds % 10) / 10
    frames: dict[str, pl.DataFrame] = {}
    train = seeds[~heldout]
    if g == 0:
        frames["tasks"] = _table(
            "tasks",
            {
                "run_id": run_id,
                "generation": 0,
                "task_id": seed_ids,
                "origin": "seed",
                "seed_task_id": None,
                "batch_id": None,
                "family": "tool_call",
                "question": "q",
                "spec_json": "{}",
                "answer": "[]",
                "raw_output": None,
                "simulator_context": None,
                "simulator_prompt_ids": None,
                "simulator_completion_ids": None,
                "valid": True,
                "reject_reason": None,
                "heldout": heldout,
            },
        )
        pool_ids = [seed_ids[s] for s in train]
        frames["pool"] = _table(
            "pool", {"run_id": run_id, "generation": 0, "pool": "train", "task_id": pool_ids, "weight": 1.0}
        )
        frames["trajectories"] = pl.DataFrame()
    else:
        s_col, j_col = np.repeat(train, shape.variations), np.tile(np.arange(shape.variations), len(train))
        rejected = (s_col + j_col + g) % 5 == 0
        task_ids = [f"{run_id}/g{g}/b{s}/v{j}" for s, j in zip(s_col, j_col, strict=True)]
        frames["tasks"] = _table(
            "tasks",
            {
                "run_id": run_id,
                "generation": g,
                "task_id": task_ids,
                "origin": "simulator",
                "seed_task_id": [seed_ids[s] for s in s_col],
                "batch_id": [f"{run_id}/g{g}/b{s}" for s in s_col],
                "family": "tool_call",
                "question": "q",
                "spec_json": "{}",
                "answer": "[]",
                "raw_output": "raw",
                "simulator_context": "[]",
                "simulator_prompt_ids": None,
                "simulator_completion_ids": None,
                "valid": ~rejected,
                "reject_reason": [
                    REJECT_REASONS[(s + j) % 4] if r else None for s, j, r in zip(s_col, j_col, rejected, strict=True)
                ],
                "heldout": False,
            },
        )
        valid = ~rejected
        # Seeds ending in 9 stay out of the agent's reach.
        p_task = np.where(s_col[valid] % 10 == 9, 0.0, np.clip(1 - difficulty[s_col[valid]] + 0.02 * g, 0.02, 0.98))
        fresh = _trajectories(
            run_id, g, [t for t, v in zip(task_ids, valid, strict=True) if v], "fresh", shape.k, p_task, shape, rng
        )
        pool_pick = rng.choice(train, shape.pool_samples)
        pool = _trajectories(
            run_id,
            g,
            [seed_ids[s] for s in pool_pick],
            "pool",
            1,
            np.clip(1.1 - difficulty[pool_pick], 0, 1),
            shape,
            rng,
        )
        frames["trajectories"] = pl.concat([fresh, pool])
        frames["batches"] = _batches(run_id, g, fresh, frames["tasks"])
        in_band = frames["batches"].filter("in_band")
        env = frames["tasks"].filter("valid").join(in_band.select("batch_id", "rwr_weight"), on="batch_id")
        frames["pool"] = pl.concat(
            [
                _table(
                    "pool",
                    {
                        "run_id": run_id,
                        "generation": g,
                        "pool": "train",
                        "task_id": fresh["task_id"].unique(maintain_order=True),
                        "weight": 1.0,
                    },
                ),
                _table(
                    "pool",
                    {
                        "run_id": run_id,
                        "generation": g,
                        "pool": "env",
                        "task_id": env["task_id"],
                        "weight": env["rwr_weight"],
                    },
                ),
            ]
        )
    frames["training"] = _training(run_id, g, rng)
    heldout_ids = [seed_ids[s] for s in seeds[heldout]]
    heldout_p = np.clip(0.3 + 0.05 * g - difficulty[heldout], 0, 1)
    frames["trajectories"] = pl.concat(
        [frames["trajectories"], _trajectories(run_id, g, heldout_ids, "heldout", 1, heldout_p, shape, rng)],
        how="vertical",
    )
    return {table: data for table, data in frames.items() if not data.is_empty()}


def _batches(run_id: str, g: int, fresh: pl.DataFrame, tasks: pl.DataFrame) -> pl.DataFrame:
    p_hat = (
        fresh.join(tasks.select("task_id", "batch_id"), on="task_id")
        .group_by("batch_id")
        .agg(p_hat=pl.col("solved").cast(pl.Float64).mean())
    )
    batches = (
        tasks.group_by("batch_id", "seed_task_id")
        .agg(n_variations=pl.len().cast(pl.Int64), n_valid=pl.col("valid").sum().cast(pl.Int64))
        .join(p_hat, on="batch_id", how="left")
        .sort("batch_id")
    )
    reward = (-3.0 * (pl.col("p_hat") - 0.5) ** 2).exp().fill_null(0.0)
    in_band = ((pl.col("p_hat") - 0.5).abs() <= 0.1).fill_null(False)
    return _table(
        "batches",
        batches.with_columns(
            run_id=pl.lit(run_id),
            generation=pl.lit(g),
            reward_name=pl.lit("alpha_curriculum"),
            generator_reward=reward,
            in_band=in_band,
            rwr_weight=pl.when(in_band).then((reward * 2.0).exp()).otherwise(0.0),
            task_id=pl.lit(None, pl.String),
        ).to_dict(),
    )


def _training(run_id: str, g: int, rng: np.random.Generator) -> pl.DataFrame:
    roles = ["agent"] * 6 + ["simulator"] * (3 if g else 6)
    phases = ["warm_start" if g == 0 else ("grpo" if r == "agent" else "rwr") for r in roles]
    steps = [i for role in ("agent", "simulator") for i in range(roles.count(role))]
    return _table(
        "training",
        {
            "run_id": run_id,
            "generation": g,
            "role": roles,
            "phase": phases,
            "step": steps,
            "loss": [round(2.0 * math.exp(-0.1 * (g * 6 + s)) + 0.1 * rng.random(), 4) for s in steps],
            "kl": [None if p == "warm_start" else 0.01 * s for p, s in zip(phases, steps, strict=True)],
            "n_rows": 8,
            "lr": 5e-5,
            "seconds": 1.5,
            "grad_norm": [round(0.5 * rng.random(), 4) for _ in steps],
            "entropy": [round(1.0 + rng.random(), 4) for _ in steps],
            "clip_ratio": [0.05 if p == "grpo" else None for p in phases],
            "approx_kl": [0.001 * s if p == "grpo" else None for p, s in zip(phases, steps, strict=True)],
            "zero_spread_share": [0.5 if p == "grpo" else None for p in phases],
            "weight_min": [None if p == "warm_start" else 0.5 for p in phases],
            "weight_median": [None if p == "warm_start" else 1.0 for p in phases],
            "weight_max": [None if p == "warm_start" else 1.5 for p in phases],
        },
    )


def evaluation_rows(run_id: str, g: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A BFCL-like score of generation g's agent, per category, with its items."""
    eval_id = f"{run_id}/g{g}/bfcl"
    categories = ("simple", "multiple", "parallel")
    items = _table(
        "evaluation_items",
        {
            "eval_id": eval_id,
            "run_id": run_id,
            "benchmark": "bfcl",
            "category": [c for c in categories for _ in range(10)],
            "item_id": [f"{c}-{i}" for c in categories for i in range(10)],
            "output": "[]",
            "score": [float(i < 3 + g + n) for n, _ in enumerate(categories) for i in range(10)],
            "error": None,
            "answer_key": None,
        },
    )
    scores = items.group_by("category").agg(value=pl.col("score").mean(), n=pl.len().cast(pl.Int64)).sort("category")
    evaluations = _table(
        "evaluations",
        scores.with_columns(
            eval_id=pl.lit(eval_id),
            run_id=pl.lit(run_id),
            generation=pl.lit(g),
            model=pl.lit("agent"),
            benchmark=pl.lit("bfcl"),
            metric=pl.lit("accuracy"),
            evaluated_at=pl.lit(now()),
            ci_low=(pl.col("value") - 0.1).clip(0.0, 1.0),
            ci_high=(pl.col("value") + 0.1).clip(0.0, 1.0),
        ).to_dict(),
    )
    return evaluations, items


def write_generation(
    warehouse: Warehouse, run_id: str, g: int, shape: Shape = Shape(), evaluations: bool = True
) -> dict[str, int]:
    """Append generation g table by table (and its benchmark scores), then commit it; returns rows per table."""
    frames = generation_frames(run_id, g, shape)
    for table, data in frames.items():
        warehouse.append(table, data)
    if evaluations:
        scores, items = evaluation_rows(run_id, g)
        warehouse.append("evaluation_items", items)
        warehouse.append("evaluations", scores)
    warehouse.commit_generation(
        run_id,
        g,
        agent_checkpoint=f"ckpt/{g}/agent",
        simulator_checkpoint=f"ckpt/{g}/simulator",
        config_hash="synthetic",
        seed=0,
        metrics={"generation": g},
    )
    return {table: data.height for table, data in frames.items()}


def fill(
    warehouse: Warehouse, run_id: str = "demo", generations: int = 3, shape: Shape = Shape(), evaluations: bool = True
) -> None:
    """A run with generations 0..generations-1, all committed."""
    warehouse.append("runs", [run_row(run_id)])
    for g in range(generations):
        write_generation(warehouse, run_id, g, shape, evaluations)
