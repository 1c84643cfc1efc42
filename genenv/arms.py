"""The paper's comparison arms as config presets, not code forks (PAPER.md, ablations).

Each arm is a set of overrides on one shared config, so arms compared together share seeds, n, k and
the agent's sample budget per generation. A new arm is one entry here.
"""

from __future__ import annotations

from genenv.config import ConfigError

ARMS: dict[str, dict[str, str]] = {
    "genenv": {},
    "genenv-random": {"simulator_training": "false"},
    "static": {"simulator_training": "false", "static_tasks": "true"},
    "warm-start-only": {"generations": "0"},
    "base": {"warm_start": "false", "generations": "0"},
}
"""genenv: the method. genenv-random: the simulator stays frozen after the warm start. static: the frozen
simulator writes one task set (generation 1) that every generation reuses. warm-start-only: generation 0
only. base: the untrained model (no warm start, no generation)."""


def arm_overrides(arm: str) -> dict[str, str]:
    try:
        return dict(ARMS[arm])
    except KeyError:
        raise ConfigError(f"arms: unknown arm {arm!r}; known: {sorted(ARMS)}") from None
