"""BFCL-style function calling: the "tool_call" domain, whose entry point (pyproject.toml) names the factory here."""

from genenv.config import GenEnvConfig
from genenv.domains.base import Domain
from genenv.domains.tool_call.domain import REJECT_REASONS, ToolCallDomain

__all__ = ["REJECT_REASONS", "ToolCallDomain"]


def tool_call_domain(config: GenEnvConfig) -> Domain:
    return ToolCallDomain(wrong_call_reward=config.agent_wrong_call_reward)
