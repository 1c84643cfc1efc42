"""The agent is trained on the prompt BFCL scores it with: byte for byte what the pinned bfcl-eval builds."""

from __future__ import annotations

import json

import pytest

from genenv.benchmark_data import bfcl_dir
from genenv.domains.base import TaskInstance, get_domain
from genenv.evaluation.bfcl import CATEGORIES, Bfcl
from genenv.evaluation.loaders import bfcl_entries
from tests.support.official_bfcl import official_messages

pytestmark = pytest.mark.skipif(bfcl_dir() is None, reason="bfcl-eval is not installed (the Makefile installs it)")


@pytest.mark.parametrize("category", CATEGORIES)
def test_every_item_is_prompted_as_bfcl_prompts_it(category: str) -> None:
    entries = {entry["id"]: entry for entry in bfcl_entries(None, category)}
    items = [item for item in Bfcl((category,)).load(None)]
    assert len(items) == len(entries) >= 200
    for item in items:
        assert item.messages == official_messages(entries[item.item_id]), item.item_id


def test_a_generated_task_is_prompted_as_bfcl_prompts_its_functions_and_question() -> None:
    domain = get_domain("tool_call")
    seed = next(s for s in domain.load_seeds() if len(s.spec["functions"]) > 1)
    task = TaskInstance("run/g1/b0/v0", {**seed.spec, "question": "Is it going to rain in Köln on Friday?"}, "[]")
    entry = {
        "id": "simple_python_0",
        "function": task.spec["functions"],
        "question": [[{"role": "user", "content": task.spec["question"]}]],
    }
    ours = domain.agent_messages(task)
    assert (
        json.dumps(ours, ensure_ascii=False).encode()
        == json.dumps(official_messages(entry), ensure_ascii=False).encode()
    )
    assert "Köln" in ours[1]["content"] and "json format" in ours[0]["content"]
