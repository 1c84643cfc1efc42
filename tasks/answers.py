"""The agent's answers to tasks and their scoring: shared by rollout (sampled), verify and evaluate (greedy).

A single-turn domain's answer is one completion. A multi-turn domain's is an episode: every turn, the agent's
next reply in all episodes still in play comes from one batched generation, then each game answers; the
trajectory is the whole conversation as one token sequence with a mask on the agent's words. Each answer is judged
once, as it is made (R_agent, Eq. 1): rollout's dynamic sampling reads that verdict, and verify stores it.
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from collections.abc import Mapping

import polars as pl

from genenv.domains.base import Domain, Episode, MultiTurnDomain, TaskInstance, Verdict
from genenv.models.conversation import encode_conversation
from genenv.models.sampling import GenerationBackend, PolicyBackend, SamplingSettings, encode_prompt
from genenv.pipeline.context import GenerationRef, progress_bar
from genenv.warehouse.purposes import Purpose

ANSWER_SCHEMA = pl.Schema(
    {
        "task_id": pl.String(),
        "purpose": pl.String(),
        "sample_index": pl.Int64(),
        "completion": pl.String(),
        "finished": pl.Boolean(),
        "prompt_ids": pl.List(pl.Int64),
        "completion_ids": pl.List(pl.Int64),
        "completion_mask": pl.List(pl.Int8),
        "reward": pl.Float64(),
        "parsed_action": pl.String(),
        "parse_error": pl.String(),
        "turns": pl.String(),
    }
)
"""Answers as generated and judged; `turns`: a multi-turn verdict's replayed turns as JSON (null for one turn)."""
TURN_SEED_STRIDE = 7919
"""Each turn samples with its own seed (sampling seed + turn x this prime), so turns do not repeat each other."""


def answer_tasks(
    ref: GenerationRef,
    backend: GenerationBackend,
    tasks: list[tuple[TaskInstance, Purpose]],
    samples: int | Mapping[Purpose, int],
    sampling: SamplingSettings,
    label: str,
) -> pl.DataFrame:
    """`samples` agent answers to each (task, purpose) (a count per purpose, or one for all), as rows of
    completions (episodes when multi-turn) with their verdicts, generated in one batched call."""
    counts = samples if isinstance(samples, Mapping) else defaultdict(lambda: samples)
    work = [(task, purpose, k) for task, purpose in tasks for k in range(counts[purpose])]
    domain = ref.domain  # built on each access
    if isinstance(domain, MultiTurnDomain):
        if not isinstance(backend, PolicyBackend):  # validate refuses a multi-turn domain on Ray workers
            raise TypeError(f"{domain.name} is played turn by turn, by a policy in the flow's process")
        return _play_episodes(ref, domain, backend, work, sampling, label)
    conversations = [domain.agent_messages(task) for task, _, _ in work]
    with progress_bar(f"g{ref.generation} {label}", len(conversations)) as bar:
        completions = backend.generate("agent", conversations, sampling, progress=bar.advance)
    rows = [
        {
            "task_id": task.task_id,
            "purpose": purpose,
            "sample_index": k,
            "completion": completion.text,
            "finished": completion.finished,
            "prompt_ids": completion.prompt_ids,
            "completion_ids": completion.completion_ids,
            "completion_mask": None,
            **_verdict(domain, task, completion.text, completion.finished),
        }
        for (task, purpose, k), completion in zip(work, completions, strict=True)
    ]
    return pl.DataFrame(rows, schema=ANSWER_SCHEMA)


def _play_episodes(
    ref: GenerationRef,
    domain: MultiTurnDomain,
    backend: PolicyBackend,
    work: list[tuple[TaskInstance, Purpose, int]],
    sampling: SamplingSettings,
    label: str,
) -> pl.DataFrame:
    tokenizer = backend.policy.tokenizer
    episodes: list[Episode] = []
    try:
        episodes = [domain.start_episode(task) for task, _, _ in work]
        firsts = [episode.messages() for episode in episodes]
        turn = 0
        with progress_bar(f"g{ref.generation} {label}", len(episodes), unit="episode") as bar:
            while playing := [episode for episode in episodes if not episode.done]:
                turn_sampling = dataclasses.replace(sampling, seed=sampling.seed + turn * TURN_SEED_STRIDE)
                replies = backend.generate("agent", [episode.messages() for episode in playing], turn_sampling)
                for episode, reply in zip(playing, replies, strict=True):
                    episode.step(reply.text)
                bar.update(sum(episode.done for episode in playing))
                turn += 1
        rows = []
        for (task, purpose, k), episode, first in zip(work, episodes, firsts, strict=True):
            ids, mask = encode_conversation(tokenizer, episode.messages())
            start = len(encode_prompt(tokenizer, first))
            rows.append(
                {
                    "task_id": task.task_id,
                    "purpose": purpose,
                    "sample_index": k,
                    "completion": episode.transcript(),
                    "finished": episode.ended_by_game,
                    "prompt_ids": ids[:start],
                    "completion_ids": ids[start:],
                    "completion_mask": mask[start:],
                    **_verdict(domain, task, episode.transcript(), episode.ended_by_game),
                }
            )
    finally:
        for episode in episodes:
            episode.close()
    return pl.DataFrame(rows, schema=ANSWER_SCHEMA)


def _verdict(domain: Domain, task: TaskInstance, completion: str, finished: bool) -> dict:
    """An answer's verdict (`judge`) as its ANSWER_SCHEMA columns."""
    verdict = judge(domain, task, completion, finished)
    return {
        "reward": verdict.reward,
        "parsed_action": verdict.parsed_action,
        "parse_error": verdict.parse_error,
        "turns": json.dumps(list(verdict.turns)) if verdict.turns else None,
    }


def trajectory_rows(ref: GenerationRef, answers: pl.DataFrame) -> tuple[list[dict], list[dict]]:
    """Judged answers as `trajectories` rows, and the `turns` rows of multi-turn episodes."""
    threshold = ref.config.solved_threshold
    rows, turns = [], []
    for a in answers.iter_rows(named=True):
        trajectory_id = ref.key(a["purpose"], a["task_id"], a["sample_index"])
        rows.append(
            {
                "run_id": ref.run_id,
                "generation": ref.generation,
                "trajectory_id": trajectory_id,
                "task_id": a["task_id"],
                "purpose": a["purpose"],
                "sample_index": a["sample_index"],
                "completion": a["completion"],
                "finished": a["finished"],
                "prompt_tokens": len(a["prompt_ids"]),
                "completion_tokens": len(a["completion_ids"]),
                "parsed_action": a["parsed_action"],
                "parse_error": a["parse_error"],
                "reward": a["reward"],
                "solved": a["reward"] >= threshold,
                "prompt_ids": a["prompt_ids"],
                "completion_ids": a["completion_ids"],
                "completion_mask": a["completion_mask"],
            }
        )
        turns += [
            {"run_id": ref.run_id, "generation": ref.generation, "trajectory_id": trajectory_id, **turn}
            for turn in json.loads(a["turns"] or "[]")
        ]
    return rows, turns


def judge(domain: Domain, task: TaskInstance, completion: str, finished: bool) -> Verdict:
    """R_agent (Eq. 1) of one answer. A single-turn answer cut off at the token cap scores 0 whatever it says: on a
    task whose answer is to abstain, text that decodes as no call would otherwise score 1, and the cap would teach
    short answers."""
    verdict = domain.verify(completion, task)
    if finished or isinstance(domain, MultiTurnDomain) or verdict.reward == 0.0:
        return verdict
    return dataclasses.replace(verdict, reward=0.0, parse_error=verdict.parse_error or "cut off at the token cap")


def record_turns(ref: GenerationRef, turns: list[dict]) -> None:
    """Append the turns of trajectories not yet recorded: written before their trajectories (whose rows mark the
    stage done), so a crash between the two writes repeats nothing on resume."""
    if not turns:
        return
    stored = ref.warehouse.read("turns", run_id=ref.run_id, generation=ref.generation)
    recorded = set(stored["trajectory_id"].to_list()) if not stored.is_empty() else set()
    ref.warehouse.append("turns", [turn for turn in turns if turn["trajectory_id"] not in recorded])
