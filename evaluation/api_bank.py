"""API-Bank level-1 API calls: the predicted `[ApiName(key='value', ...)]` must name the expected API with the
expected arguments.

As API-Bank's evaluator does, the first `[Name(...)]` in the output is taken (text around it is allowed) and the
arguments are compared as strings (its parser reads `k='1'`, `k="1"` and `k=1` alike). API-Bank then executes the
call against its mock APIs and compares the recorded input; here nothing is executed: the call is parsed with
`ast` and its arguments compared with the expected ones exactly, which is what that input comparison checks.
31 of the 399 gold answers quote list values in a way Python cannot read (`attendees='['A', 'B']'`); text that
`ast` cannot read is parsed with API-Bank's own argument pattern instead, for the gold answer and the output alike.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from genenv.benchmark_data import folder_file, missing_folder_set
from genenv.domains.tool_call.calls import Call, ParseError, format_value, parse_calls
from genenv.evaluation import benchmark_prompts, loaders
from genenv.evaluation.benchmark_registry import Item, ItemScore, register_benchmark

CATEGORY = "level-1"
_API_CALL = re.compile(r"\[(\w+)\((.*)\)\]")
_API_ARGUMENT = re.compile(r"(\w+)\s*=\s*['\"](.+?)['\"]|(\w+)\s*=\s*(\[.*\])|(\w+)\s*=\s*(\w+)")
"""API-Bank's own patterns for the call in a model output and for its arguments (api_call_extraction.py)."""


def parse_api_call(text: str) -> Call | None:
    """The first `[Name(k='v', ...)]` in `text`, argument values as strings; None when there is none."""
    match = _API_CALL.search(text)
    if match is None:
        return None
    try:
        calls = parse_calls(match.group(0))
    except ParseError:
        arguments = {}
        for found in _API_ARGUMENT.finditer(match.group(2)):
            key, value = next((found.group(i), found.group(i + 1)) for i in (1, 3, 5) if found.group(i))
            arguments[key] = value
        return Call(match.group(1), arguments)
    return Call(calls[0].name, {k: v if isinstance(v, str) else _text(v) for k, v in calls[0].arguments.items()})


def _text(value: Any) -> str:
    return format_value(value) if isinstance(value, list | dict) else str(value)


def check(output: str, expected: Call) -> str | None:
    """None when `output` makes the expected call; else the API-Bank error kind."""
    call = parse_api_call(output)
    if call is None:
        return "no_api_call"
    if call.name != expected.name:
        return "api_name_mismatch"
    if call.arguments != expected.arguments:
        return "input_mismatch"
    return None


class ApiBank:
    name = "api_bank"
    metrics = ("accuracy",)
    max_new_tokens = 64

    def missing(self, data_dir: Path | None) -> str | None:
        return None if folder_file(data_dir, "api-bank") else missing_folder_set(data_dir, "api-bank")

    def load(self, data_dir: Path | None, limit: int | None = None) -> list[Item]:
        items = []
        for index, row in enumerate(loaders.api_bank_level1(data_dir, limit)):
            messages = benchmark_prompts.api_bank_messages(row["instruction"], row["input"])
            items.append(Item(f"level-1-{index}", CATEGORY, messages, row["expected_output"]))
        return items

    def score(self, item: Item, output: str) -> ItemScore:
        expected = parse_api_call(item.reference)
        if expected is None:
            raise ValueError(f"API-Bank item {item.item_id} has no API call in its expected output")
        error = check(output, expected)
        return ItemScore({"accuracy": float(error is None)}, error)


@register_benchmark("api_bank")
def api_bank_benchmark() -> ApiBank:
    return ApiBank()
