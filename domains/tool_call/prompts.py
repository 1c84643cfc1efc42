"""What the agent and the simulator see.

The agent sees BFCL's own prompt in training and in scoring: the leaderboard's default system prompt for prompting
(non-native function-calling) models, with the function docs as indented JSON and the Python hint appended to each
description, byte for byte as the pinned bfcl-eval builds it (`system_prompt_pre_processing_chat_model` after
`add_language_specific_hint_to_function_doc`, tested over every item of four categories). The simulator's prompt is
compact: CPU inference cost grows with prompt tokens, and no benchmark scores it.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from genenv.domains.base import DifficultyWords, Messages, difficulty_hint

# bfcl_eval/constants/default_prompts.py, style "classic", prompt_fmt "plaintext", ret_fmt "python", no tool-call tag,
# func_doc_fmt "json": "{persona}{task}\n\n{tool_call_format}\n\n{multiturn_behavior}\n\n{available_tools}". The missing
# space after "functions." and the double space before "You SHOULD" (an empty `param_types`) are BFCL's.
AGENT_SYSTEM = (
    "You are an expert in composing functions."
    "You are given a question and a set of possible functions. Based on the question, you will need to make one or "
    "more function/tool calls to achieve the purpose. If none of the functions can be used, point it out. If the "
    "given question lacks the parameters required by the function, also point it out."
    "\n\n"
    "You should only return the function calls in your response.\n\nIf you decide to invoke any of the function(s), "
    "you MUST put it in the format of [func_name1(params_name1=params_value1, params_name2=params_value2...), "
    "func_name2(params)].  You SHOULD NOT include any other text in the response."
    "\n\n"
    "At each turn, you should try your best to complete the tasks requested by the user within the current turn. "
    "Continue to output functions to call until you have fulfilled the user's request to the best of your ability. "
    "Once you have no more functions to call, the system will consider the current turn complete and proceed to the "
    "next turn or task."
    "\n\n"
    "Here is a list of functions in json format that you can invoke.\n{functions}\n"
)
PYTHON_HINT = " Note that the provided function is in Python 3 syntax."


def agent_system_prompt(functions: list[dict[str, Any]]) -> str:
    """BFCL's system prompt for `functions`: each description gets the Python hint, the docs are indented JSON."""
    docs = copy.deepcopy(functions)
    for function in docs:
        function["description"] = function.get("description", "") + PYTHON_HINT
    return AGENT_SYSTEM.format(functions=json.dumps(docs, indent=4))


def agent_messages(functions: list[dict[str, Any]], turns: list[dict[str, str]]) -> Messages:
    """BFCL's system prompt first; a system turn that opens the question is appended to it, as bfcl_eval does."""
    system = agent_system_prompt(functions)
    rest = [dict(turn) for turn in turns]
    if rest and rest[0]["role"] == "system":
        system = system + "\n\n" + rest.pop(0)["content"]
    return [{"role": "system", "content": system}, *rest]


def functions_json(functions: list[dict[str, Any]]) -> str:
    return json.dumps(functions, separators=(",", ":"), ensure_ascii=False)


SIMULATOR_SYSTEM = (
    "You write training tasks for a function-calling assistant. Reply with exactly two lines:\n"
    "Request: <one natural user request>\n"
    'Answer: <the calls that fulfil it, e.g. [func(arg=1, other="text")], or [] when no function fits>'
)


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
