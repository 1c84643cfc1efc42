"""The tool_call domain: BFCL-style function calling, R_agent by exact match of the calls.

Reject convention: `parse_candidate` returns task=None when the simulator output could not be turned into a task
(reasons "empty" .. "unparseable_answer"); `validate` keeps the parsed task and sets reject_reason (the rest).
"""

from __future__ import annotations

import dataclasses
import json
import re
import string
from collections.abc import Iterable
from importlib import resources
from typing import Any

from domains import decontamination
from domains.base import Candidate, Messages, TaskInstance, ValidationContext, Verdict
from domains.tool_call import prompts
from domains.tool_call.calls import Call, ParseError, canonical_calls, format_calls, parse_calls
from domains.tool_call.schema import calls_match, schema_error

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
    structured = True

    def load_seeds(self) -> list[TaskInstance]:
        text = resources.files("domains.tool_call").joinpath("data/seeds.jsonl").read_text(encoding="utf-8")
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
        return prompts.agent_messages(task.spec["functions"], task.spec["question"])

    def simulator_messages(self, seed: TaskInstance, success_rate: float | None) -> Messages:
        return prompts.simulator_messages(seed.spec["functions"], seed.spec["question"], seed.answer, success_rate)

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
        calls = _try_parse(task.answer)
        reason = "unparseable_answer" if calls is None else schema_error(calls, task.spec["functions"])
        if reason is None and self.verify(task.answer, task).reward != 1.0:
            reason = "checker_rejects_answer"
        if reason is None and self.dedup_key(task) in context.seen_keys:
            reason = "duplicate"
        if reason is None and context.is_contaminated(task.spec["question"]):
            reason = "benchmark_overlap"
        return candidate if reason is None else dataclasses.replace(candidate, reject_reason=reason)

    def dedup_key(self, task: TaskInstance) -> str:
        """Same request modulo case, punctuation and spacing, with the same calls in any order."""
        return normalise_question(task.spec["question"]) + "||" + canonical_calls(parse_calls(task.answer))

    def verify(self, output: str, task: TaskInstance) -> Verdict:
        """R_agent = 1.0 on exact match of the call multiset. A bad reference raises: tasks are validated first."""
        reference = parse_calls(task.answer)
        try:
            predicted = parse_calls(output)
        except ParseError as exc:
            return Verdict(reward=0.0, parsed_action=None, parse_error=str(exc))
        reward = 1.0 if calls_match(predicted, reference, task.spec["functions"]) else 0.0
        return Verdict(reward=reward, parsed_action=format_calls(predicted))

    def benchmark_texts(self, benchmarks_dir: str) -> Iterable[str]:
        return decontamination.benchmark_texts(benchmarks_dir)


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
    """Calls, or None when there is no non-empty, parseable list of calls."""
    try:
        calls = parse_calls(answer)
    except ParseError:
        return None
    return calls or None
