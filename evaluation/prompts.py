"""The prompts each benchmark is run with, as the benchmark's own harness words them.

- BFCL: the leaderboard's default system prompt for prompting (non-native function-calling) models, with the
  function docs as indented JSON and the Python hint appended to each description, as bfcl_eval does.
- API-Bank level-1: the item's own `instruction` (format, API descriptions) followed by its `input` dialogue.
- Bamboogle: FlashRAG's direct-generation instruction (the copy here is FlashRAG's), asking for the bare answer.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from genenv.evaluation.registry import Messages

BFCL_SYSTEM_PROMPT = (
    "You are an expert in composing functions. You are given a question and a set of possible functions. "
    "Based on the question, you will need to make one or more function/tool calls to achieve the purpose.\n"
    "If none of the functions can be used, point it out. If the given question lacks the parameters required by "
    "the function, also point it out.\nYou should only return the function calls in your response.\n\n"
    "If you decide to invoke any of the function(s), you MUST put it in the format of "
    "[func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)]\n"
    "You SHOULD NOT include any other text in the response.\n\n"
    "At each turn, you should try your best to complete the tasks requested by the user within the current turn. "
    "Continue to output functions to call until you have fulfilled the user's request to the best of your ability. "
    "Once you have no more functions to call, the system will consider the current turn complete and proceed to "
    "the next turn or task.\n\nHere is a list of functions in JSON format that you can invoke.\n{functions}\n"
)
BFCL_PYTHON_HINT = " Note that the provided function is in Python 3 syntax."

BAMBOOGLE_SYSTEM_PROMPT = (
    "Answer the question based on your own knowledge. Only give me the answer and do not output any other words."
)


def bfcl_messages(functions: list[dict[str, Any]], question: list[dict[str, str]]) -> Messages:
    """BFCL's system prompt first; a system turn in the question is appended to it, as bfcl_eval does."""
    docs = copy.deepcopy(functions)
    for function in docs:
        function["description"] = function.get("description", "") + BFCL_PYTHON_HINT
    system = BFCL_SYSTEM_PROMPT.format(functions=json.dumps(docs, indent=4))
    turns = [dict(message) for message in question]
    if turns and turns[0]["role"] == "system":
        system = system + "\n\n" + turns.pop(0)["content"]
    return [{"role": "system", "content": system}, *turns]


def api_bank_messages(instruction: str, dialogue: str) -> Messages:
    return [{"role": "user", "content": instruction.strip() + "\n" + dialogue}]


def bamboogle_messages(question: str) -> Messages:
    return [{"role": "system", "content": BAMBOOGLE_SYSTEM_PROMPT}, {"role": "user", "content": question}]
