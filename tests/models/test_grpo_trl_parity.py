"""TRL as the reference: a GRPO step of ours against TRL's `GRPOTrainer._compute_loss` on the same stored batch, so a
reader who knows TRL can read `grpo_update` as TRL's GRPO.

Both sides get the same rows (prompts, completions, environment tokens left out of the loss, advantages), the same
tiny Llama and LoRA weights, and the same settings: loss_type="dapo" (the per-token loss summed over the batch's loss
tokens, divided by their number), a clip of 0.2 on both sides, beta=0.1 times the k3 KL to the reference added per
token, token-level ratios, temperature 0.9 in every log-probability. Our `epochs=2` over one minibatch is TRL's
`num_iterations=2` over one generation batch: step 0 is on-policy (TRL's path without `old_per_token_logps`); step 1
starts where step 0 moved the adapter, its ratios to the old log-probs clip and its policy is away from the reference.
The test compares each step's loss, the gradients of the trained LoRA weights, and the kl, entropy and clip_ratio
metrics.

TRL's side is TRL's code: a plain transformers model with a PEFT adapter (none of our oneDNN linears or shared-prefix
cache), TRL's fused LM head for log-probs and entropy, its old and reference log-probs computed as
`_generate_and_score_completions` does, TRL's padding, loss and metrics.

Intended differences:
- KL gradient: TRL 1.16 defaults to `use_bias_correction_kl=True` (DeepSeek-V3.2), which multiplies the KL by the
  ratio and so changes its gradient even on-policy, where the ratio is 1; ours is the plain k3 penalty, TRL's
  `use_bias_correction_kl=False`, which the test sets.
- The reference: TRL's, for a PEFT model, is the copy ("ref") of the adapter it was constructed with; ours is the
  role's generation-0 adapter, which is where a run started too. TRL is constructed here on our reference adapter and
  then given the adapter the step starts from, as in any of our generations after the first.
- Advantages: TRL computes them inside generation, so both sides get ours; the test checks them against TRL's
  `scale_rewards="group"` formula. Ours are exactly 0 for a group of equal rewards, where TRL's can be a rounding
  error that still gets an Adam step.
- Rows without a learning signal: without a KL term we never forward a zero-advantage row, and with every advantage 0
  we skip the update; TRL computes them (loss and gradient 0 either way). Not tested here (test_grpo.py does).
- Gradient clipping and AdamW belong to the optimizer, not the loss: the gradients compared are from before them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import huggingface_hub.constants
import pytest
import torch
from datasets import Dataset
from peft import PeftModel
from transformers import AutoModelForCausalLM
from trl import GRPOConfig, GRPOTrainer
from trl.trainer.utils import nanstd, pad, use_adapter

from genenv.models.grpo import GroupSample, group_advantages, grpo_update
from genenv.models.policy import LoraSettings, PolicyPair, load_tokenizer
from tests.models.test_grpo import perturb

EPSILON = 0.2
BETA = 0.1
TEMPERATURE = 0.9
SYSTEM = list(range(100, 118))
"""A system prompt every row starts with: our micro-batches compute its keys and values once (`shared_prefix`)."""
LOSS_TOLERANCE = 1e-5
GRADIENT_TOLERANCE = 1e-4
"""fp32 rounding, not a formula difference: the two sides compute the same sums in other orders and kernels (oneDNN
against PyTorch linears, our prefix cache and left-padded rows against TRL's padding, our log-softmax against TRL's
chunked logsumexp), so each log-prob differs by a few fp32 epsilons (1.2e-7) of the logits' size. Measured: the losses
to 4e-7, kl and entropy to 7e-7 of their values, each gradient to 3e-6 of its norm: the bounds leave a margin of 15x or
more. A wrong clip bound, KL sign, ratio, loss mask, temperature or normaliser moves them by percents or more."""


def rows() -> list[GroupSample]:
    """Two groups of 4 and 3 completions (3 to 6 tokens), one advantage exactly 0 (a KL-only row), and a multi-turn
    row whose middle tokens the environment wrote."""
    a, b = SYSTEM + [40, 41, 42, 43], SYSTEM + [50, 51]
    return [
        GroupSample(a, [60, 61, 62], 1.0, "a"),
        GroupSample(a, [63, 64, 65, 66, 67], 0.0, "a"),
        GroupSample(a, [68, 69, 70, 71], 0.0, "a"),
        GroupSample(a, [72, 73, 74, 75, 76, 77], 1.0, "a"),
        GroupSample(b, [80, 81, 82, 83, 84, 85], 1.0, "b", loss_mask=[1, 1, 0, 0, 1, 1]),
        GroupSample(b, [86, 87, 88], 0.0, "b"),
        GroupSample(b, [89, 90, 91, 92], 0.5, "b"),
    ]


def as_trl(tensors: Mapping[str, torch.Tensor], role: str = "agent") -> dict[str, torch.Tensor]:
    """Our role's LoRA tensors under the names of TRL's trained adapter, PEFT's "default"."""
    return {name.replace(f".{role}.", ".default."): value for name, value in tensors.items()}


def load_into(model: PeftModel, weights: Mapping[str, torch.Tensor]) -> None:
    with torch.no_grad():
        for name, value in weights.items():
            model.get_parameter(name).copy_(value)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No request to the Hub: the variable, and the constant huggingface_hub read from it when it was imported."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


def trl_trainer(tiny_model_dir: Path, reference: Path, output_dir: Path) -> GRPOTrainer:
    """A minimal GRPOTrainer on a plain transformers model whose adapter is `reference` (TRL keeps a copy as "ref")."""
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    model = PeftModel.from_pretrained(base, reference, is_trainable=True)
    args = GRPOConfig(
        output_dir=str(output_dir),
        report_to="none",
        use_cpu=True,
        bf16=False,  # TRL's default computes under bf16 autocast
        gradient_checkpointing=False,
        save_strategy="no",
        loss_type="dapo",
        beta=BETA,
        use_bias_correction_kl=False,  # TRL 1.16's default is True: the docstring's first intended difference
        epsilon=EPSILON,
        epsilon_high=EPSILON,
        importance_sampling_level="token",
        temperature=TEMPERATURE,
        num_iterations=2,
        num_generations=2,
        per_device_train_batch_size=2,
        gradient_accumulation_steps=1,
        steps_per_generation=1,
        max_completion_length=8,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=lambda completions, **_: [0.0] * len(completions),
        args=args,
        train_dataset=Dataset.from_dict({"prompt": ["unused"] * 2}),
        processing_class=load_tokenizer(tiny_model_dir),
    )
    trainer.current_gradient_accumulation_steps = args.gradient_accumulation_steps  # what TRL's training loop sets
    return trainer


def trl_batch(samples: Sequence[GroupSample], advantages: Sequence[float], pad_id: int) -> dict[str, torch.Tensor]:
    """The rows as `_generate_and_score_completions` hands them to the loss: prompts padded on the left, completions on
    the right, the environment's tokens out of `tool_mask`, and the number of loss tokens."""
    prompts = [torch.tensor(s.prompt_ids) for s in samples]
    completions = [torch.tensor(s.completion_ids) for s in samples]
    completion_mask = pad([torch.ones_like(c) for c in completions], padding_value=0, padding_side="right")
    tool_mask = pad([torch.tensor(s.learned) for s in samples], padding_value=1, padding_side="right")
    return {
        "prompt_ids": pad(prompts, padding_value=pad_id, padding_side="left"),
        "prompt_mask": pad([torch.ones_like(p) for p in prompts], padding_value=0, padding_side="left"),
        "completion_ids": pad(completions, padding_value=pad_id, padding_side="right"),
        "completion_mask": completion_mask,
        "tool_mask": tool_mask,
        "advantages": torch.tensor(advantages, dtype=torch.float32),
        "num_items_in_batch": (completion_mask * tool_mask).sum(),
    }


def trl_logps(trainer: GRPOTrainer, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """Per-token log-probs of the active adapter, without gradient: how TRL computes old and reference log-probs."""
    with torch.no_grad():
        logps, _, _ = trainer._get_per_token_logps_and_entropies(
            trainer.model,
            torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1),
            torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1),
            batch["completion_ids"].size(1),
        )
    return logps


def trl_step(trainer: GRPOTrainer, inputs: Mapping[str, torch.Tensor]) -> tuple[float, dict[str, torch.Tensor]]:
    """TRL's loss on `inputs` in train mode, and its gradients of the trained adapter's weights."""
    model = trainer.model
    model.train()
    model.zero_grad(set_to_none=True)
    loss = trainer._compute_loss(model, dict(inputs))
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if ".default." in n and p.grad is not None}
    model.zero_grad(set_to_none=True)
    return loss.item(), grads


def test_advantages_are_trls_group_normalised_ones() -> None:
    """(r - mean) / (std + 1e-4) per group with TRL's nanstd (Bessel-corrected), as TRL's scale_rewards="group"."""
    samples = rows()
    ours = group_advantages(samples)
    for group in ("a", "b"):
        indices = [i for i, s in enumerate(samples) if s.group == group]
        rewards = torch.tensor([samples[i].reward for i in indices])
        trl = (rewards - torch.nanmean(rewards)) / (nanstd(rewards) + 1e-4)
        assert [ours[i] for i in indices] == pytest.approx(trl.tolist(), abs=1e-6)


@pytest.mark.filterwarnings("ignore:.*gradient_checkpointing` is deprecated:FutureWarning")  # transformers, on TRL
def test_grpo_steps_match_trls_loss(tiny_model_dir: Path, tmp_path: Path, offline: None) -> None:
    samples = rows()
    advantages = group_advantages(samples)
    assert 0.0 in advantages and sum(s.learned_tokens for s in samples) < sum(len(s.completion_ids) for s in samples)

    # Ours, from a start adapter anchored to a reference adapter that differs from it.
    setup = PolicyPair.load(tiny_model_dir, LoraSettings())
    perturb(setup, "agent", seed=1)
    setup.save_adapter("agent", tmp_path / "reference")
    perturb(setup, "agent", seed=2)
    setup.save_adapter("agent", tmp_path / "start")
    ours = PolicyPair.load(
        tiny_model_dir, LoraSettings(), {"agent": tmp_path / "start"}, references={"agent": tmp_path / "reference"}
    )
    weights = [ours.adapter_state("agent")]  # at the start of each step
    grads: list[dict[str, torch.Tensor]] = []

    def after_step(_: int) -> None:  # called inside the update, after the optimizer step: the gradients are kept
        named = ours.model.named_parameters()
        grads.append({n: p.grad.clone() for n, p in named if p.requires_grad and p.grad is not None})
        weights.append(ours.adapter_state("agent"))

    records = grpo_update(
        ours,
        "agent",
        samples,
        lr=0.05,  # enough for step 0 to move some of step 1's ratios out of the clip range
        kl_coef=BETA,
        epochs=2,
        minibatch_size=len(samples),
        micro_batch_size=3,
        clip_epsilon=EPSILON,
        max_grad_norm=math.inf,  # the loss's gradients, unclipped
        temperature=TEMPERATURE,
        progress=after_step,
    )
    assert len(grads) == 2 and not any(r["skipped"] for r in records)

    # TRL, constructed on the reference adapter; its old log-probs are those of our start adapter.
    trainer = trl_trainer(tiny_model_dir, tmp_path / "reference", tmp_path / "trl")
    batch = trl_batch(samples, advantages, trainer.processing_class.pad_token_id)
    with use_adapter(trainer.model, adapter_name="ref"):
        batch["ref_per_token_logps"] = trl_logps(trainer, batch)
    load_into(trainer.model, as_trl(weights[0]))
    old = trl_logps(trainer, batch)

    for step, record in enumerate(records):
        load_into(trainer.model, as_trl(weights[step]))
        loss, trl_grads = trl_step(trainer, batch if step == 0 else {**batch, "old_per_token_logps": old})
        metrics = {key: values[-1] for key, values in trainer._metrics["train"].items()}
        assert record["loss"] == pytest.approx(loss, abs=LOSS_TOLERANCE), step
        assert record["kl"] == pytest.approx(metrics["kl"], rel=LOSS_TOLERANCE), step
        assert record["entropy"] == pytest.approx(metrics["entropy"], rel=LOSS_TOLERANCE), step
        assert record["clip_ratio"] == pytest.approx(metrics["clip_ratio/region_mean"]), step
        step_grads = as_trl(grads[step])
        assert step_grads.keys() == trl_grads.keys() and len(trl_grads) == 8  # A and B of q_proj, v_proj; 2 layers
        for name, want in trl_grads.items():
            assert (step_grads[name] - want).norm() <= GRADIENT_TOLERANCE * want.norm(), (step, name)
    # What the steps exercise: step 1's ratios clip (some, not all), and both steps carry a KL to the reference.
    assert records[0]["clip_ratio"] == 0.0 and 0.1 < records[1]["clip_ratio"] < 0.9
    assert min(r["kl"] for r in records) > 0.1
