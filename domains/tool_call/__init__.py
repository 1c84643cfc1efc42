"""BFCL-style function calling: the "tool_call" domain, whose entry point (pyproject.toml) names the factory here."""

from genenv.config import GenEnvConfig
from genenv.domains.base import Domain
from genenv.domains.tool_call.domain import REJECT_REASONS, ToolCallDomain
from genenv.domains.tool_call.relevance import Relevance
from genenv.models.sentence import resolve_sentence_model, sentence_encoder

__all__ = ["REJECT_REASONS", "ToolCallDomain"]


def tool_call_domain(config: GenEnvConfig) -> Domain:
    return ToolCallDomain(wrong_call_reward=config.agent_wrong_call_reward, relevance=relevance_of(config))


def relevance_of(config: GenEnvConfig) -> Relevance | None:
    """The label check by sentence encoder that config.relevance_model names ('' : none), loaded on first use."""
    if not config.relevance_model:
        return None
    spec, cache_dir = config.relevance_model, config.models_dir
    return Relevance(lambda: sentence_encoder(resolve_sentence_model(spec, cache_dir)))
