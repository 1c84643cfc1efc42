"""Embodied, multi-turn text games (the paper's ALFWorld setting) on TextWorld, which builds and plays games
offline. A task is a game spec; the agent plays it turn by turn; R_agent is 1 for a win. Its entry point
(pyproject.toml) names the factory here; using the domain needs the optional `text-game` extra (TextWorld, with the
GPL jericho)."""

from genenv.config import GenEnvConfig
from genenv.domains.base import Domain


def text_game_domain(config: GenEnvConfig) -> Domain:
    from genenv.domains.text_game.domain import TextGameDomain

    return TextGameDomain(config)
