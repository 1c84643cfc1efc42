from __future__ import annotations

import gc
import shutil
import sys
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM

from genenv.models.cpu.shapes import ShapeBuckets
from genenv.models.policy import (
    MIN_SHARED_PREFIX,
    ROLES,
    LoraSettings,
    PolicyPair,
    length_batches,
    median_budget,
)

PROMPTS = [[1, 40, 41, 42, 43], [1, 50, 51]]
COMPLETIONS = [[60, 61], [62, 63, 64]]  # lengths 7 and 6: row 1 is left-padded


def logits(policy: PolicyPair, role: str) -> torch.Tensor:
    policy.activate(role)
    with torch.no_grad():
        log_probs, _, _ = policy.completion_logprobs(PROMPTS, COMPLETIONS)
    return log_probs


def perturb(policy: PolicyPair, role: str) -> None:
    """Give the adapter non-zero B so it actually changes the model."""
    with torch.no_grad():
        for name, param in policy.model.named_parameters():
            if f"lora_B.{role}." in name:
                param.normal_(0.0, 0.5)


def test_fresh_adapters_equal_the_base(policy: PolicyPair, tiny_model_dir: Path) -> None:
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    ids = torch.tensor([[1, 40, 41, 42, 43, 60, 61]])
    with torch.no_grad():
        expected = base(ids).logits
        for role in ROLES:
            policy.activate(role)
            # to fp32 rounding: the policy's frozen layers multiply by oneDNN (OneDnnLinear), the plain model by MKL
            assert torch.allclose(policy.model(ids).logits, expected, atol=1e-5)


def test_fresh_adapters_are_seeded(tiny_model_dir: Path) -> None:
    def lora_a(seed: int) -> list[torch.Tensor]:
        pair = PolicyPair.load(tiny_model_dir, LoraSettings(), seed=seed)
        return [p.detach().clone() for n, p in pair.model.named_parameters() if "lora_A" in n]

    first, again, other = lora_a(3), lora_a(3), lora_a(4)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(first, other, strict=True))


def test_tokenizer_pads_left(policy: PolicyPair) -> None:
    assert policy.tokenizer.padding_side == "left"
    assert policy.tokenizer.pad_token_id is not None


def test_activate_makes_only_that_adapter_trainable(policy: PolicyPair) -> None:
    for role in ROLES:
        policy.activate(role)
        trainable = {n for n, p in policy.model.named_parameters() if p.requires_grad}
        assert trainable
        assert all("lora_" in n and f".{role}." in n for n in trainable)
        assert policy.model.active_adapter == role
    with pytest.raises(ValueError, match="unknown role"):
        policy.activate("critic")


def test_adapters_are_independent_and_reference_disables_them(policy: PolicyPair) -> None:
    """A role without a reference adapter is anchored to the base."""
    base = logits(policy, "simulator")
    perturb(policy, "agent")
    assert not torch.allclose(logits(policy, "agent"), base)
    assert torch.equal(logits(policy, "simulator"), base)
    policy.activate("agent")
    with torch.no_grad(), policy.reference("agent"):
        reference, _, _ = policy.completion_logprobs(PROMPTS, COMPLETIONS)
    assert torch.allclose(reference, base, atol=1e-6)
    assert not torch.allclose(logits(policy, "agent"), base)


def test_reference_adapter_is_frozen_and_never_saved(policy: PolicyPair, tiny_model_dir: Path, tmp_path: Path) -> None:
    perturb(policy, "agent")
    anchor = logits(policy, "agent")
    policy.save_adapter("agent", tmp_path / "anchor")
    pair = PolicyPair.load(tiny_model_dir, LoraSettings(), references={"agent": tmp_path / "anchor"})
    base = logits(pair, "agent")
    perturb(pair, "agent")
    perturb(pair, "simulator")
    current = logits(pair, "agent")
    assert not torch.allclose(current, anchor, atol=1e-3) and not torch.allclose(current, base, atol=1e-3)
    for role, expected in (("agent", anchor), ("simulator", base)):
        pair.activate(role)
        trainable = {n for n, p in pair.model.named_parameters() if p.requires_grad}
        assert trainable and all(f".{role}." in n for n in trainable)
        with torch.no_grad(), pair.reference(role):
            reference, _, _ = pair.completion_logprobs(PROMPTS, COMPLETIONS)
        assert torch.allclose(reference, expected, atol=1e-6)
        assert pair.model.active_adapter == role
        assert {n for n, p in pair.model.named_parameters() if p.requires_grad} == trainable
    assert torch.equal(logits(pair, "agent"), current)

    pair.save_adapter("agent", tmp_path / "saved")
    assert {p.name for p in (tmp_path / "saved").iterdir()} == {"adapter_config.json", "adapter_model.safetensors"}
    assert torch.equal(
        logits(PolicyPair.load(tiny_model_dir, LoraSettings(), {"agent": tmp_path / "saved"}), "agent"), current
    )
    with pytest.raises(ValueError, match="unknown role"):
        pair.save_adapter("agent_ref", tmp_path / "never")
    with pytest.raises(ValueError, match="unknown adapter roles"):
        PolicyPair.load(tiny_model_dir, LoraSettings(), references={"critic": tmp_path / "anchor"})


def one_step(policy: PolicyPair, role: str, lr: float, persist: bool = True) -> torch.optim.Optimizer:
    with policy.training(role, lr, persist) as (optimizer, _):
        log_probs, targets, mask = policy.completion_logprobs(PROMPTS, COMPLETIONS)
        (-(log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1) * mask).sum()).backward()
        optimizer.step()
    return optimizer


def test_optimizer_state_is_kept_saved_and_loaded(policy: PolicyPair, tiny_model_dir: Path, tmp_path: Path) -> None:
    one_step(policy, "agent", 1e-2, persist=False)
    assert policy.optimizer_states == {}
    policy.save_adapter("agent", tmp_path / "fresh")
    assert not (tmp_path / "fresh" / "optimizer.pt").exists()

    one_step(policy, "agent", 1e-2)
    resumed = one_step(policy, "agent", 3e-3)
    assert [g["lr"] for g in resumed.param_groups] == [3e-3]
    kept = policy.optimizer_states["agent"]
    assert kept["state"][0]["step"].item() == 2
    assert "simulator" not in policy.optimizer_states
    policy.save_adapter("agent", tmp_path / "agent")
    loaded = PolicyPair.load(tiny_model_dir, LoraSettings(), {"agent": tmp_path / "agent"}).optimizer_states
    assert set(loaded) == {"agent"}
    assert all(
        torch.equal(loaded["agent"]["state"][i][key], kept["state"][i][key])
        for i in kept["state"]
        for key in ("step", "exp_avg", "exp_avg_sq")
    )

    one_step(policy, "agent", 1e-2, persist=False)
    assert policy.optimizer_states == {}


def test_save_and_load_round_trip(policy: PolicyPair, tiny_model_dir: Path, tmp_path: Path) -> None:
    perturb(policy, "agent")
    perturb(policy, "simulator")
    expected = {role: logits(policy, role) for role in ROLES}
    for role in ROLES:
        policy.save_adapter(role, tmp_path / role)
        policy.save_adapter(role, tmp_path / role)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(ROLES)
    assert (tmp_path / "agent" / "adapter_config.json").is_file()
    reloaded = PolicyPair.load(tiny_model_dir, LoraSettings(), {r: tmp_path / r for r in ROLES})
    for role in ROLES:
        assert torch.equal(logits(reloaded, role), expected[role])


def test_load_mixes_saved_and_fresh_adapters(policy: PolicyPair, tiny_model_dir: Path, tmp_path: Path) -> None:
    base = logits(policy, "agent")
    perturb(policy, "simulator")
    policy.save_adapter("simulator", tmp_path / "sim")
    expected = logits(policy, "simulator")
    reloaded = PolicyPair.load(tiny_model_dir, LoraSettings(), {"agent": None, "simulator": tmp_path / "sim"})
    assert torch.equal(logits(reloaded, "simulator"), expected)
    assert torch.allclose(logits(reloaded, "agent"), base, atol=1e-6)


def test_completion_logprobs_align_with_unbatched_forward(policy: PolicyPair) -> None:
    perturb(policy, "agent")
    policy.activate("agent")
    with torch.no_grad():
        log_probs, targets, mask = policy.completion_logprobs(PROMPTS, COMPLETIONS)
    for row, (prompt, completion) in enumerate(zip(PROMPTS, COMPLETIONS, strict=True)):
        with torch.no_grad():
            full = policy.model(torch.tensor([prompt + completion])).logits[0].log_softmax(-1)
        expected = full[len(prompt) - 1 : -1]
        width = log_probs.shape[1]
        assert mask[row].tolist() == [False] * (width - len(completion)) + [True] * len(completion)
        assert targets[row, mask[row]].tolist() == completion
        assert torch.allclose(log_probs[row, mask[row]], expected, atol=1e-5)


def test_training_rows_of_nearby_lengths_share_one_shape(policy: PolicyPair) -> None:
    """Micro-batches are padded to a multiple of 64 positions (completions to 16: `ShapeBuckets`), so CPU kernels
    compiled per shape are reused instead of piling up; the completion tokens' log-probs are those of each row alone
    (the test above)."""
    assert policy.shape_buckets == ShapeBuckets(positions=64, completions=16)
    positions, completions = 64, 16
    shapes = []
    hook = policy.model.get_input_embeddings().register_forward_hook(lambda _m, args, _o: shapes.append(args[0].shape))
    try:
        with torch.no_grad():
            for prompt_length, completion_length in ((3, 2), (positions - 20, 9), (positions + 1, 2)):
                prompts = [list(range(1, prompt_length + 1)), [1, 2]]
                completion_ids = [[60] * completion_length, [61]]
                logp, _, mask = policy.completion_token_logprobs(prompts, completion_ids)
                assert logp.shape == mask.shape == (2, completions)
    finally:
        hook.remove()
    assert shapes == [(2, positions), (2, positions), (2, 2 * positions)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process's mappings from /proc")
def test_bf16_weights_do_not_keep_the_weight_file_mapped(tiny_model_dir: Path, tmp_path: Path) -> None:
    """transformers maps the safetensors file; under bf16 most of its weights are replaced by bf16 copies, and the
    float32 rest gets memory of its own, so the file's pages stop counting toward the process."""
    folder = shutil.copytree(tiny_model_dir, tmp_path / "model")
    weights = str(folder / "model.safetensors")

    def mapped() -> bool:
        gc.collect()
        return weights in Path("/proc/self/maps").read_text()

    float32 = PolicyPair.load(folder, LoraSettings(), precision="float32")
    assert mapped(), "the check sees the mapping while float32 weights are views into it"
    del float32
    assert not mapped()
    bfloat16 = PolicyPair.load(folder, LoraSettings(), precision="bfloat16")
    assert not mapped()
    assert bfloat16.completion_logprobs(PROMPTS, COMPLETIONS)[0].isfinite().all()


def test_length_batches_sort_and_size_by_tokens() -> None:
    lengths = [4, 12, 200, 4, 12, 4, 12, 400, 4, 12, 4, 12, 12, 4, 12]
    budget = median_budget(lengths, 4) + 4 * 6
    assert budget == 4 * (12 + 6)
    batches = length_batches(lengths, budget, extra=6)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    flat = [lengths[i] for b in batches for i in b]
    assert flat == sorted(flat)
    assert all(len(b) == 1 or len(b) * (max(lengths[i] for i in b) + 6) <= budget for b in batches)
    assert len(batches[0]) > 4, "short rows fill wider batches"
    assert [len(b) for b in batches[-2:]] == [1, 1], "rows longer than the budget go alone"
    assert length_batches([], 10) == [] and median_budget([], 4) == 0


def test_micro_batches_pad_rather_than_compute_the_shared_prefix_twice(policy: PolicyPair) -> None:
    """Four rows behind one long common prefix: cut by whole lengths the longest would go alone (3 + 1) and compute
    the prefix a second time; counted after the prefix, with its tokens as allowance, they stay one micro-batch.
    Without a shared prefix (too short to share) the cut is `length_batches` over median-length rows."""
    prefix = list(range(1, 41))
    prompts = [prefix + [50 + i] * n for i, n in enumerate((4, 6, 8, 14))]
    lengths = [len(p) + 3 for p in prompts]
    assert length_batches(lengths, median_budget(lengths, 4)) == [[0, 1, 2], [3]]
    assert policy.micro_batches(prompts, lengths, 4) == [[0, 1, 2, 3]]
    unshared = [[60 + i] + p[1:] for i, p in enumerate(prompts)]
    assert policy.micro_batches(unshared, lengths, 4) == [[0, 1, 2], [3]]


def test_merged_forward_equals_the_adapter_and_leaves_no_trace(
    policy: PolicyPair, tmp_path: Path, snapshot, unchanged
) -> None:
    perturb(policy, "agent")
    perturb(policy, "simulator")
    expected = logits(policy, "agent")
    policy.save_adapter("agent", tmp_path / "before")
    weights = {n: p for n, p in policy.model.named_parameters()}
    base, adapters = snapshot(policy, None), {role: snapshot(policy, role) for role in ROLES}
    with policy.merged("agent"):
        with torch.no_grad():
            merged, _, _ = policy.completion_logprobs(PROMPTS, COMPLETIONS)
        assert not any(p.requires_grad for p in policy.model.parameters()), "nothing trains through a merged copy"
    torch.testing.assert_close(merged, expected, rtol=1e-5, atol=1e-5)
    assert all(weights[n] is p for n, p in policy.model.named_parameters()), "the original tensors are back"
    assert unchanged(snapshot(policy, None), base)
    assert all(unchanged(snapshot(policy, role), adapters[role]) for role in ROLES)
    assert {n for n, p in policy.model.named_parameters() if p.requires_grad} == set(adapters["agent"])
    torch.testing.assert_close(logits(policy, "agent"), expected, rtol=0, atol=0)
    policy.save_adapter("agent", tmp_path / "after")
    saved = [(tmp_path / name / "adapter_model.safetensors").read_bytes() for name in ("before", "after")]
    assert saved[0] == saved[1]
    with pytest.raises(RuntimeError, match="inside"), policy.merged("simulator"):
        raise RuntimeError("inside")
    assert unchanged(snapshot(policy, None), base)


def test_bf16_stores_frozen_weights_once_with_autocast_rounding(tiny_model_dir: Path) -> None:
    """Under bfloat16 the weights that never train are stored in bf16 (autocast would cast them on every call),
    the ones LoRA adapts stay fp32; generation's merged weights are bf16 too. Logits are exactly those of
    autocast casting fp32 weights on every call, through the adapter and through the merge."""
    reference = PolicyPair.load(tiny_model_dir, LoraSettings(), precision="float32")
    policy = PolicyPair.load(tiny_model_dir, LoraSettings(), precision="bfloat16")
    for pair in (reference, policy):
        torch.manual_seed(0)
        perturb(pair, "agent")
    reference.precision = "bfloat16"  # autocast over fp32 weights: the path before weights were stored in bf16

    def dtypes(pair: PolicyPair) -> dict[str, set[torch.dtype]]:
        kinds: dict[str, set[torch.dtype]] = {}
        for name, param in pair.model.named_parameters():
            kind = "lora" if ".lora_" in name else "adapted" if ".base_layer." in name else "frozen"
            kind = "embeddings or norms" if "embed_tokens" in name or "norm" in name else kind
            kinds.setdefault(kind, set()).add(param.dtype)
        return kinds

    linear = [m for n, m in policy.model.named_modules() if isinstance(m, torch.nn.Linear) and ".lora_" not in n]
    assert dtypes(policy) == {
        "lora": {torch.float32},
        "adapted": {torch.float32},
        "frozen": {torch.bfloat16},
        "embeddings or norms": {torch.float32},
    }
    assert logits(policy, "agent").equal(logits(reference, "agent")), "through the adapter"
    grads = []
    for pair in (reference, policy):
        pair.activate("agent")
        log_probs, targets, mask = pair.completion_logprobs(PROMPTS, COMPLETIONS)
        (log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1) * mask).sum().backward()
        grads.append([p.grad for p in pair.trainable_parameters()])
    assert all(a.equal(b) for a, b in zip(*grads, strict=True)), "training computes the same gradients"
    with reference.merged("agent"), torch.no_grad():
        expected, _, _ = reference.completion_logprobs(PROMPTS, COMPLETIONS)
    weights = {n: p for n, p in policy.model.named_parameters()}
    with policy.merged("agent"):
        assert all(m.weight.dtype == torch.bfloat16 for m in linear)
        with torch.no_grad():
            merged, _, _ = policy.completion_logprobs(PROMPTS, COMPLETIONS)
    torch.testing.assert_close(merged, expected, rtol=0, atol=0)
    assert all(weights[n] is p for n, p in policy.model.named_parameters()), "the stored tensors are back"


def test_rows_sharing_a_prompt_prefix_compute_it_once_with_the_same_result(policy: PolicyPair) -> None:
    """A micro-batch's common first prompt tokens (a domain's system prompt) are computed once and their keys and
    values shared by every row; the log-probs and the LoRA gradient are those of each row computed whole."""
    perturb(policy, "agent")
    policy.activate("agent")
    policy.model.train()
    prefix = list(range(5, 5 + MIN_SHARED_PREFIX + 9))
    prompts = [[1, *prefix, 50, 51], [1, *prefix, 52], [1, *prefix, 53, 54, 55, 56]]
    completions = [[60, 61], [62, 63, 64], [65]]
    assert policy.shared_prefix(prompts) == 1 + len(prefix)
    shapes = []
    hook = policy.model.get_input_embeddings().register_forward_hook(lambda _m, args, _o: shapes.append(args[0].shape))
    try:
        logp, _, mask = policy.completion_token_logprobs(prompts, completions)
    finally:
        hook.remove()
    assert shapes[0] == (1, 1 + len(prefix)) and shapes[1][0] == len(prompts)
    shared_grads = torch.autograd.grad(logp[mask].sum(), policy.trainable_parameters())
    params = policy.trainable_parameters()
    whole = torch.zeros(())
    for prompt, completion in zip(prompts, completions, strict=True):
        log_probs = policy.model(torch.tensor([prompt + completion])).logits[0, :-1].log_softmax(-1)
        whole = whole + log_probs[len(prompt) - 1 :].gather(-1, torch.tensor(completion).unsqueeze(-1)).sum()
    whole_grads = torch.autograd.grad(whole, params)
    # fp32 sums in another order (the prefix's keys and values are one computation, not three): rounding only
    assert logp[mask].sum().item() == pytest.approx(whole.item(), abs=1e-4)
    # Elementwise atol=1e-5 failed on one thread, where entries of magnitude 5 moved by more. Rounding moves each
    # gradient by about 1.2e-6 of its norm here; wrong keys, values or positions would move it by O(1).
    for shared, expected in zip(shared_grads, whole_grads, strict=True):
        assert (shared - expected).norm() <= 1e-4 * expected.norm()
    assert policy.shared_prefix([prompts[0], [2, *prefix, 52]]) == 0  # nothing in common
    assert policy.shared_prefix([[1, *prefix[:5], 50], [1, *prefix[:5], 51]]) == 0  # too few to be worth it
