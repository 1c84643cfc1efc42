"""The evaluate flow: score the base model, or a run's agent at a generation, on benchmark data.

One stage per benchmark (a failure or retry stays in that benchmark); the model loads once per flow run, or once
for all the models a comparison scores when it hands this flow its runtime.
"""

from __future__ import annotations

import uuid

from prefect import flow, get_run_logger

from genenv.config import ConfigError, GenEnvConfig
from genenv.evaluation.benchmark_registry import check_item_sizes, present_benchmarks
from genenv.evaluation.runner import DEFAULT_BENCHMARKS
from genenv.models.loading import EMBEDDED_MODEL
from genenv.runtime.handle import ModelRuntime, model_runtime
from genenv.tasks.benchmarks import evaluate_benchmark, resolve_target, scoring_config
from genenv.validation import validate
from genenv.warehouse.schemas import now
from genenv.warehouse.store import Warehouse


def benchmarks_to_score(benchmarks: list[str] | None, data_dir: str | None, items: dict[str, int] | None) -> list[str]:
    """The requested benchmarks (default: all) whose data is present, each absent one logged with what to supply;
    refused before any model loads when none is left or `items` names a category none of them has."""
    names, skipped = present_benchmarks(benchmarks or DEFAULT_BENCHMARKS, data_dir)
    for line in skipped:
        get_run_logger().warning(line)
    if not names:
        raise ConfigError("no benchmark to score: " + "; ".join(skipped))
    try:
        check_item_sizes(names, data_dir, items)
    except ValueError as exc:
        raise ConfigError(f"items: {exc}") from None
    return names


@flow(name="genenv-evaluate")
def evaluate(
    model: str = EMBEDDED_MODEL,
    run_id: str | None = None,
    generation: int | None = None,
    benchmarks: list[str] | None = None,
    data_dir: str | None = None,
    limit: int | None = None,
    warehouse_uri: str = "data/warehouse",
    cache_dir: str = "data",
    precision: str | None = None,
    batch_size: int = 16,
    items: dict[str, int] | None = None,
    vllm_gpu_memory_utilization: float = 0.9,
    ray_address: str = GenEnvConfig.ray_address,
    rollout_workers: int = GenEnvConfig.rollout_workers,
    worker_cpus: float = GenEnvConfig.worker_cpus,
    worker_gpus: float = GenEnvConfig.worker_gpus,
    runtime: ModelRuntime | None = None,
) -> str:
    """Returns the evaluation batch id; its rows have eval_id `<batch>/<benchmark>/<category>/<metric>`.

    With `run_id`, the run's agent adapter at `generation` (default: its last committed one) is scored on the run's
    base model and `model` is ignored. Items per category: `items[category]` (0 leaves it out), else `limit`, else
    all, always the same ones for a given size (evaluation.benchmark_registry.select_items). `precision` defaults to the
    run's (float32 for a base model). `data_dir` holds the benchmarks not published as packages (API-Bank,
    Bamboogle; genenv/benchmark_data.py): a benchmark whose data is absent is skipped with a warning.
    `vllm_gpu_memory_utilization`: with backend vllm on a GPU, the engine's share of it (nothing trains beside an
    evaluation of its own). `ray_address` and the worker fields: score on a Ray cluster's workers, as the config
    fields of those names place a run's generation (docs/scale.md). `runtime`: the calling flow's models (compare's,
    across the models it scores, placed as compare places them); without it, this flow loads its own.
    """
    names = benchmarks_to_score(benchmarks, data_dir, items)
    target = resolve_target(Warehouse(warehouse_uri), model, run_id, generation, precision)
    settings = scoring_config(target, cache_dir, batch_size).replace(
        vllm_gpu_memory_utilization=vllm_gpu_memory_utilization,
        ray_address=ray_address,
        rollout_workers=rollout_workers,
        worker_cpus=worker_cpus,
        worker_gpus=worker_gpus,
    )
    settings = validate(settings)  # a backend or a Ray cluster that cannot be used here fails before loading
    eval_batch = f"{target.run_id}-{now():%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"
    with model_runtime(settings.placement, given=runtime) as models:
        for name in names:
            evaluate_benchmark(
                models, target, name, eval_batch, data_dir, limit, warehouse_uri, cache_dir, batch_size, items
            )
    return eval_batch
