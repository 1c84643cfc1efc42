"""The memory plan: each phase's peak on one GPU, by arithmetic over the model's architecture and the run's config.

A run's process (the flow's, or a Ray worker's) holds one policy: the base model, both roles' LoRA adapters, their
frozen KL references and AdamW states. With `backend: vllm` a vLLM engine shares the device: awake it takes its
share of the card (`vllm_gpu_memory_utilization`) for its weights, activations and KV cache; asleep (while a stage
trains) only its CUDA graphs stay. The phases:

- load: the trainer's weights, plus the largest tensor widened to fp32 as it lands (models/policy.py, `_load_base`);
- generate: the trainer's resident state beside the engine's share (vllm), or beside its own KV cache (transformers);
- train: the resident state, the active role's gradients, a micro-batch's activations and logits.

Activations are counted tensor by tensor as PyTorch saves them for the backward pass of one decoder layer (the MLP's
three intermediate products, attention's queries, keys, values, output and log-sum-exp, the two norms' fp32 inputs,
each adapted layer's input and LoRA product, the attention mask, and under bf16 autocast a bf16 copy of each adapted
weight; once per micro-batch, the rotary cosines and sines and the target tokens), checked against what the real
code saves on CPU (tests/models/test_memory_plan.py). With activation
checkpointing each layer keeps only its fp32 input, and one layer is recomputed at a time.

Estimates, not measurements, and marked so: the CUDA context, vLLM's CUDA graphs and profile activations. The GPU
smoke check (bench/gpu_smoke.py) prints measured peaks beside these figures.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from genenv.config import ConfigError, GenEnvConfig
from genenv.models.cpu.shapes import ShapeBuckets

GIB = 2**30
CUDA_CONTEXT = 0.5 * GIB
"""CUDA context and kernels of one process, outside PyTorch's allocator (an estimate)."""
ENGINE_GRAPHS = 1.0 * GIB
"""vLLM's CUDA graphs and allocator pools: what an engine keeps asleep (an estimate, checked on a GPU only)."""
ENGINE_BATCHED_TOKENS = 8192
"""Tokens vLLM's profile run pushes through the model at once (its max_num_batched_tokens): its activation peak."""
PROMPT_TOKENS = 640
"""A tool-call prompt with its function documents (docs/scale.md: about 600 tokens each)."""
SHAPES = ShapeBuckets()
"""As models/policy.py pads training rows (positions) and completions (logits)."""
ARCHITECTURES = {
    "Qwen/Qwen2.5-7B-Instruct": "qwen2.5-7b-instruct.json",
    "Qwen/Qwen2.5-0.5B-Instruct": "qwen2.5-0.5b-instruct.json",
}
"""Hub models whose architecture ships with genenv (models/architectures/), so they plan with no download."""


@dataclass(frozen=True)
class Architecture:
    """A decoder's shapes, as its config.json gives them."""

    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied: bool
    qkv_bias: bool
    max_positions: int

    @classmethod
    def from_config(cls, config: dict) -> Architecture:
        heads = config["num_attention_heads"]
        return cls(
            hidden=config["hidden_size"],
            layers=config["num_hidden_layers"],
            heads=heads,
            kv_heads=config.get("num_key_value_heads") or heads,
            head_dim=config.get("head_dim") or config["hidden_size"] // heads,
            intermediate=config["intermediate_size"],
            vocab=config["vocab_size"],
            tied=bool(config.get("tie_word_embeddings", False)),
            qkv_bias=config.get("model_type") == "qwen2" or bool(config.get("attention_bias", False)),
            max_positions=config.get("max_position_embeddings", 4096),
        )

    @classmethod
    def of(cls, model: str, folder: Path | None = None) -> Architecture:
        """The architecture of a shipped hub model, or of the model folder `folder` (its config.json)."""
        if model in ARCHITECTURES:
            return cls.from_config(
                json.loads((Path(__file__).parent / "architectures" / ARCHITECTURES[model]).read_text())
            )
        if folder is None or not (Path(folder) / "config.json").is_file():
            raise ConfigError(f"model: the memory plan needs {model!r}'s config.json: give a local model folder")
        return cls.from_config(json.loads((Path(folder) / "config.json").read_text()))

    def linears(self) -> dict[str, tuple[int, int]]:
        """Each decoder layer's linear layers: name -> (inputs, outputs)."""
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        h, i = self.hidden, self.intermediate
        return {
            "q_proj": (h, q),
            "k_proj": (h, kv),
            "v_proj": (h, kv),
            "o_proj": (q, h),
            "gate_proj": (h, i),
            "up_proj": (h, i),
            "down_proj": (i, h),
        }

    def biases(self) -> dict[str, int]:
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        return {"q_proj": q, "k_proj": kv, "v_proj": kv} if self.qkv_bias else {}

    @property
    def parameters(self) -> int:
        layer = sum(a * b for a, b in self.linears().values()) + sum(self.biases().values()) + 2 * self.hidden
        return self.layers * layer + self.vocab * self.hidden * (1 if self.tied else 2) + self.hidden

    def kv_bytes_per_token(self, dtype_bytes: int) -> int:
        return 2 * self.layers * self.kv_heads * self.head_dim * dtype_bytes


@dataclass(frozen=True)
class PlanSettings:
    """What the plan reads from a run's config, and the prompt length it assumes."""

    precision: str = "bfloat16"
    lora_r: int = 8
    lora_targets: tuple[str, ...] = ("q_proj", "v_proj")
    rows: int = 8
    """Rows of a training micro-batch (train_batch_size), each prompt_tokens + completion_tokens long."""
    prompt_tokens: int = PROMPT_TOKENS
    completion_tokens: int = 96
    generation_rows: int = 16
    backend: str = "transformers"
    engine_share: float = 0.5
    references: bool = True
    checkpointing: bool = False
    trainer_shards: int = 1
    tensor_parallel: int = 1

    @classmethod
    def of(cls, config: GenEnvConfig, prompt_tokens: int = PROMPT_TOKENS) -> PlanSettings:
        return cls(
            precision="bfloat16" if config.precision == "auto" else config.precision,  # every card planned runs bf16
            lora_r=config.lora_r,
            lora_targets=config.lora_target_modules,
            rows=config.train_batch_size,
            prompt_tokens=prompt_tokens,
            completion_tokens=max(config.agent_max_new_tokens, config.simulator_max_new_tokens),
            generation_rows=config.generation_batch_size,
            backend=config.backend,
            engine_share=config.vllm_gpu_memory_utilization,
            references=config.warm_start,
            checkpointing=config.checkpoint_activations,
            trainer_shards=config.trainer_shards,
            tensor_parallel=config.vllm_tensor_parallel,
        )

    @property
    def act_bytes(self) -> int:
        """Bytes of an activation: bf16 under autocast, else fp32."""
        return 2 if self.precision == "bfloat16" else 4

    @property
    def sequence(self) -> int:
        return SHAPES.row_width(self.prompt_tokens + self.completion_tokens)


@dataclass(frozen=True)
class Phase:
    name: str
    parts: tuple[tuple[str, float], ...]
    """(what, bytes), in the order the report prints them."""

    @property
    def total(self) -> float:
        return sum(size for _, size in self.parts)

    def breakdown(self) -> str:
        return ", ".join(f"{what} {size / GIB:.2f}" for what, size in self.parts if size)

    def line(self) -> str:
        return f"{self.name:<9} {self.total / GIB:7.2f} GiB  ({self.breakdown()})"


@dataclass(frozen=True)
class MemoryPlan:
    card: float
    """The GPU's memory in bytes."""
    phases: tuple[Phase, ...]
    settings: PlanSettings
    checkpointing_switched_on: bool
    kv_tokens: int | None
    """Tokens the engine's KV cache holds (backend vllm), on each GPU."""
    engine_floor: float | None
    """The least share of the card the engine starts on: its weights, activations and graphs, and one sequence of
    the model's full context in its KV cache (vLLM refuses to start without that)."""

    def phase(self, name: str) -> Phase:
        return next(p for p in self.phases if p.name == name)

    @property
    def checkpoints_activations(self) -> bool:
        """Whether the trainer recomputes activations: asked for, or switched on by the plan."""
        return self.settings.checkpointing

    @property
    def checkpointing(self) -> str:
        if self.checkpointing_switched_on:
            return "on (switched on by the plan: the train phase does not fit without it)"
        return "on" if self.settings.checkpointing else "off"

    def refusal(self) -> str | None:
        """Why a run with these settings cannot fit this card, naming the phase and the numbers; None: it fits."""
        for phase in self.phases:
            if phase.total > self.card:
                return (
                    f"memory plan: the {phase.name} phase needs {phase.total / GIB:.2f} GiB per GPU, the GPU has "
                    f"{self.card / GIB:.2f} ({phase.breakdown()}){_hint(self, phase)}"
                )
        share = self.settings.engine_share
        if self.engine_floor is not None and self.engine_floor > share * self.card:
            return (
                f"memory plan: the vLLM engine needs at least {self.engine_floor / GIB:.2f} GiB (its weights, "
                "activations and CUDA graphs, and the KV cache of one sequence as long as the model's context), its "
                f"share is {share * self.card / GIB:.2f} GiB (vllm_gpu_memory_utilization {share:g})"
                f"{_hint(self, self.phase('generate'))}"
            )
        return None

    def report(self) -> str:
        s = self.settings
        lines = [
            f"per GPU of {self.card / GIB:.0f} GiB: {s.precision}, LoRA r {s.lora_r} on {','.join(s.lora_targets)}, "
            f"micro-batch {s.rows} x {s.sequence} tokens, trainer shards {s.trainer_shards}, "
            f"vLLM tensor parallel {s.tensor_parallel}",
            *(phase.line() for phase in self.phases),
            f"activation checkpointing: {self.checkpointing}",
        ]
        if self.kv_tokens is not None:
            lines.append(
                f"vLLM KV cache: {self.kv_tokens:,} tokens, {self.kv_tokens // s.sequence} sequences of {s.sequence}"
            )
        problem = self.refusal()
        lines.append(problem or "fits")
        return "\n".join(lines)


def memory_plan(arch: Architecture, settings: PlanSettings, card: float) -> MemoryPlan:
    """The plan for `card` bytes of GPU memory; activation checkpointing switched on when the train phase fits only
    with it."""
    plan = _plan(arch, settings, card, switched_on=False)
    if not settings.checkpointing and plan.phase("train").total > card:
        checkpointed = _plan(arch, replace(settings, checkpointing=True), card, switched_on=True)
        if checkpointed.phase("train").total <= card:
            return checkpointed
    return plan


def _plan(arch: Architecture, s: PlanSettings, card: float, switched_on: bool) -> MemoryPlan:
    shards = s.trainer_shards
    weights = trainer_weights(arch, s) / shards + (layer_weights(arch, s) if shards > 1 else 0)
    lora = lora_parameters(arch, s) * 4
    adapters = lora * (2 + (2 if s.references else 0)) / shards
    adam = 2 * 2 * lora / shards
    resident = (("weights", weights), ("adapters and references", adapters), ("AdamW states", adam))
    context = ("CUDA context", CUDA_CONTEXT)
    load = Phase("load", (("weights", weights), ("widened tensor", largest_tensor(arch) * 4), context))
    kv_tokens = engine_floor = None
    if s.backend == "vllm":
        share = s.engine_share * card
        engine_weights = arch.parameters * s.act_bytes / s.tensor_parallel
        overhead = engine_overhead(arch, s)
        per_token = arch.kv_bytes_per_token(s.act_bytes) / s.tensor_parallel
        kv_tokens = max(int((share - engine_weights - overhead) // per_token), 0)
        engine_floor = engine_weights + overhead + arch.max_positions * per_token
        generate = Phase("generate", (*resident, ("vLLM share", share), context))
        asleep = (("vLLM asleep", ENGINE_GRAPHS),)
    else:
        kv = s.generation_rows * s.sequence * arch.kv_bytes_per_token(s.act_bytes)
        logits = s.generation_rows * arch.vocab * 4
        generate = Phase("generate", (*resident, ("KV cache", kv), ("logits", logits), context))
        asleep = ()
    saved = layer_activations(arch, s)
    kept = checkpointed_layer_input(arch, s) if s.checkpointing else saved
    recomputed = saved if s.checkpointing else 0  # checkpointed: one layer recomputed at a time
    layers = arch.layers * kept + recomputed + batch_activations(arch, s)
    train = Phase(
        "train",
        (
            *resident,
            ("gradients", lora / shards),
            ("activations", layers),
            ("backward", saved),
            ("logits", 2 * saved_logits(arch, s)),
            *asleep,
            context,
        ),
    )
    return MemoryPlan(card, (load, generate, train), s, switched_on, kv_tokens, engine_floor)


def trainer_weights(arch: Architecture, s: PlanSettings) -> float:
    """The base model as `PolicyPair` holds it: under bf16 the linears no adapter adapts in bf16 (the output layer
    untied from the embeddings), the rest in fp32; under float32 all of it in fp32."""
    if s.precision != "bfloat16":
        return arch.parameters * 4
    linears, biases = arch.linears(), arch.biases()
    frozen = sum(a * b + biases.get(n, 0) for n, (a, b) in linears.items() if n not in _adapted(s, linears))
    adapted = sum(a * b + biases.get(n, 0) for n, (a, b) in linears.items() if n in _adapted(s, linears))
    rest = arch.layers * 2 * arch.hidden + arch.hidden + arch.vocab * arch.hidden  # norms, embeddings
    return arch.layers * (frozen * 2 + adapted * 4) + rest * 4 + arch.vocab * arch.hidden * 2  # the output layer


def layer_weights(arch: Architecture, s: PlanSettings) -> float:
    """One decoder layer's weights: what a sharded trainer gathers whole to compute it."""
    return trainer_weights(replace(arch, layers=1, vocab=0), s)


def lora_parameters(arch: Architecture, s: PlanSettings) -> int:
    """One role's LoRA parameters: r x (inputs + outputs) of each adapted layer."""
    linears = arch.linears()
    return arch.layers * sum(s.lora_r * (a + b) for n, (a, b) in linears.items() if n in _adapted(s, linears))


def largest_tensor(arch: Architecture) -> int:
    return max(arch.vocab * arch.hidden, *(a * b for a, b in arch.linears().values()))


def layer_activations(arch: Architecture, s: PlanSettings) -> float:
    """Bytes one decoder layer saves for its backward pass, for a micro-batch of `rows` x `sequence` tokens."""
    a, tokens = s.act_bytes, s.rows * s.sequence
    linears = arch.linears()
    adapted = _adapted(s, linears)
    per_token = (
        3 * arch.intermediate * a  # the MLP's gate and up products and the activation
        + 4 * arch.heads * arch.head_dim * a  # queries, keys and values (repeated to every head), attention output
        + arch.heads * 4  # attention's log-sum-exp, fp32
        + 2 * arch.hidden * 4  # the two norms' fp32 inputs
        + 2 * 4  # the norms' reciprocal scales
        + sum(linears[n][0] * a + s.lora_r * a for n in adapted)  # each adapted layer's input and LoRA product
    )
    mask = s.rows * s.sequence**2 * a
    casts = sum(linears[n][0] * linears[n][1] + s.lora_r * sum(linears[n]) for n in adapted) * 2 if a == 2 else 0
    return tokens * per_token + mask + casts


def batch_activations(arch: Architecture, s: PlanSettings) -> float:
    """What a micro-batch saves once for all its layers: the rotary embedding's cosines and sines (fp32), and the
    completion tokens the loss gathers (int64)."""
    return 2 * s.rows * s.sequence * arch.head_dim * 4 + s.rows * SHAPES.completion_width(s.completion_tokens) * 8


def checkpointed_layer_input(arch: Architecture, s: PlanSettings) -> float:
    """Under activation checkpointing a layer keeps only its input, the fp32 residual stream."""
    return s.rows * s.sequence * arch.hidden * 4


def saved_logits(arch: Architecture, s: PlanSettings) -> float:
    """The logits the loss keeps (completion positions only, `logits_to_keep`); the backward pass adds as many."""
    return s.rows * (SHAPES.completion_width(s.completion_tokens) + 1) * arch.vocab * s.act_bytes


def engine_overhead(arch: Architecture, s: PlanSettings) -> float:
    """vLLM's profile activations (its batched tokens through the widest layers), the sampler's logits, its graphs."""
    activations = ENGINE_BATCHED_TOKENS * (2 * arch.intermediate + 4 * arch.hidden) * s.act_bytes
    return activations + s.generation_rows * arch.vocab * 4 + ENGINE_GRAPHS


def check_plan(plan: MemoryPlan) -> None:
    """ConfigError naming the phase and its numbers when the plan does not fit."""
    problem = plan.refusal()
    if problem is not None:
        raise ConfigError(problem)


def _adapted(s: PlanSettings, linears: dict[str, tuple[int, int]]) -> set[str]:
    return set(linears) if s.lora_targets == ("all-linear",) else set(s.lora_targets) & set(linears)


def _hint(plan: MemoryPlan, phase: Phase) -> str:
    s = plan.settings
    if phase.name == "train":
        return "; lower train_batch_size, or raise trainer_shards (docs/gpu.md)"
    if phase.name == "generate" and s.backend == "vllm" and plan.engine_floor is not None:
        most = (plan.card - (phase.total - s.engine_share * plan.card)) / plan.card
        least = plan.engine_floor / plan.card
        if least <= most:
            return f"; set vllm_gpu_memory_utilization between {least:.2f} and {most:.2f}"
        return "; the engine and the trainer do not fit one GPU together: raise vllm_tensor_parallel or trainer_shards"
    return ""
