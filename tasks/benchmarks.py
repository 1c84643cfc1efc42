"""Stage: score a model (the base, or a run's agent at a generation) on one benchmark; write the warehouse rows.

Each `evaluations` row (one metric of one category) has its own eval_id, `<batch>/<benchmark>/<category>/<metric>`,
and its per-item evidence in `evaluation_items` under the same eval_id, so `value` is the mean of their scores.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import polars as pl

from genenv.config import GenEnvConfig
from genenv.evaluation.benchmark_registry import Item, get_benchmark, select_items
from genenv.evaluation.runner import ItemResult, run_benchmark, scored, summarise
from genenv.models.sampling import GenerationBackend
from genenv.pipeline.context import progress_bar
from genenv.pipeline.options import stage
from genenv.runtime.handle import ModelRuntime
from genenv.warehouse.checkpoints import adapter_digest, adapter_exists
from genenv.warehouse.schemas import now
from genenv.warehouse.store import Warehouse, WarehouseError, registered_config

BASE_RUN = "base"


@dataclass(frozen=True)
class Target:
    """The model to score: a base model spec, plus a run's agent adapter when scoring a run."""

    model: str
    run_id: str = BASE_RUN
    generation: int | None = None
    agent_checkpoint: str | None = None
    precision: str = "float32"
    backend: str = "transformers"
    """The run's generation backend (config.backend), so a run is scored the way it generates."""
    vllm_adapters: str = "merged"
    """With backend vllm: how the run's engine got its adapters (config.vllm_adapters)."""


def resolve_target(
    warehouse: Warehouse, model: str, run_id: str | None, generation: int | None, precision: str | None
) -> Target:
    """A run's agent at `generation` (its last committed one when None) on the run's base model, or `model`."""
    if run_id is None:
        if generation is not None:
            raise WarehouseError("a generation needs a run: pass run_id too")
        return Target(model=model, precision=precision or "float32")
    run = warehouse.run(run_id)
    committed = warehouse.committed(run_id)
    if generation is not None:
        committed = committed.filter(committed["generation"] == generation)
    if committed.is_empty():
        which = f"generation {generation}" if generation is not None else "generation"
        raise WarehouseError(f"run {run_id!r} has no committed {which} to evaluate")
    row = committed.row(-1, named=True)
    checkpoint = row["agent_checkpoint"]
    if not adapter_exists(checkpoint):
        raise WarehouseError(f"agent adapter of run {run_id!r} generation {row['generation']} is missing: {checkpoint}")
    stored = registered_config(run)
    precision = precision or stored.precision
    return Target(run["model"], run_id, row["generation"], checkpoint, precision, stored.backend, stored.vllm_adapters)


def scoring_config(target: Target, cache_dir: str, batch_size: int) -> GenEnvConfig:
    """The settings the target's model is loaded and generates with (the entry point validates them)."""
    return GenEnvConfig(
        model=target.model,
        data_dir=cache_dir,
        precision=target.precision,
        backend=target.backend,
        vllm_adapters=target.vllm_adapters,
        generation_batch_size=batch_size,
    )


def scoring_backend(runtime: ModelRuntime, target: Target, cache_dir: str, batch_size: int) -> GenerationBackend:
    """The target's agent from the flow's model runtime (loaded once across benchmarks and compared models)."""
    return runtime.backend(scoring_config(target, cache_dir, batch_size), (target.agent_checkpoint, None))


def benchmark_items(
    benchmark: str, data_dir: str | Path | None, sizes: dict[str, int] | None = None, limit: int | None = None
) -> list[Item]:
    """The fixed sample of a benchmark's items every model is scored on (evaluation.benchmark_registry.select_items)."""
    return select_items(get_benchmark(benchmark).load(Path(data_dir) if data_dir else None), sizes, limit)


def earlier_evaluation(
    warehouse: Warehouse,
    run_id: str,
    generation: int | None,
    benchmarks: list[str],
    data_dir: str | Path | None,
    sizes: dict[str, int] | None,
    limit: int | None,
) -> str | None:
    """The latest evaluation batch of the run's agent at `generation` that scored exactly the items these arguments
    select (`benchmark_items`): a comparison continued after an interruption does not score a model twice. A
    committed generation's adapter never changes, so its scores on the same items hold."""
    rows = warehouse.read("evaluations", run_id=run_id).filter(pl.col("generation") == generation)
    if rows.is_empty():
        return None
    wanted = {
        (benchmark, item.category, item.item_id)
        for benchmark in benchmarks
        for item in benchmark_items(benchmark, data_dir, sizes, limit)
    }
    scored = warehouse.read("evaluation_items", run_id=run_id).with_columns(
        batch=pl.col("eval_id").str.split("/").list.first()
    )
    for batch in (
        rows.sort("evaluated_at", descending=True)["eval_id"].str.split("/").list.first().unique(maintain_order=True)
    ):
        mine = scored.filter(batch=batch).select("benchmark", "category", "item_id")
        if set(mine.iter_rows()) == wanted:
            return batch
    return None


@stage("evaluate-benchmark", gpu=True)
def evaluate_benchmark(
    runtime: ModelRuntime,
    target: Target,
    benchmark: str,
    eval_batch: str,
    data_dir: str | None,
    limit: int | None,
    warehouse_uri: str,
    cache_dir: str,
    batch_size: int = 16,
    items: dict[str, int] | None = None,
) -> dict[str, Any]:
    """Generate, score and append the rows; skipped when this batch already wrote this benchmark (a retry).

    An item whose answer the warehouse already holds under the same `answer_key` (the same model bytes, prompt and
    cap, from any run) is scored from that answer instead of generated again (greedy: the same model writes the same
    answer, but for a bf16 rounding a different batch can tip).

    The items are `benchmark_items`: per category `items[category]`, else `limit`, else all, chosen by a seeded hash
    of the item id, so every model is scored on the same items.
    """
    started = time.perf_counter()
    warehouse = Warehouse(warehouse_uri)
    prefix = f"{eval_batch}/{benchmark}/"
    written = warehouse.read("evaluations", run_id=target.run_id)
    if written["eval_id"].str.starts_with(prefix).any():
        return {"benchmark": benchmark, "skipped": True}
    chosen = benchmark_items(benchmark, data_dir, items, limit)
    if not chosen:
        return {"benchmark": benchmark, "items": 0}
    scorer = get_benchmark(benchmark)
    fingerprint = model_fingerprint(target)
    keys = [answer_key(fingerprint, item, scorer.max_new_tokens) for item in chosen]
    known = stored_answers(warehouse, benchmark, set(keys))
    todo = [item for item, key in zip(chosen, keys, strict=True) if key not in known]
    with progress_bar(f"eval {benchmark}", total=len(chosen)) as bar:
        bar.update(len(chosen) - len(todo))
        generated = iter(
            run_benchmark(scoring_backend(runtime, target, cache_dir, batch_size), scorer, todo, bar.advance)
            if todo
            else []
        )
    results = [
        replace(scored(scorer, item, known[key]) if key in known else next(generated), answer_key=key)
        for item, key in zip(chosen, keys, strict=True)
    ]
    rows, item_rows = evaluation_rows(target, prefix, results)
    warehouse.append("evaluation_items", item_rows)
    warehouse.append("evaluations", rows)
    seconds = round(time.perf_counter() - started, 2)
    return {
        "benchmark": benchmark,
        "items": len(results),
        "reused": len(chosen) - len(todo),
        "seconds": seconds,
        "scores": rows_summary(rows),
    }


def model_fingerprint(target: Target) -> str:
    """What decides a greedy answer besides the prompt: the base model, precision and backend, and the adapter's
    bytes (not its path: a fork's generation 0 holds its parent's adapter, a copy has the same bytes). The base
    model is named by its spec, not hashed (gigabytes): files replaced under the same path are not noticed."""
    digest = adapter_digest(target.agent_checkpoint) if target.agent_checkpoint else None
    engine = [target.vllm_adapters] if target.backend == "vllm" else []  # merged and LoRA weights round apart
    return json.dumps([target.model, target.precision, target.backend, *engine, digest])


def answer_key(fingerprint: str, item: Item, max_new_tokens: int) -> str:
    """The key of one greedy answer (`evaluation_items.answer_key`): the model's fingerprint, the prompt, the cap."""
    return hashlib.sha256(json.dumps([fingerprint, item.messages, max_new_tokens]).encode()).hexdigest()


def stored_answers(warehouse: Warehouse, benchmark: str, keys: set[str]) -> dict[str, str]:
    """Outputs already in the warehouse under any of `keys`, from any run: answer_key -> output, the earliest
    batch's where a key has several (bf16 can round one model's answer differently in another batch)."""
    rows = warehouse.read("evaluation_items", benchmark=benchmark).filter(pl.col("answer_key").is_in(list(keys)))
    earliest = rows.sort("answer_key", "eval_id").unique("answer_key", keep="first", maintain_order=True)
    return dict(earliest.select("answer_key", "output").iter_rows())


def evaluation_rows(target: Target, prefix: str, results: list[ItemResult]) -> tuple[list[dict], list[dict]]:
    """`evaluations` rows (one per category and metric) and their `evaluation_items` rows."""
    evaluated_at = now()
    rows = [
        {
            "eval_id": f"{prefix}{s.category}/{s.metric}",
            "run_id": target.run_id,
            "generation": target.generation,
            "model": target.model,
            "benchmark": s.benchmark,
            "category": s.category,
            "metric": s.metric,
            "value": s.value,
            "n": s.n,
            "evaluated_at": evaluated_at,
            "ci_low": s.ci_low,
            "ci_high": s.ci_high,
        }
        for s in summarise(results)
    ]
    item_rows = [
        {
            "eval_id": f"{prefix}{r.category}/{metric}",
            "run_id": target.run_id,
            "benchmark": r.benchmark,
            "category": r.category,
            "item_id": r.item_id,
            "output": r.output,
            "score": score,
            "error": r.error,
            "answer_key": r.answer_key,
        }
        for r in results
        for metric, score in r.scores.items()
    ]
    return rows, item_rows


def rows_summary(rows: list[dict]) -> dict[str, str]:
    return {
        f"{row['category']}/{row['metric']}": f"{row['value']:.4f} [{row['ci_low']:.4f}, {row['ci_high']:.4f}]"
        for row in rows
    }
