"""A runtime keeps one policy per process and moves it between checkpoints by swapping adapters: the result equals a
fresh load of those checkpoints, and a run's stages load the base model once (docs/gpu.md, 'One GPU, two jobs')."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from genenv.config import GenEnvConfig
from genenv.models.adapters import swap_adapters
from genenv.models.grpo import grpo_update
from genenv.models.policy import ROLES, LoraSettings, PolicyPair
from genenv.models.sampling import SamplingSettings
from genenv.runtime.checkpoints import NO_CHECKPOINTS
from genenv.runtime.handle import ModelRuntime
from genenv.runtime.in_process import InProcessRuntime
from genenv.warehouse.checkpoints import publish_adapter
from tests.support.training_rows import GRPO, SAMPLES

PROMPTS = [[1, 40, 41, 42, 43], [1, 50, 51]]
COMPLETIONS = [[60, 61], [62, 63, 64]]
GREEDY = SamplingSettings(max_new_tokens=8, temperature=0.0)
CONVERSATIONS = [[{"role": "user", "content": f"book a hotel in Tokyo for {i} nights"}] for i in range(3)]


def trained_folders(model_dir: Path, out: Path, seed: int) -> dict[str, Path]:
    """Both roles' adapters after a GRPO update of each (AdamW state saved beside them), under `out`."""
    policy = PolicyPair.load(model_dir, LoraSettings(), seed=seed)
    folders = {}
    for role in ROLES:
        grpo_update(policy, role, SAMPLES, **{**GRPO, "epochs": 1})
        policy.save_adapter(role, out / role)
        folders[role] = out / role
    return folders


def state(policy: PolicyPair) -> dict[str, torch.Tensor]:
    """Every LoRA weight (references included) and each role's log-probs of a few rows, active adapter and reference."""
    out = {n: p.detach().clone() for n, p in policy.model.named_parameters() if "lora_" in n}
    for role in ROLES:
        policy.activate(role)
        with torch.no_grad():
            out[f"logp:{role}"] = policy.completion_token_logprobs(PROMPTS, COMPLETIONS)[0]
            with policy.reference(role):
                out[f"ref:{role}"] = policy.completion_token_logprobs(PROMPTS, COMPLETIONS)[0]
    policy.activate(ROLES[0])
    return out


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_swapped_adapters_equal_a_fresh_load_of_them(tiny_model_dir: Path, tmp_path: Path, precision: str) -> None:
    first = trained_folders(tiny_model_dir, tmp_path / "first", seed=1)
    second = trained_folders(tiny_model_dir, tmp_path / "second", seed=2)
    lora = LoraSettings()
    fresh = PolicyPair.load(tiny_model_dir, lora, seed=0, precision=precision)
    fresh_weights = {role: fresh.adapter_state(role) for role in ROLES}
    policy = PolicyPair.load(tiny_model_dir, lora, adapters=first, seed=0, precision=precision)

    swap_adapters(policy, second, first, fresh_weights)  # other adapters, and a reference where there was none
    loaded = PolicyPair.load(tiny_model_dir, lora, adapters=second, references=first, seed=0, precision=precision)
    got, expected = state(policy), state(loaded)
    assert got.keys() == expected.keys() and all(torch.equal(got[k], expected[k]) for k in expected)
    for role in ROLES:
        for key, value in loaded.optimizer_states[role]["state"].items():
            assert all(torch.equal(policy.optimizer_states[role]["state"][key][n], value[n]) for n in value)

    swap_adapters(policy, {"agent": None, "simulator": second["simulator"]}, {}, fresh_weights)  # back to fresh
    loaded = PolicyPair.load(tiny_model_dir, lora, adapters={"simulator": second["simulator"]}, precision=precision)
    got, expected = state(policy), state(loaded)
    assert got.keys() == expected.keys() and all(torch.equal(got[k], expected[k]) for k in expected)
    assert "agent" not in policy.optimizer_states and "simulator" in policy.optimizer_states


def test_an_adapter_of_another_rank_is_refused(tiny_model_dir: Path, tmp_path: Path) -> None:
    folders = trained_folders(tiny_model_dir, tmp_path, seed=1)
    policy = PolicyPair.load(tiny_model_dir, LoraSettings(r=4))
    with pytest.raises(ValueError, match="does not fit this policy's agent adapter"):
        swap_adapters(policy, folders, None, {})


def test_a_run_loads_its_policy_once_and_swaps_adapters_between_stages(tiny_model_dir: Path, tmp_path: Path) -> None:
    """Warm start, then two generations' stages (generate with the last adapters and the warm start as KL reference,
    train, save), as the flow calls the runtime: one load, one swap (the warm start becomes the KL reference; the
    adapters a stage saved are those it holds); each stage generates as a fresh load would."""
    config = GenEnvConfig(model=str(tiny_model_dir), data_dir=str(tmp_path))
    runtime = ModelRuntime()
    try:
        policy = runtime.training(config, NO_CHECKPOINTS)  # generation 0: the warm start
        runtime.fit(policy, grpo_update, "agent", SAMPLES, **GRPO)
        warm = saved(runtime, policy, tmp_path / "g0")
        answers = []
        previous = warm
        for generation in (1, 2):
            answers.append(runtime.backend(config, previous, warm).generate("agent", CONVERSATIONS, GREEDY))
            policy = runtime.training(config, previous, warm)
            runtime.fit(policy, grpo_update, "agent", SAMPLES, **GRPO)
            previous = saved(runtime, policy, tmp_path / f"g{generation}")
        answers.append(runtime.backend(config, previous, warm).generate("agent", CONVERSATIONS, GREEDY))
        slot = runtime.current.slot
        assert isinstance(runtime.current, InProcessRuntime) and (slot.loads, slot.swaps) == (1, 1)
    finally:
        runtime.release()
    for checkpoints, got in zip((warm, *generations(tmp_path)), answers, strict=True):
        alone = ModelRuntime()
        try:
            expected = alone.backend(config, checkpoints, warm).generate("agent", CONVERSATIONS, GREEDY)
        finally:
            alone.release()
        assert [c.completion_ids for c in got] == [c.completion_ids for c in expected]


def saved(runtime: ModelRuntime, policy: PolicyPair, folder: Path) -> tuple[str, str]:
    """What a stage does after its updates: both adapters saved and published, the runtime told."""
    for role in ROLES:
        policy.save_adapter(role, folder / "staging" / role)
        publish_adapter(folder / "staging" / role, str(folder / role))
    checkpoints = (str(folder / "agent"), str(folder / "simulator"))
    runtime.saved(checkpoints)
    return checkpoints


def generations(root: Path) -> list[tuple[str, str]]:
    return [(str(root / f"g{g}" / "agent"), str(root / f"g{g}" / "simulator")) for g in (1, 2)]
