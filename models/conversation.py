"""A multi-turn conversation as one token sequence with a loss mask: what the agent wrote is learned from, what
the environment answered is context only (GRPO over multi-turn trajectories)."""

from __future__ import annotations

Messages = list[dict[str, str]]


class TemplateError(ValueError):
    """The chat template does not render a conversation's earlier turns as a prefix of the whole."""


def encode_conversation(tokenizer, conversation: Messages) -> tuple[list[int], list[int]]:
    """Token ids of `conversation` as its chat template renders it, and a mask over them: 1 on the content of every
    assistant message and on the token that ends it (so stopping is learned too), 0 elsewhere (system, the
    observations, template tokens).

    The sequence is the rendered text tokenized once, as the model saw each turn's prompt; the tokens sampled at
    a turn can differ from the text's tokenization of the same words (re-tokenization), which only matters for
    the rare words a model spells unusually."""
    text = tokenizer.apply_chat_template(conversation, tokenize=False)
    spans = []
    for index, message in enumerate(conversation):
        if message["role"] != "assistant":
            continue
        prefix = tokenizer.apply_chat_template(conversation[:index], add_generation_prompt=True, tokenize=False)
        if not text.startswith(prefix + message["content"]):
            raise TemplateError(f"turn {index}: the chat template renders the turns before it differently")
        spans.append((len(prefix), len(prefix) + len(message["content"])))
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    offsets = encoded["offset_mapping"]
    mask = [0] * len(offsets)
    for start, end in spans:
        inside = [i for i, (a, b) in enumerate(offsets) if a < end and b > start]
        after = next((i for i, (a, _) in enumerate(offsets) if a >= end), None)
        for i in [*inside, *([] if after is None else [after])]:
            mask[i] = 1
    return encoded["input_ids"], mask
