"""A multi-turn conversation's tokens and loss mask, on the tiny model's real tokenizer and chat template."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from genenv.models.conversation import TemplateError, encode_conversation
from genenv.models.sampling import encode_prompt

CONVERSATION = [
    {"role": "system", "content": "You play a text game."},
    {"role": "user", "content": "You are in a kitchen. There is a locker."},
    {"role": "assistant", "content": "open locker"},
    {"role": "user", "content": "You open the locker. It holds a worm."},
    {"role": "assistant", "content": "take worm"},
]


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    return AutoTokenizer.from_pretrained(tiny_model_dir)


def test_only_the_agents_words_and_their_end_tokens_carry_loss(tokenizer):
    ids, mask = encode_conversation(tokenizer, CONVERSATION)
    assert len(ids) == len(mask)
    learned = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m])
    context = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if not m])
    assert learned.replace(" ", "") == "openlocker<|im_end|>takeworm<|im_end|>"
    assert "kitchen" in context and "worm." in context and "open locker" not in context


def test_the_sequence_starts_with_the_first_prompt_the_agent_saw(tokenizer):
    ids, mask = encode_conversation(tokenizer, CONVERSATION)
    first_prompt = encode_prompt(tokenizer, CONVERSATION[:2])
    assert ids[: len(first_prompt)] == first_prompt and not any(mask[: len(first_prompt)])
    assert mask[len(first_prompt)] == 1


def test_a_template_that_rewrites_earlier_turns_is_refused(tokenizer):
    rewriting = "{% for m in messages %}{{ m['role'] }}:{{ m['content'] | length }}\n{% endfor %}"
    tokenizer = AutoTokenizer.from_pretrained(tokenizer.name_or_path)
    tokenizer.chat_template = rewriting
    with pytest.raises(TemplateError, match="turn 2"):
        encode_conversation(tokenizer, CONVERSATION)
