"""The prompts each benchmark is run with, as the benchmark's own harness words them.

- BFCL: the leaderboard's default system prompt for prompting models, built by the tool_call domain
  (`genenv.domains.tool_call.prompts.agent_messages`), so the agent is scored on the prompt it trains on.
- API-Bank level-1: the item's own `instruction` (format, API descriptions) followed by its `input` dialogue.
- Bamboogle: FlashRAG's direct-generation instruction (the copy here is FlashRAG's), asking for the bare answer.
"""

from __future__ import annotations

from genenv.evaluation.benchmark_registry import Messages

BAMBOOGLE_SYSTEM_PROMPT = (
    "Answer the question based on your own knowledge. Only give me the answer and do not output any other words."
)


def api_bank_messages(instruction: str, dialogue: str) -> Messages:
    return [{"role": "user", "content": instruction.strip() + "\n" + dialogue}]


def bamboogle_messages(question: str) -> Messages:
    return [{"role": "system", "content": BAMBOOGLE_SYSTEM_PROMPT}, {"role": "user", "content": question}]
