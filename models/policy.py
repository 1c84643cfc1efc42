"""One base model in memory carrying two LoRA adapters, the agent and the simulator.

Each role may also carry a frozen reference adapter (its generation-0 adapter), the anchor of its KL
penalty, and its AdamW state, which lives in the adapter folder so training resumes across generations.
"""

from __future__ import annotations

import inspect
import tempfile
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from peft.tuners.lora import LoraLayer
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache, PreTrainedTokenizerBase

from genenv.atomic import atomic_path
from genenv.config import GenEnvConfig
from genenv.models.cpu.onednn_linears import base_linears, use_onednn
from genenv.models.cpu.shapes import ShapeBuckets, bound_onednn_primitive_cache
from genenv.models.cpu.threads import fit_threads_to_machine
from genenv.models.loading import make_readable
from genenv.models.memory import return_freed_memory
from genenv.models.token_logprobs import token_logprobs

ROLES = ("agent", "simulator")
PRECISIONS = ("float32", "bfloat16")
OPTIMIZER_FILE = "optimizer.pt"
MIN_SHARED_PREFIX = 16
"""A micro-batch's rows share their first prompt tokens' keys and values when at least this many are common."""


@dataclass(frozen=True)
class LoraSettings:
    """LoRA of both adapters; rank and alpha default to the config's (`lora_r`, `lora_alpha`)."""

    r: int = GenEnvConfig.lora_r
    alpha: int = GenEnvConfig.lora_alpha
    dropout: float = 0.0
    target_modules: tuple[str, ...] = tuple(GenEnvConfig.lora_targets.split(","))

    @classmethod
    def of(cls, config: GenEnvConfig) -> LoraSettings:
        return cls(r=config.lora_r, alpha=config.lora_alpha, target_modules=config.lora_target_modules)

    def peft_config(self) -> LoraConfig:
        targets = "all-linear" if self.target_modules == ("all-linear",) else list(self.target_modules)
        return LoraConfig(
            r=self.r, lora_alpha=self.alpha, lora_dropout=self.dropout, target_modules=targets, task_type="CAUSAL_LM"
        )


class PolicyPair:
    """One base model in memory, two named LoRA adapters 'agent' and 'simulator' (plus frozen references)."""

    def __init__(
        self,
        model: PeftModel,
        tokenizer: PreTrainedTokenizerBase,
        precision: str = "float32",
        optimizer_states: Mapping[str, dict] | None = None,
    ) -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, got {precision!r}")
        self.model = model
        self.tokenizer = tokenizer
        self.precision = precision
        if precision == "bfloat16":
            _frozen_linears_to_bf16(model)
            _rest_to_float32(model)
        else:
            use_onednn(model)
        fit_threads_to_machine(model.get_input_embeddings())
        # role -> the AdamW state_dict its next `training(persist=True)` resumes from
        self.optimizer_states: dict[str, dict] = dict(optimizer_states or {})
        self.checkpoint_activations = False
        """Recompute each layer's activations in the backward pass of `training` instead of keeping them."""
        self.min_shared_prefix = MIN_SHARED_PREFIX
        """Fewest common first prompt tokens a micro-batch's rows compute once (`shared_prefix`)."""
        self.shape_buckets = ShapeBuckets()
        """What training rows and their completions are padded to (models/cpu/shapes.py)."""

    @classmethod
    def load(
        cls,
        base_path: Path,
        lora: LoraSettings,
        adapters: Mapping[str, Path | None] | None = None,
        seed: int = 0,
        precision: str = "float32",
        references: Mapping[str, Path | None] | None = None,
    ) -> PolicyPair:
        """Load the base once; each role gets its saved adapter (and optimizer state, when the folder holds
        one) or a fresh adapter (B = 0, so it equals the base). A role with a folder in `references` gets that
        adapter as its frozen KL reference; a role without one is anchored to the base."""
        adapters = adapters or {}
        references = references or {}
        unknown = (set(adapters) | set(references)) - set(ROLES)
        if unknown:
            raise ValueError(f"unknown adapter roles {sorted(unknown)}; expected {ROLES}")
        bound_onednn_primitive_cache()
        tokenizer = load_tokenizer(base_path)
        base = _load_base(base_path, precision)
        model: PeftModel | None = None
        for index, role in enumerate(ROLES):
            model = _attach(base, model, role, adapters.get(role), lora, seed + index)
        for role, folder in references.items():
            if folder is not None:
                model.load_adapter(folder, adapter_name=reference_name(role), is_trainable=False)
        states = {
            role: torch.load(Path(folder) / OPTIMIZER_FILE, map_location="cpu", weights_only=True)
            for role, folder in adapters.items()
            if folder is not None and (Path(folder) / OPTIMIZER_FILE).is_file()
        }
        pair = cls(model, tokenizer, precision, states)
        pair.activate(ROLES[0])
        return pair

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def activate(self, role: str) -> None:
        """Route forward passes through `role` and make only its LoRA weights trainable (never a reference)."""
        _check_role(role)
        self.model.set_adapter(role)
        for name, param in self.model.named_parameters():
            param.requires_grad = _adapter_of(name) == role

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        return [p for p in self.model.parameters() if p.requires_grad]

    def save_adapter(self, role: str, folder: Path) -> None:
        """Write `role`'s adapter and its optimizer state (if any) to `folder`, replacing it atomically so
        readers never see a partial adapter. References are never saved: they are someone else's checkpoint."""
        _check_role(role)
        folder = Path(folder)
        with atomic_path(folder) as staging, tempfile.TemporaryDirectory(prefix=".", dir=folder.parent) as scratch:
            self.model.save_pretrained(scratch, selected_adapters=[role])  # PEFT writes it to <scratch>/<role>
            (Path(scratch) / role).rename(staging)
            if role in self.optimizer_states:
                torch.save(self.optimizer_states[role], staging / OPTIMIZER_FILE)
            make_readable(staging)

    def adapter_state(self, role: str) -> dict[str, torch.Tensor]:
        """`role`'s LoRA weights by parameter name, copied to the CPU, a few MB even for a 7B model: what a runtime
        keeps of a fresh adapter to swap it back in (runtime/slot.py)."""
        _check_role(role)
        return {n: p.detach().cpu().clone() for n, p in self.model.named_parameters() if _adapter_of(n) == role}

    def load_adapter_state(self, role: str, weights: Mapping[str, torch.Tensor], optimizer: dict | None) -> None:
        """Take `role`'s weights and AdamW state from another copy of this policy (`adapter_state`, and its
        `optimizer_states[role]`; None drops this copy's, as an update with persist=False does)."""
        mine = {n: p for n, p in self.model.named_parameters() if _adapter_of(n) == role}
        if mine.keys() != weights.keys():
            raise ValueError(f"the {role} weights handed back do not match this policy's adapter")
        with torch.no_grad():
            for name, param in mine.items():
                param.copy_(weights[name])
        self.optimizer_states.pop(role, None)
        if optimizer is not None:
            self.optimizer_states[role] = optimizer

    @property
    def compute_dtype(self) -> torch.dtype:
        """The dtype forward passes multiply in: bf16 under `autocast`, else fp32."""
        return torch.bfloat16 if self.precision == "bfloat16" else torch.float32

    def autocast(self) -> torch.autocast:
        """Forward passes in bfloat16 when asked (about 2x faster on CPUs with bf16 units); the LoRA weights, the
        weights they adapt, embeddings and norms stay fp32."""
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.precision == "bfloat16")

    @contextmanager
    def training(
        self, role: str, lr: float, persist: bool = True, keep: bool | None = None
    ) -> Iterator[tuple[torch.optim.Optimizer, list[torch.nn.Parameter]]]:
        """Train mode with only `role`'s adapter trainable and an AdamW over it; the mode is restored after.

        persist=True resumes the role's AdamW state (at learning rate `lr`) and keeps it after the block, so
        a few steps per generation are steps of one Adam run, not sign-like first steps of fresh optimizers.
        persist=False uses a fresh AdamW and drops any kept state. `keep` (default: `persist`) says whether the state
        is kept after the block: the warm start's last epoch resumes its earlier epochs' state and keeps none.
        The C heap's free pages go back to the system after the block: a training step frees about a GB of
        activations that glibc would otherwise keep, on top of the next stage's own.
        """
        self.activate(role)
        params = self.trainable_parameters()
        optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
        state = self.optimizer_states.pop(role, None)
        if persist and state is not None:
            optimizer.load_state_dict(state)
            for group in optimizer.param_groups:
                group["lr"] = lr
        was_training = self.model.training
        self.model.train()
        if self.checkpoint_activations:
            _checkpoint_activations(self.model, True)
        try:
            yield optimizer, params
            if persist if keep is None else keep:
                self.optimizer_states[role] = optimizer.state_dict()
        finally:
            optimizer.zero_grad(set_to_none=True)
            if self.checkpoint_activations:
                _checkpoint_activations(self.model, False)
            self.model.train(was_training)
            return_freed_memory()

    @contextmanager
    def reference(self, role: str) -> Iterator[None]:
        """Forward passes through `role`'s frozen reference adapter, or the base with adapters disabled when
        it has none: the anchor of its KL penalty. The active adapter and trainable flags are restored after."""
        _check_role(role)
        previous = self.model.active_adapter
        trainable = [p.requires_grad for p in self.model.parameters()]
        try:
            if reference_name(role) in self.model.peft_config:
                self.model.set_adapter(reference_name(role), inference_mode=True)
                yield
            else:
                with self.model.disable_adapter():
                    yield
        finally:
            self.model.set_adapter(previous)
            for param, flag in zip(self.model.parameters(), trainable, strict=True):
                param.requires_grad = flag

    def merged_layers(self, role: str) -> list[tuple[str, torch.nn.Linear, torch.Tensor]]:
        """(parameter name, base layer, W + BA·scale) for each layer `role`'s adapter adapts: the adapter
        folded into new tensors, the model untouched. Generation here and the vLLM weight push both serve these."""
        with torch.no_grad():
            return [
                (f"{name}.base_layer.weight", base, base.weight + module.get_delta_weight(role).to(base.weight.dtype))
                for name, module in self.model.named_modules()
                if isinstance(module, LoraLayer) and role in module.lora_A
                for base in [module.get_base_layer()]
            ]

    @contextmanager
    def merged(self, role: str) -> Iterator[None]:
        """Forward passes through the base whose weights carry `role`'s adapter merged in: generation applies
        the adapter once per stage instead of two extra matmuls per adapted layer per token.

        Each adapted layer's weight is swapped for a new tensor W + BA·scale, adapters are disabled, and the
        original weight tensors are put back after (never unmerged by subtraction, which would drift them), so
        training, references and saved adapters never see a merged weight. Under bfloat16 the merged weights are
        stored in bf16, as every other frozen linear weight already is (`_frozen_linears_to_bf16`).
        """
        _check_role(role)
        self.activate(role)
        replacements = {base: weight.to(self.compute_dtype) for _, base, weight in self.merged_layers(role)}
        originals = [(module, module.weight) for module in replacements]
        try:
            for module, weight in replacements.items():
                module.weight = torch.nn.Parameter(weight, requires_grad=False)
            with self.model.disable_adapter():
                yield
        finally:
            for module, weight in originals:
                module.weight = weight
            self.activate(role)

    def completion_logprobs(
        self, prompts: Sequence[Sequence[int]], completions: Sequence[Sequence[int]]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Log-softmax over the vocabulary at each completion token, for the active adapter.

        Rows are prompt + completion, left-padded so every completion ends at the right edge (to a multiple of
        `shape_buckets.positions`); only the last C + 1 positions get logits (C = the longest completion rounded up
        to `shape_buckets.completions`). Returns (log_probs [B, C, V], targets [B, C], mask [B, C]); column j of a row
        with c tokens holds its completion token j - (C - c). The whole distribution is for an exact KL;
        `completion_token_logprobs` is the same numbers at a fraction of the memory.
        """
        logits, targets, mask = self._completion_logits(prompts, completions)
        return logits.float().log_softmax(-1), targets, mask

    def completion_token_logprobs(
        self, prompts: Sequence[Sequence[int]], completions: Sequence[Sequence[int]], temperature: float = 1.0
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(log p [B, C] of each completion token, entropy [B, C] of each position's distribution, mask [B, C]),
        laid out as `completion_logprobs`, bit-identical to gathering from it, without its [B, C, V] in memory.
        `temperature`: of the distribution the tokens were sampled from (logits / T), so a policy-gradient ratio
        compares the policy that sampled with the one that learns."""
        logits, targets, mask = self._completion_logits(prompts, completions)
        if temperature != 1.0:
            logits = logits / temperature
        logp, entropy = token_logprobs(logits, targets)
        return logp, entropy, mask

    def _completion_logits(
        self, prompts: Sequence[Sequence[int]], completions: Sequence[Sequence[int]]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Logits at each completion position. The tokens every prompt starts with (a domain's system prompt:
        254 of a median 428 tool_call prompt tokens) are computed once for the micro-batch and their keys and values
        shared by its rows, gradient included (`shared_prefix`); the rest of each row is laid out after them."""
        if any(len(p) == 0 for p in prompts):
            raise ValueError("every row needs a non-empty prompt: its first completion token is scored from it")
        shared = self.shared_prefix(prompts)
        width = self.shape_buckets.completion_width(max(len(c) for c in completions))
        lengths = [len(p) - shared + len(c) for p, c in zip(prompts, completions, strict=True)]
        total = max(self.shape_buckets.row_width(max(lengths)), width + 1)
        pad = self.tokenizer.pad_token_id
        input_ids = torch.full((len(lengths), total), pad, dtype=torch.long)
        attention = torch.zeros((len(lengths), total), dtype=torch.long)
        mask = torch.zeros((len(lengths), width), dtype=torch.bool)
        for row, (prompt, completion) in enumerate(zip(prompts, completions, strict=True)):
            tokens = list(prompt[shared:]) + list(completion)
            input_ids[row, total - len(tokens) :] = torch.tensor(tokens, dtype=torch.long)
            attention[row, total - len(tokens) :] = 1
            mask[row, width - len(completion) :] = True
        positions = shared + (attention.cumsum(-1) - 1).clamp(min=0)
        device = self.device
        with self.autocast():
            prefix = self._prefix_cache(prompts[0][:shared], len(prompts)) if shared else None
            if shared:
                attention = torch.cat([torch.ones((len(lengths), shared), dtype=torch.long), attention], dim=1)
            logits = self.model(
                input_ids=input_ids.to(device),
                attention_mask=attention.to(device),
                position_ids=positions.to(device),
                logits_to_keep=width + 1,
                **({cache_argument(self.model): prefix} if prefix is not None else {}),
                use_cache=prefix is not None,
            ).logits[:, :-1]
        return logits, input_ids[:, total - width :].to(device), mask.to(device)

    def shared_prefix(self, prompts: Sequence[Sequence[int]]) -> int:
        """Prompt tokens every row starts with, when there are enough to be worth computing once (at least
        `min_shared_prefix`, over two rows or more); 0 otherwise, and under activation checkpointing, which keeps no
        cache. Every row keeps at least its last prompt token, whose logits score its first completion token."""
        if len(prompts) < 2 or self.checkpoint_activations:
            return 0
        shared = shared_prefix_length(prompts)
        return shared if shared >= self.min_shared_prefix else 0

    def micro_batches(self, prompts: Sequence[Sequence[int]], lengths: Sequence[int], rows: int) -> list[list[int]]:
        """Indices of the rows (`prompts`; `lengths` with their completions) cut into length-sorted training
        micro-batches of about `rows` median-length rows (`length_batches`). Sizes count the tokens after the rows'
        shared prefix, and a micro-batch may pad by as many tokens as that prefix: a row split off would compute it
        once more. Without the allowance a step of 4 rows of BFCL prompts always split 3 + 1, and its fourth row
        computed the 254-token system prompt alone."""
        shared = self.shared_prefix(prompts)
        suffixes = [n - shared for n in lengths]
        return length_batches(suffixes, median_budget(suffixes, rows) + shared)

    def _prefix_cache(self, prefix: Sequence[int], rows: int) -> DynamicCache:
        """Keys and values of `prefix`, computed once (with gradient when training) and expanded to `rows`: each
        row's attention reads the same tensors, and backward sums the rows' gradients into the one computation."""
        kv_cache = DynamicCache()
        ids = torch.tensor([list(prefix)], device=self.device)
        self.model(input_ids=ids, use_cache=True, **{cache_argument(self.model): kv_cache})
        for layer in kv_cache.layers:
            layer.keys = layer.keys.expand(rows, -1, -1, -1)
            layer.values = layer.values.expand(rows, -1, -1, -1)
        return kv_cache


def shared_prefix_length(prompts: Sequence[Sequence[int]]) -> int:
    """Tokens every prompt starts with (the system prompt, or a whole prompt repeated), leaving each prompt at
    least its last token, whose logits give the prompt's first generated token."""
    shortest = min(len(p) for p in prompts) - 1
    return next((i for i in range(shortest) if len({p[i] for p in prompts}) > 1), max(shortest, 0))


def cache_argument(model: PeftModel) -> str:
    """transformers 5.24 renamed the forward's `past_key_values` to `cache`; 5.19 (vLLM's pin) has the old name."""
    return _cache_parameter(type(model.get_base_model()))


@cache
def _cache_parameter(model_class: type) -> str:
    return "cache" if "cache" in inspect.signature(model_class.forward).parameters else "past_key_values"


def length_batches(lengths: Sequence[int], budget: int, extra: int = 0) -> list[list[int]]:
    """Indices of `lengths` sorted by length and cut greedily into batches whose padded size, rows x (longest +
    extra), stays within `budget` tokens: rows of similar length share a batch (little padding), short rows fill
    wide batches and long rows narrow ones. A row longer than the budget goes alone."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    for i in order:
        if not batches or (len(batches[-1]) + 1) * (lengths[i] + extra) > budget:
            batches.append([])
        batches[-1].append(i)
    return batches


def median_budget(lengths: Sequence[int], rows: int) -> int:
    """The tokens of `rows` median-length rows: a training micro-batch budget that splits rows of very
    different lengths apart, so little of the forward and backward work is padding."""
    return rows * sorted(lengths)[len(lengths) // 2] if lengths else 0


@contextmanager
def _quiet_peft() -> Iterator[None]:
    """PEFT probes `is_gradient_checkpointing`, which transformers 5 deprecates with a FutureWarning on every run."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning)
        yield


def _attach(
    base: torch.nn.Module,
    model: PeftModel | None,
    role: str,
    folder: Path | None,
    lora: LoraSettings,
    seed: int,
) -> PeftModel:
    """Add one adapter; fresh ones draw LoRA A from `seed` without disturbing the global RNG."""
    if folder is not None:
        if model is None:
            with _quiet_peft():
                return PeftModel.from_pretrained(base, folder, adapter_name=role, is_trainable=True)
        model.load_adapter(folder, adapter_name=role, is_trainable=True)
        return model
    with torch.random.fork_rng(devices=[]), _quiet_peft():
        torch.manual_seed(seed)
        if model is None:
            return get_peft_model(base, lora.peft_config(), adapter_name=role)
        model.add_adapter(role, lora.peft_config())
    return model


def _checkpoint_activations(model: PeftModel, on: bool) -> None:
    """Switch activation (gradient) checkpointing of the base model; it acts only in train mode, so generation and
    scoring in eval mode never recompute. transformers 5.24 renamed the switch; 5.19 (vLLM's pin) has the old name."""
    base = model.get_base_model()
    if hasattr(base, "activation_checkpointing_enable"):
        enable, disable = base.activation_checkpointing_enable, base.activation_checkpointing_disable
    else:
        enable, disable = base.gradient_checkpointing_enable, base.gradient_checkpointing_disable
    if on:
        enable({"use_reentrant": False})
    else:
        disable()


def load_tokenizer(base_path: Path) -> PreTrainedTokenizerBase:
    """The base model's tokenizer, padding on the left (prompts end where generation starts)."""
    tokenizer = AutoTokenizer.from_pretrained(base_path)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def _load_base(base_path: Path, precision: str) -> torch.nn.Module:
    """The base model, loaded straight onto the device it computes on, tensor by tensor, with no float32 copy of
    the whole model on the host (30 GB for a 7B one, per process). Under bfloat16 it loads in the checkpoint's own
    dtype ("auto": a bf16 checkpoint stays bf16, an fp32 one fp32), and `PolicyPair` then stores the frozen linears
    in bf16 and the rest in fp32 (`_frozen_linears_to_bf16`, `_rest_to_float32`): the values fp32 loading gave,
    without its peak. Under float32 each tensor is widened as it loads."""
    dtype = "auto" if precision == "bfloat16" else torch.float32
    if torch.cuda.is_available():
        return AutoModelForCausalLM.from_pretrained(base_path, dtype=dtype, device_map="cuda")
    return AutoModelForCausalLM.from_pretrained(base_path, dtype=dtype)


def _frozen_linears(model: PeftModel) -> list[torch.nn.Linear]:
    """The base linear layers no adapter adapts: they never train and are never merged."""
    adapted = {id(m.get_base_layer()) for m in model.modules() if isinstance(m, LoraLayer)}
    return [module for module in base_linears(model) if id(module) not in adapted]


def _frozen_linears_to_bf16(model: PeftModel) -> None:
    """Store every linear weight that never trains and is never merged in bfloat16, once.

    Under bf16 autocast a matmul casts its fp32 weight on every call (frozen weights are not cached), which cost
    a fifth of generation time; a weight cast once rounds the same, so results are identical. Weights a LoRA
    adapter adapts stay fp32, so a merge W + BA·scale rounds once, as before. The output layer is untied from
    the input embeddings, which stay fp32 (their lookups are not matmuls, so autocast never cast them).
    """
    with torch.no_grad():
        for module in _frozen_linears(model):
            module.weight = torch.nn.Parameter(module.weight.to(torch.bfloat16), requires_grad=False)
            if module.bias is not None:
                module.bias = torch.nn.Parameter(module.bias.to(torch.bfloat16), requires_grad=False)


def _rest_to_float32(model: PeftModel) -> None:
    """Give every tensor but the frozen linears' float32 memory of its own: the embeddings, the weights LoRA
    adapts and the norms, a third of the model's size.

    A bf16 checkpoint loaded them in bf16 (`_load_base`); widened, they hold the values an fp32 load gives. An fp32
    checkpoint left them as views into transformers' mapping of the safetensors file; one live view keeps the whole
    mapping, and every page the bf16 conversion read stays resident: the copy lets the mapping close.
    """
    frozen = {id(t) for m in _frozen_linears(model) for t in (m.weight, m.bias) if t is not None}
    with torch.no_grad():
        for tensor in (*model.parameters(), *model.buffers()):
            if tensor.is_floating_point() and id(tensor) not in frozen:
                tensor.data = tensor.data.to(torch.float32, copy=True)


def reference_name(role: str) -> str:
    """The name of `role`'s frozen KL reference adapter."""
    return f"{role}_ref"


def _adapter_of(param_name: str) -> str | None:
    """'...q_proj.lora_A.agent.weight' -> 'agent' ('agent_ref' for its reference); None for base weights."""
    parts = param_name.split(".")
    for index, part in enumerate(parts[:-1]):
        if part.startswith("lora_"):
            return parts[index + 1]
    return None


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; expected one of {ROLES}")
