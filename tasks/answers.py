"""The agent's answers to tasks and their scoring: shared by rollout (sampled), verify and evaluate (greedy)."""

from __future__ import annotations

import polars as pl

from genenv.domains.base import TaskInstance
from genenv.models.generation import GenerationBackend, SamplingSettings
from genenv.tasks.context import GenerationRef, load_tasks, progress_bar


def answer_tasks(
    ref: GenerationRef,
    backend: GenerationBackend,
    tasks: list[tuple[TaskInstance, str]],
    samples: int,
    sampling: SamplingSettings,
    label: str,
) -> pl.DataFrame:
    """`samples` agent answers to each (task, purpose), as rows of raw completions."""
    domain = ref.domain
    conversations = [domain.agent_messages(t) for t, _ in tasks for _ in range(samples)]
    with progress_bar(f"g{ref.generation} {label}", len(conversations)) as bar:
        completions = backend.generate("agent", conversations, sampling, progress=bar.update)
    rows = [
        {
            "task_id": t.task_id,
            "purpose": purpose,
            "sample_index": k,
            "completion": completions[i * samples + k].text,
            "finished": completions[i * samples + k].finished,
            "prompt_ids": completions[i * samples + k].prompt_ids,
            "completion_ids": completions[i * samples + k].completion_ids,
        }
        for i, (t, purpose) in enumerate(tasks)
        for k in range(samples)
    ]
    return pl.DataFrame(
        rows,
        schema={
            "task_id": pl.String,
            "purpose": pl.String,
            "sample_index": pl.Int64,
            "completion": pl.String,
            "finished": pl.Boolean,
            "prompt_ids": pl.List(pl.Int64),
            "completion_ids": pl.List(pl.Int64),
        },
    )


def trajectory_rows(ref: GenerationRef, answers: pl.DataFrame) -> list[dict]:
    """Score raw agent answers into `trajectories` rows."""
    domain, threshold = ref.domain, ref.config.solved_threshold
    tasks = load_tasks(ref, answers["task_id"].unique().to_list())
    rows = []
    for a in answers.iter_rows(named=True):
        verdict = domain.verify(a["completion"], tasks[a["task_id"]])
        rows.append(
            {
                "run_id": ref.run_id,
                "generation": ref.generation,
                "trajectory_id": ref.key(a["purpose"], a["task_id"], a["sample_index"]),
                "task_id": a["task_id"],
                "purpose": a["purpose"],
                "sample_index": a["sample_index"],
                "completion": a["completion"],
                "finished": a["finished"],
                "prompt_tokens": len(a["prompt_ids"]),
                "completion_tokens": len(a["completion_ids"]),
                "parsed_action": verdict.parsed_action,
                "parse_error": verdict.parse_error,
                "reward": verdict.reward,
                "solved": verdict.reward >= threshold,
                "prompt_ids": a["prompt_ids"],
                "completion_ids": a["completion_ids"],
            }
        )
    return rows
