from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

import pytest
import torch
from transformers import DynamicCache

from genenv.models.backends import BACKENDS
from genenv.models.cpu.kv_cache import DecodingCache
from genenv.models.policy import LoraSettings, PolicyPair, cache_argument, length_batches, shared_prefix_length
from genenv.models.sampling import SamplingSettings, encode_prompt, stop_ids
from genenv.models.transformers_backend import TransformersBackend, padded

CONVERSATIONS = [[{"role": "user", "content": "What is the weather in " + "Paris " * n}] for n in (5, 1, 3, 0, 6, 2, 4)]
GREEDY = SamplingSettings(max_new_tokens=10, temperature=0)


def ids(completions) -> list[list[int]]:
    return [c.completion_ids for c in completions]


@contextmanager
def forward_shapes(policy: PolicyPair) -> Iterator[list[tuple[int, int]]]:
    """The (rows, columns) of the input ids of each forward pass of the model inside the block."""
    shapes: list[tuple[int, int]] = []
    hook = policy.model.get_base_model().register_forward_pre_hook(
        lambda module, args, kwargs: shapes.append(tuple(kwargs["input_ids"].shape)), with_kwargs=True
    )
    try:
        yield shapes
    finally:
        hook.remove()


def test_transformers_backend_is_registered(policy: PolicyPair) -> None:
    assert isinstance(BACKENDS["transformers"](policy, batch_size=4), TransformersBackend)


def test_batched_greedy_equals_one_at_a_time_in_input_order(policy: PolicyPair) -> None:
    backend = TransformersBackend(policy, batch_size=3)
    batched = backend.generate("agent", CONVERSATIONS, GREEDY)
    single = [backend.generate("agent", [c], GREEDY)[0] for c in CONVERSATIONS]
    assert ids(batched) == ids(single)
    assert len({tuple(c) for c in ids(batched)}) > 1
    for conversation, completion in zip(CONVERSATIONS, batched, strict=True):
        assert completion.prompt_ids == encode_prompt(policy.tokenizer, conversation)
        assert completion.text == policy.tokenizer.decode(completion.completion_ids, skip_special_tokens=True).strip()


def test_sampling_settings_out_of_range_fail_at_once() -> None:
    for bad in ({"top_p": 0.0}, {"top_p": 1.5}, {"temperature": -0.1}, {"max_new_tokens": 0}):
        with pytest.raises(ValueError, match="0 < top_p <= 1"):
            SamplingSettings(**bad)


def test_stops_at_max_new_tokens_unfinished(policy: PolicyPair) -> None:
    completions = TransformersBackend(policy).generate("agent", CONVERSATIONS, GREEDY)
    for completion in completions:
        assert len(completion.completion_ids) == GREEDY.max_new_tokens
        assert not completion.finished
        assert policy.tokenizer.eos_token_id not in completion.completion_ids


def test_sampling_is_deterministic_per_seed(policy: PolicyPair) -> None:
    backend = TransformersBackend(policy, batch_size=4)
    sampling = SamplingSettings(max_new_tokens=8, temperature=1.0, top_p=0.9, seed=7)
    first = backend.generate("agent", CONVERSATIONS, sampling)
    torch.manual_seed(123)
    assert ids(backend.generate("agent", CONVERSATIONS, sampling)) == ids(first)
    other = SamplingSettings(max_new_tokens=8, temperature=1.0, top_p=0.9, seed=8)
    assert ids(backend.generate("agent", CONVERSATIONS, other)) != ids(first)
    narrow = TransformersBackend(policy, batch_size=1)
    assert ids(narrow.generate("agent", CONVERSATIONS, sampling)) == ids(first), "a row's draws ignore its batch"


def test_progress_counts_rows_as_they_end(policy: PolicyPair) -> None:
    """All rows decode in one group, and stop tokens end them after different numbers of steps: progress hears of
    each step's ended rows at that step, shortest answers first."""
    unstopped = ids(TransformersBackend(policy).generate("agent", CONVERSATIONS, GREEDY))
    policy.model.generation_config.eos_token_id = [row[2 + i % 5] for i, row in enumerate(unstopped[:4])]
    seen: list[int] = []
    backend = TransformersBackend(policy, batch_size=len(CONVERSATIONS) + 1)
    lengths = [len(c) for c in ids(backend.generate("agent", CONVERSATIONS, GREEDY, progress=seen.append))]
    assert len(set(lengths)) >= 3, lengths
    assert seen == [lengths.count(n) for n in sorted(set(lengths))]
    assert backend.generate("agent", [], GREEDY, progress=seen.append) == []


def test_rows_join_as_others_end_and_answer_as_they_would_alone(policy: PolicyPair) -> None:
    """With stop tokens that end rows after different numbers of steps, queued prompts join the running rows
    (a prefill after decoding steps), fewer rows are decoded than whole batches would decode, and every greedy
    answer is the one its prompt gets alone, and each token the argmax of one plain forward pass over the
    prompt and the answer before it (no cache, no padding: positions and masks as the model means them)."""
    unstopped = ids(TransformersBackend(policy).generate("agent", CONVERSATIONS, GREEDY))
    policy.model.generation_config.eos_token_id = [row[2 + i % 5] for i, row in enumerate(unstopped[:4])]
    backend = TransformersBackend(policy, batch_size=2)
    with forward_shapes(policy) as shapes:
        batched = backend.generate("agent", CONVERSATIONS, GREEDY)
    lengths = [len(c) for c in ids(batched)]
    assert len(set(lengths)) >= 3 and any(c.finished for c in batched), lengths
    first_step = next(i for i, (_, width) in enumerate(shapes) if width == 1)
    assert any(width > 1 for _, width in shapes[first_step:]), f"no prompt joined running rows: {shapes}"
    prompts = [encode_prompt(policy.tokenizer, c) for c in CONVERSATIONS]
    batches = backend.batches(prompts, GREEDY.max_new_tokens)
    whole_batches = sum(len(b) * (max(lengths[i] for i in b) - 1) for b in batches)
    assert sum(rows for rows, width in shapes if width == 1) < whole_batches, "rows wait on no batch's longest"
    alone = [backend.generate("agent", [c], GREEDY)[0] for c in CONVERSATIONS]
    assert ids(batched) == ids(alone)
    assert [c.finished for c in batched] == [c.finished for c in alone]
    for completion in batched:
        whole = torch.tensor([completion.prompt_ids + completion.completion_ids])
        with torch.inference_mode():
            logits = policy.model(input_ids=whole).logits[0, len(completion.prompt_ids) - 1 : -1]
        assert logits.argmax(-1).tolist() == completion.completion_ids


def test_ended_rows_keep_their_answers_while_they_wait_in_the_cache(policy: PolicyPair) -> None:
    """Sampled rows that stop early stay in the cache (still computed) until rows are regrouped: the tokens the
    decoding returns for each are the ones up to its stop token or max_new_tokens, not what was computed after."""
    unstopped = ids(TransformersBackend(policy).generate("agent", CONVERSATIONS, GREEDY))
    policy.model.generation_config.eos_token_id = sorted({token for row in unstopped for token in row[1:4]})
    stops = stop_ids(policy)
    sampling = SamplingSettings(max_new_tokens=12, temperature=1.0, seed=2)
    backend = TransformersBackend(policy, batch_size=6)
    prompts = [encode_prompt(policy.tokenizer, c) for c in CONVERSATIONS * 3]
    with forward_shapes(policy) as shapes, torch.inference_mode():
        answers = backend.decode(prompts, sampling, progress=None)
    steps = sum(rows for rows, width in shapes if width == 1)
    assert steps > sum(len(answer) - 1 for answer in answers), "no ended row waited in the cache"
    for answer in answers:
        assert len(answer) <= sampling.max_new_tokens and not stops.intersection(answer[:-1]), answer
        assert answer[-1] in stops or len(answer) == sampling.max_new_tokens, answer
    assert len({len(answer) for answer in answers}) >= 4


def test_batches_never_outnumber_row_batches_and_widen_for_short_prompts() -> None:
    backend = TransformersBackend(policy=None, batch_size=4)  # batching needs no model
    prompts = [[0] * n for n in (30, 30, 31, 30, 29, 30, 30, 31, 30)]
    assert [len(b) for b in backend.batches(prompts, 8)] == [4, 4, 1]
    prompts = [[0] * n for n in (4, 12, 200, 4, 12, 4, 12, 400, 4, 12, 4, 12, 12, 4, 12)]
    assert [len(b) for b in backend.batches(prompts, 6)] == [13, 2], "13 short rows fit in 4 rows of the longest"
    assert backend.batches(prompts, 6) == length_batches([len(p) for p in prompts], 4 * (400 + 6), extra=6)


def test_merged_greedy_equals_the_unmerged_adapter_token_for_token(policy: PolicyPair, snapshot, unchanged) -> None:
    """The merged working copy answers exactly as the PEFT adapter applied per token, and leaves no trace."""
    with torch.no_grad():
        for name, param in policy.model.named_parameters():
            if "lora_B.agent." in name:
                param.normal_(0.0, 0.05)
    backend = TransformersBackend(policy, batch_size=3)
    prompts = [encode_prompt(policy.tokenizer, c) for c in CONVERSATIONS]
    base, adapter = snapshot(policy, None), snapshot(policy, "agent")
    merged = backend.generate("agent", CONVERSATIONS, GREEDY)
    trainable = {n for n, p in policy.model.named_parameters() if p.requires_grad}
    assert trainable == set(adapter), "after generating, exactly the role's adapter is trainable"
    assert unchanged(snapshot(policy, None), base) and unchanged(snapshot(policy, "agent"), adapter)
    policy.activate("agent")
    policy.model.eval()
    with torch.inference_mode():  # the backend's decoding, on the model as it is: the adapter applied per token
        unmerged = backend.decode(prompts, GREEDY, progress=None)
        with policy.model.disable_adapter():
            plain = backend.decode(prompts, GREEDY, progress=None)
    assert ids(merged) == unmerged
    assert plain != ids(merged), "the adapter must change the answers for this check to mean anything"


def test_uses_the_role_adapter_and_restores_the_mode(policy: PolicyPair) -> None:
    with torch.no_grad():
        for name, param in policy.model.named_parameters():
            if "lora_B.simulator." in name:
                param.normal_(0.0, 0.5)
    backend = TransformersBackend(policy, batch_size=8)
    policy.model.train()
    agent = backend.generate("agent", CONVERSATIONS, GREEDY)
    assert policy.model.training
    policy.model.eval()
    simulator = backend.generate("simulator", CONVERSATIONS, GREEDY)
    assert not policy.model.training
    assert ids(agent) != ids(simulator)


def test_bf16_cache_keeps_keys_in_bf16_and_changes_no_token(tiny_model_dir) -> None:
    """Under bf16 autocast keys come out of the rotary embedding in fp32; the cache stores their bf16 cast, which
    is what attention used anyway: the same sampled tokens as generate's default cache."""
    policy = PolicyPair.load(tiny_model_dir, LoraSettings(), precision="bfloat16")
    sampled = SamplingSettings(max_new_tokens=12, temperature=1.0, seed=5)
    new = TransformersBackend(policy, batch_size=4).generate("agent", CONVERSATIONS, sampled)
    with mock.patch("genenv.models.transformers_backend.DecodingCache", DynamicCache):  # the cache generate makes
        before = TransformersBackend(policy, batch_size=4).generate("agent", CONVERSATIONS, sampled)
    assert ids(new) == ids(before)
    prompt = torch.tensor([encode_prompt(policy.tokenizer, CONVERSATIONS[0])])
    dtypes = {}
    for cache in (DynamicCache(), DecodingCache()):
        with torch.no_grad(), policy.autocast():
            policy.model(input_ids=prompt, **{cache_argument(policy.model): cache})
        dtypes[type(cache)] = [{getattr(layer, kind).dtype for layer in cache.layers} for kind in ("keys", "values")]
    assert dtypes[DynamicCache][0] == {torch.float32}, "rotary's fp32 cos/sin promote the keys"
    keys, values = dtypes[DecodingCache]
    assert keys == values and len(keys) == 1


def test_chunked_prefill_changes_no_greedy_token(policy: PolicyPair) -> None:
    """Prompts several chunks long, of different lengths (so left padding spans chunk boundaries)."""
    long_conversations = [[{"role": "user", "content": "Plan a trip to " + "Paris and Rome " * n}] for n in (9, 30, 17)]
    chunked = TransformersBackend(policy, batch_size=3, prefill_chunk=16)
    lengths = [len(encode_prompt(policy.tokenizer, c)) for c in long_conversations]
    assert min(lengths) > 3 * chunked.prefill_chunk and len(set(lengths)) == 3
    whole = TransformersBackend(policy, batch_size=3, prefill_chunk=None).generate("agent", long_conversations, GREEDY)
    with forward_shapes(policy) as shapes:
        assert ids(chunked.generate("agent", long_conversations, GREEDY)) == ids(whole)
    widths = [width for _, width in shapes]
    assert max(widths) == chunked.prefill_chunk and widths.count(chunked.prefill_chunk) >= 3, widths


def test_shared_tokens_are_prefilled_once_and_rows_sampled_apart(policy: PolicyPair) -> None:
    """A task's k rollouts share one prompt, and all prompts share the chat template's start: the common start is
    computed once, the rest of each distinct prompt once for its k rows (its last token too: its logits give all
    k rows their first token), the greedy answer is the one each prompt gets alone, and sampled rows still draw
    their own tokens."""
    repeated = [c for c in CONVERSATIONS[:3] for _ in range(4)]
    prompts = [encode_prompt(policy.tokenizer, c) for c in CONVERSATIONS[:3]]
    shared = len(os.path.commonprefix(prompts))
    assert shared > 5
    backend = TransformersBackend(policy, batch_size=len(repeated))
    with forward_shapes(policy) as shapes:
        greedy = backend.generate("agent", repeated, GREEDY)
    longest = max(map(len, prompts))
    assert shapes[:3] == [(1, shared), (3, longest - shared), (len(repeated), 1)], shapes
    alone = [backend.generate("agent", [c], GREEDY)[0] for c in CONVERSATIONS[:3]]
    assert ids(greedy) == [c.completion_ids for c in alone for _ in range(4)]

    sampling = SamplingSettings(max_new_tokens=8, temperature=1.0, seed=3)
    sampled = ids(backend.generate("agent", repeated, sampling))
    assert all(len({tuple(s) for s in sampled[i : i + 4]}) > 1 for i in range(0, len(repeated), 4)), sampled


def test_padding_after_the_shared_tokens_keeps_every_prompt_whole() -> None:
    prompts = [(5, 6, 7, 8), (5, 6, 9), (5, 6, 7, 1, 2)]
    assert shared_prefix_length(prompts) == 2
    assert shared_prefix_length([(5, 6, 7)] * 2) == 2  # a repeated prompt leaves its last token to generate
    input_ids, attention = padded(prompts, pad_id=0, after=2)
    assert input_ids.tolist() == [[5, 6, 0, 7, 8], [5, 6, 0, 0, 9], [5, 6, 7, 1, 2]]
    assert attention.tolist() == [[1, 1, 0, 1, 1], [1, 1, 0, 0, 1], [1, 1, 1, 1, 1]]
    for row, mask, prompt in zip(input_ids.tolist(), attention.tolist(), prompts, strict=True):
        assert tuple(t for t, m in zip(row, mask, strict=True) if m) == prompt
