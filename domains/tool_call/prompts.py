"""What the agent and the simulator see. Compact on purpose: CPU inference cost grows with prompt tokens."""

from __future__ import annotations

import json
from typing import Any

from genenv.domains.base import DifficultyWords, Messages, difficulty_hint

AGENT_SYSTEM = (
    "You are an expert in composing functions. You are given a question and a set of possible functions. "
    "Based on the question, you will need to make one or more function/tool calls to achieve the purpose. "
    "If none of the functions can be used, point it out by answering []. "
    "If you decide to invoke any of the function(s), you MUST put it in the format of "
    "[func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)]. "
    "You SHOULD NOT include any other text in the response.\nFunctions: "
)

SIMULATOR_SYSTEM = (
    "You write training tasks for a function-calling assistant. Reply with exactly two lines:\n"
    "Request: <one natural user request>\n"
    'Answer: <the calls that fulfil it, e.g. [func(arg=1, other="text")], or [] when no function fits>'
)


def functions_json(functions: list[dict[str, Any]]) -> str:
    return json.dumps(functions, separators=(",", ":"), ensure_ascii=False)


def agent_messages(functions: list[dict[str, Any]], question: str) -> Messages:
    return [
        {"role": "system", "content": AGENT_SYSTEM + functions_json(functions)},
        {"role": "user", "content": question},
    ]


DIFFICULTY = DifficultyWords(
    tasks="tasks",
    solves="solves",
    harder="Make the new request harder: less direct wording, more arguments or values to infer.",
    easier="Make the new request easier: plain wording with every value stated explicitly.",
)


def simulator_messages(
    functions: list[dict[str, Any]],
    question: str,
    answer: str,
    success_rate: float | None,
    alpha: float = 0.5,
    k_min: float = 0.1,
) -> Messages:
    user = (
        f"Functions: {functions_json(functions)}\n"
        f"Example task:\nRequest: {question}\nAnswer: {answer}\n"
        f"{difficulty_hint(success_rate, alpha, k_min, DIFFICULTY)}\n"
        "Write ONE new request that differs from the example (other values or phrasing) and its answer: the calls "
        "that fulfil it, or [] if none of these functions can. Use only the functions and parameters above; put "
        "strings in double quotes."
    )
    return [{"role": "system", "content": SIMULATOR_SYSTEM}, {"role": "user", "content": user}]


def simulator_target(question: str, answer: str) -> str:
    return f"Request: {question}\nAnswer: {answer}"
