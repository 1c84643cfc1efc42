"""Generation backends by name (`backend:` in the config): a new one is one factory and one decorator."""

from __future__ import annotations

from collections.abc import Callable

from genenv.models.policy import PolicyPair
from genenv.models.sampling import GenerationBackend
from genenv.models.transformers_backend import TransformersBackend
from genenv.registry import Registry

BACKENDS: Registry[Callable[..., GenerationBackend]] = Registry("backend")
register_backend = BACKENDS.register
"""Decorator on a backend factory (a class taking the policy pair, or a function returning a backend)."""


@register_backend("vllm")
def vllm_backend(policy: PolicyPair, batch_size: int = 16, **engine) -> GenerationBackend:
    """Lazy, so the name validates without vllm installed; genenv.models.vllm imports vllm only when used."""
    from genenv.models.vllm import VllmBackend

    return VllmBackend(policy, batch_size, **engine)


register_backend("transformers")(TransformersBackend)
