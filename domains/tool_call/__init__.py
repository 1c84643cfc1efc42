"""BFCL-style function calling. Importing this package registers the "tool_call" domain."""

from genenv.config import GenEnvConfig
from genenv.domains.base import Domain, register_domain
from genenv.domains.tool_call.domain import REJECT_REASONS, ToolCallDomain

__all__ = ["REJECT_REASONS", "ToolCallDomain"]


@register_domain("tool_call")
def tool_call_domain(config: GenEnvConfig) -> Domain:
    return ToolCallDomain()
