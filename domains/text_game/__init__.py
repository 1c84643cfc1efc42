"""Embodied, multi-turn text games (the paper's ALFWorld setting) on TextWorld, which builds and plays games
offline. A task is a game spec; the agent plays it turn by turn; R_agent is 1 for a win."""
