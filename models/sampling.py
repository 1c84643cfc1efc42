"""What every generation backend shares: the sampling settings, a completion, the backend protocol, and how a
chat becomes prompt tokens and where a completion stops."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from genenv.models.policy import PolicyPair


@dataclass(frozen=True)
class SamplingSettings:
    max_new_tokens: int = 64
    temperature: float = 1.0  # 0 = greedy
    top_p: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1 or self.temperature < 0 or not 0 < self.top_p <= 1:
            raise ValueError(f"sampling needs max_new_tokens >= 1, temperature >= 0 and 0 < top_p <= 1: {self}")

    @property
    def logprob_temperature(self) -> float:
        """The temperature a policy-gradient update scores these samples at: the sampling one (1 for greedy)."""
        return self.temperature or 1.0


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_ids: list[int]
    completion_ids: list[int]
    finished: bool
    """True when it ended with a stop token (the last of completion_ids); False at max_new_tokens."""
    logprobs: list[float] | None = None
    """Log-probability of each completion token under the policy that sampled it (raw logits, before temperature
    and top-p), when the backend computes them anyway (vLLM); None otherwise. GRPO recomputes its own."""


class GenerationBackend(Protocol):
    def generate(
        self,
        role: str,
        conversations: list[list[dict[str, str]]],
        sampling: SamplingSettings,
        progress: Callable[[int], None] | None = None,
        first_row: int = 0,
    ) -> list[Completion]:
        """One completion per conversation, in input order; `progress(n)` gets rows as they finish. `first_row`: the
        conversations are a call's rows from that one on (a worker's shard), and sample as they would there."""
        ...


@runtime_checkable
class PolicyBackend(GenerationBackend, Protocol):
    """A backend over a policy in this process (not over Ray workers): a multi-turn episode, played here turn by turn,
    encodes its conversation with the policy's tokenizer."""

    policy: PolicyPair


def encode_prompt(tokenizer, conversation: list[dict[str, str]]) -> list[int]:
    """Chat template with the assistant turn opened; the template already holds the special tokens."""
    text = tokenizer.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def stop_ids(policy: PolicyPair) -> set[int]:
    """Where every backend ends a completion: the model's eos ids, the tokenizer's eos and pad."""
    tokenizer = policy.tokenizer
    configured = policy.model.generation_config.eos_token_id
    eos = configured if isinstance(configured, list) else [configured]
    return {t for t in [*eos, tokenizer.eos_token_id, tokenizer.pad_token_id] if t is not None}
