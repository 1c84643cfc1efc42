"""`validate(config)`: the one check an entry point (the CLI's commands, the flows) makes of a config, before any model
loads or a run is registered. Its values against their metadata (genenv/config.py), settings planned but not built,
the names it looks up in a registry (domain, generator reward, backend: each must exist and be usable here), and the
machine it starts on (model folder, data folder, benchmarks folder, Ray cluster). The config itself stays typed data:
built, it checks only that each field holds its type; it reads no registry and touches neither disk nor network.

A command that starts a flow checks before Prefect starts (a refusal is one line, and no failed flow run is left
behind), and the flow checks again, because a deployment enters there; both check the same resolved config."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

from genenv.arms import ArmPlan
from genenv.config import ConfigError, GenEnvConfig, check_values, require
from genenv.curriculum.generator_rewards import GENERATOR_REWARDS
from genenv.domains.base import DOMAINS, DomainUnavailable, MultiTurnDomain
from genenv.models.backends import BACKENDS
from genenv.models.precision import resolve_precision
from genenv.runtime.cluster import check_cluster


def validate(config: GenEnvConfig) -> GenEnvConfig:
    """`config` with `precision: auto` made concrete for this machine, when its values are in bounds, every name it
    chooses is registered and can run here, and its paths and cluster can be used from this machine; else ConfigError
    naming the field. A run stores the concrete precision, so it resumes in the one it started in."""
    check_values(config)
    check_built(config)
    check_names(config)
    check_local_paths(config)
    check_cluster(config.ray_address)
    return for_this_machine(config)


def for_this_machine(config: GenEnvConfig) -> GenEnvConfig:
    """`config` with `precision: auto` made concrete here: what a run on this machine stores."""
    return config.replace(precision=resolve_precision(config.precision))


def validate_plans(plans: list[ArmPlan]) -> list[ArmPlan]:
    """Each arm's config validated and made concrete for this machine (`validate`), so a comparison checks its arms
    against stored runs (a shared generation 0, an interrupted arm to continue) with the precision they store."""
    return [dataclasses.replace(plan, config=validate(plan.config)) for plan in plans]


PLANNED_NOT_BUILT = ("trainer_shards", "vllm_tensor_parallel")
"""Settings `genenv plan` sizes (their effect on memory) that no runtime builds yet: a run refuses them."""


def check_built(config: GenEnvConfig) -> None:
    for name in PLANNED_NOT_BUILT:
        require(
            config,
            getattr(config, name) <= 1,
            name,
            f"planned, not built (docs/scale.md); `genenv plan --set {name}=N` shows its effect on memory",
        )


def check_names(config: GenEnvConfig) -> None:
    """The registered names the config chooses, each usable here."""

    def need(ok: bool, name: str, why: str) -> None:
        require(config, ok, name, why)

    need(
        config.generator_reward in GENERATOR_REWARDS,
        "generator_reward",
        f"must be one of {GENERATOR_REWARDS.names()}",
    )
    need(config.domain in DOMAINS, "domain", f"must be one of {DOMAINS.names()}{DOMAINS.how_to_add}")
    try:
        domain = DOMAINS.get(config.domain)(config)
    except DomainUnavailable as missing:
        need(False, "domain", str(missing))
    need(
        not (config.ray_address and isinstance(domain, MultiTurnDomain)),
        "ray_address",
        f"rollout workers answer in one turn; {config.domain} is played turn by turn, in the flow's process only "
        "(docs/scale.md)",
    )
    need(config.backend in BACKENDS, "backend", f"must be one of {BACKENDS.names()}")
    if config.backend == "vllm":
        from genenv.models.vllm import unavailable

        problem = unavailable()
        need(problem is None, "backend", f"{problem}")


def check_local_paths(config: GenEnvConfig) -> None:
    """Where a run will read and write on this machine (not on every config: a stored config names paths of the
    machine that ran it). A model given as a path that does not exist is refused instead of being tried as a hub id;
    `data_dir` must be a writable folder or creatable, and `benchmarks_dir`, when given, a folder."""
    model = Path(config.model).expanduser()
    if _looks_local(config.model) and not (model / "config.json").is_file():
        missing = "does not exist" if not model.exists() else "has no config.json"
        raise ConfigError(
            f"model: local folder {config.model!r} {missing} (a hub id looks like org/name; the embedded model "
            "is embedded:smollm2-135m-instruct)"
        )
    data = Path(config.data_dir).expanduser()
    if data.exists() and not data.is_dir():
        raise ConfigError(f"data_dir: {config.data_dir!r} is a file, not a folder")
    try:  # the run makes the folder anyway; a file written and removed is the one sure test of writing there
        data.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=data).close()
    except OSError as exc:
        raise ConfigError(f"data_dir: {config.data_dir!r} is not writable ({exc.strerror or exc})") from None
    if config.benchmarks_dir and not Path(config.benchmarks_dir).is_dir():
        raise ConfigError(f"benchmarks_dir: folder does not exist (got {config.benchmarks_dir!r})")


def _looks_local(model: str) -> bool:
    """A path rather than a hub id (org/name) or the embedded model: absolute, relative with ./ or ../, from ~, or
    deeper than org/name."""
    return not model.startswith("embedded:") and (
        model.startswith(("/", ".", "~")) or model.count("/") > 1 or Path(model).exists()
    )
