"""Why a trajectory was generated: the `trajectories.purpose` column's one vocabulary, read by the schema check on
write and by every filter on read, so a misspelt purpose fails where it is written instead of reading an empty table.
A StrEnum: its members are the strings the tables hold."""

from enum import StrEnum


class Purpose(StrEnum):
    FRESH = "fresh"
    """This generation's valid simulator tasks: their p̂ rollouts, the first k of them a GRPO group."""
    POOL = "pool"
    """A D_train task drawn again (dynamic sampling draws more when groups lack a reward spread)."""
    ABSTENTION = "abstention"
    """A task whose right answer is to do nothing, built by construction (AbstainingDomain)."""
    RESCORE = "rescore"
    """A D_env record of an earlier generation answered again, as a fresh task is, to read its p̂ now (not a group)."""
    HELDOUT = "heldout"
    """The held-out seeds, answered greedily after the update: the generation's held-out measure."""
    PROBE_BEFORE = "probe_before"
    """A fixed sample of the fresh tasks answered greedily before the agent's update..."""
    PROBE_AFTER = "probe_after"
    """...and the same sample after it."""


GROUP_PURPOSES = (Purpose.FRESH, Purpose.POOL, Purpose.ABSTENTION)
"""The purposes whose rollouts form GRPO groups."""
