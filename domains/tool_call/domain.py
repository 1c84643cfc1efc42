"""The tool_call domain: BFCL-style function calling, R_agent by BFCL's AST checker plus the schema.

Reject convention: `parse_candidate` returns task=None when the simulator output could not be turned into a task
(reasons "empty" .. "unparseable_answer"); `validate` keeps the parsed task and sets reject_reason (the rest).
"""

from __future__ import annotations

import dataclasses
import json
import re
import string
from collections.abc import Iterable, Sequence
from importlib import resources
from typing import Any

from genenv.domains import decontamination
from genenv.domains.base import AbstentionBuilder, Candidate, Messages, TaskInstance, ValidationContext, Verdict
from genenv.domains.tool_call import abstention, grounding, prompts
from genenv.domains.tool_call.calls import Call, ParseError, canonical_calls, format_calls, parse_calls
from genenv.domains.tool_call.checker import check, decode, possible_answers
from genenv.domains.tool_call.difficulty import difficulty_parts
from genenv.domains.tool_call.relevance import Relevance
from genenv.domains.tool_call.schema import schema_error

PARSE_REJECT_REASONS = ("empty", "too_long", "truncated", "missing_request", "missing_answer", "unparseable_answer")
VALIDATE_REJECT_REASONS = (
    "unknown_function",
    "missing_required_argument",
    "unknown_argument",
    "wrong_type",
    "value_not_allowed",
    "checker_rejects_answer",
    "duplicate",
    "benchmark_overlap",
    "heldout_overlap",
    *grounding.REJECT_REASONS,
)
REJECT_REASONS = PARSE_REJECT_REASONS + VALIDATE_REJECT_REASONS
MAX_RAW_CHARS = 2000

_REQUEST = re.compile(r"^[ \t*#]*request[ \t*]*:[ \t*]*", re.IGNORECASE | re.MULTILINE)
_ANSWER = re.compile(r"^[ \t*#]*answer[ \t*]*:[ \t*]*", re.IGNORECASE | re.MULTILINE)
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def family_of(functions: list[dict[str, Any]]) -> str:
    """Seeds offering the same functions are siblings."""
    return "+".join(sorted(f["name"] for f in functions))


def normalise_question(text: str) -> str:
    return " ".join(text.lower().translate(_PUNCTUATION).split())


class ToolCallDomain:
    name = "tool_call"

    def __init__(self, wrong_call_reward: float = 0.0, relevance: Relevance | None = None) -> None:
        self.wrong_call_reward = wrong_call_reward
        """R_agent of an answer that calls the task's functions with wrong arguments (tasks that ask for calls)."""
        self.relevance = relevance
        """The sentence encoder's check that a call fits its request (relevance.py); None: the rules alone."""

    def load_seeds(self) -> list[TaskInstance]:
        text = resources.files("genenv.domains.tool_call").joinpath("data/seeds.jsonl").read_text(encoding="utf-8")
        seeds = []
        for line in text.splitlines():
            row = json.loads(line)
            seeds.append(
                TaskInstance(
                    task_id=row["seed_id"],
                    spec={"functions": row["functions"], "question": row["question"]},
                    answer=row["answer"],
                    family=family_of(row["functions"]),
                )
            )
        return seeds

    def agent_messages(self, task: TaskInstance) -> Messages:
        """BFCL's prompt for the task's functions and request: what the benchmark will show the agent."""
        return prompts.agent_messages(task.spec["functions"], [{"role": "user", "content": task.spec["question"]}])

    def simulator_messages(
        self, seed: TaskInstance, success_rate: float | None, alpha: float = 0.5, k_min: float = 0.1
    ) -> Messages:
        return prompts.simulator_messages(
            seed.spec["functions"], seed.spec["question"], seed.answer, success_rate, alpha, k_min
        )

    def simulator_target(self, task: TaskInstance) -> str:
        return prompts.simulator_target(task.spec["question"], task.answer)

    def parse_candidate(self, raw: str, seed: TaskInstance, task_id: str, truncated: bool) -> Candidate:
        if not raw.strip():
            return Candidate(raw=raw, task=None, reject_reason="empty")
        if len(raw) > MAX_RAW_CHARS:
            return Candidate(raw=raw, task=None, reject_reason="too_long")
        request, answer = _split_request_answer(raw)
        calls = _try_parse(answer)
        reason = None
        if truncated and calls is None:
            reason = "truncated"
        elif not request:
            reason = "missing_request"
        elif not answer:
            reason = "missing_answer"
        elif calls is None:
            reason = "unparseable_answer"
        if reason is not None:
            return Candidate(raw=raw, task=None, reject_reason=reason)
        task = TaskInstance(
            task_id=task_id,
            spec={"functions": seed.spec["functions"], "question": request},
            answer=format_calls(calls),
            family=seed.family,
        )
        return Candidate(raw=raw, task=task)

    def validate(self, candidate: Candidate, context: ValidationContext) -> Candidate:
        task = candidate.task
        if task is None or candidate.reject_reason is not None:
            return candidate
        reason = self._reject_reason(task, context)
        return candidate if reason is None else dataclasses.replace(candidate, reject_reason=reason)

    def _reject_reason(self, task: TaskInstance, context: ValidationContext) -> str | None:
        """The first failed check, cheapest and most basic first; None when the task is valid."""
        calls = _try_parse(task.answer)
        if calls is None:
            return "unparseable_answer"
        functions, request = task.spec["functions"], task.spec["question"]
        checks = (
            lambda: schema_error(calls, functions),
            lambda: "checker_rejects_answer" if self.verify(task.answer, task).reward != 1.0 else None,
            lambda: "duplicate" if self.dedup_key(task) in context.seen_keys else None,
            lambda: "benchmark_overlap" if context.is_contaminated(request) else None,
            lambda: "heldout_overlap" if calls and self.answer_key(task) in context.heldout_calls else None,
            lambda: grounding.answer_error(calls, functions, request, self.relevance),
        )
        return next((reason for run in checks if (reason := run()) is not None), None)

    def dedup_key(self, task: TaskInstance) -> str:
        """Same request modulo case, punctuation and spacing, with the same calls in any order."""
        return normalise_question(task.spec["question"]) + "||" + self.answer_key(task)

    def sibling_key(self, task: TaskInstance) -> str:
        """Seeds offering the same functions."""
        return task.family

    def answer_key(self, task: TaskInstance) -> str:
        """The calls in canonical form (calls.canonical_calls), as ValidationContext.heldout_calls holds them."""
        return canonical_calls(parse_calls(task.answer))

    def verify(self, output: str, task: TaskInstance) -> Verdict:
        """R_agent = 1.0 when BFCL's AST checker accepts `output` for the task (the irrelevance rule when the answer
        is `[]`) and every call fits the schema exactly (enum values as listed). A bad reference raises: tasks are
        validated first."""
        functions = task.spec["functions"]
        reference = parse_calls(task.answer)
        if reference:
            judged = check("parallel", functions, output, possible_answers(reference, functions))
        else:
            judged = check("irrelevance", functions, output, None)
        try:
            predicted = decode(output)
        except ParseError as exc:
            return Verdict(reward=float(judged.valid), parsed_action=None, parse_error=str(exc))
        solved = judged.valid and schema_error(predicted, functions) is None
        reward = 1.0 if solved else self._tried(predicted, reference)
        return Verdict(reward=reward, parsed_action=format_calls(predicted))

    def _tried(self, predicted: list[Call], reference: list[Call]) -> float:
        """`wrong_call_reward` when a task that asks for calls gets the right functions with wrong arguments: above
        the 0 of `[]` or another function, so a group that fails every way still says "call, don't abstain"."""
        names = sorted(call.name for call in predicted)
        return self.wrong_call_reward if reference and names == sorted(call.name for call in reference) else 0.0

    def demonstrations(self, task: TaskInstance) -> list[tuple[Messages, str]]:
        return [(self.agent_messages(task), task.answer)]

    def difficulty(self, task: TaskInstance) -> float:
        """The sum of `difficulty_parts`: calls, argument values, optional ones, offered functions not called and
        values to infer, what the simulator is asked for to make a task harder."""
        return sum(self.difficulty_parts(task).values())

    def difficulty_parts(self, task: TaskInstance) -> dict[str, float]:
        return difficulty_parts(task)

    def is_abstention(self, task: TaskInstance) -> bool:
        return not parse_calls(task.answer)

    def abstains(self, output: str) -> bool:
        """The answer decodes as no call (`[]`): BFCL's irrelevance verdict for it would be "no call made"."""
        try:
            return not decode(output)
        except ParseError:
            return False

    def abstention_task(self, offered: TaskInstance, request: TaskInstance, task_id: str) -> TaskInstance | None:
        """`request`'s question offered only `offered`'s unrelated functions, answered `[]` (abstention.unrelated)."""
        return abstention.unrelated(offered, request, task_id)

    def abstention_builders(self, pool: Sequence[TaskInstance]) -> dict[str, AbstentionBuilder]:
        """Unrelated functions, a function of the same namespace, a request without a required value (abstention.py)."""
        return abstention.builders(pool)

    def benchmark_texts(self, benchmarks_dir: str) -> Iterable[str]:
        return decontamination.benchmark_texts(benchmarks_dir)

    def benchmark_sets(self, benchmarks_dir: str) -> dict[str, str | None]:
        return decontamination.set_status(benchmarks_dir)


def _split_request_answer(raw: str) -> tuple[str, str]:
    """`Request: ...` (may wrap onto following lines) and the calls after `Answer:` (or on the next line)."""
    request_match = _REQUEST.search(raw)
    answer_match = _ANSWER.search(raw)
    request = ""
    if request_match:
        end = answer_match.start() if answer_match and answer_match.start() > request_match.end() else None
        request = " ".join(raw[request_match.end() : end].split()) if end else _rest_of_line(raw, request_match)
        request = _unquote(request)
    answer = ""
    if answer_match:
        answer = _rest_of_line(raw, answer_match)
        if not answer:
            following = raw[answer_match.end() :].strip()
            answer = following.splitlines()[0].strip() if following else ""
    return request, answer.strip("`").strip()


def _rest_of_line(raw: str, match: re.Match[str]) -> str:
    return raw[match.end() :].split("\n", 1)[0].strip()


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1].strip()
    return text


def _try_parse(answer: str) -> list[Call] | None:
    """Calls (`[]`: no offered function fits the request), or None when the answer is not a list of calls."""
    try:
        return parse_calls(answer)
    except ParseError:
        return None
