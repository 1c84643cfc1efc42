"""The stage contract: what every generation stage does alike, so a stage's body is only its own work.

A stage maps one typed reference to the next, as Algorithm 1 reads (generate -> rollout -> verify -> rewards ->
grow-pools -> finetune -> evaluate -> commit): where the stage's data is, never data frames or models. Each output's
`ref.versions` holds the Delta version of every table the generation's stages have written so far, and the next
stage reads those tables at those versions: it sees what its predecessors handed on and nothing written since. An
output carries more only where the next stage needs more: `Rollouts` the staged answers, `Adapters` the trained
adapters.

`generation_stage` owns what every stage does alike: the Prefect task options, the timer, the "already done?" check
(a retry or a resumed run skips finished work and still hands its output on), the tables it reads and writes (its
warehouse serves no other: a stage that uses an undeclared table fails at once), the table versions, the crash
point the fault-injection tests use, and one name per stage: the function's, hyphenated.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from genenv.faults import crash_point
from genenv.pipeline.context import Declared, GenerationRef
from genenv.pipeline.options import stage
from genenv.warehouse.schemas import TABLES


@dataclass(frozen=True)
class StageOutput:
    """Where a stage left its data (`ref.versions`: the tables as it handed them on), what it counted, and how it
    went (filled in by `generation_stage`)."""

    ref: GenerationRef
    counts: Mapping[str, Any] = field(default_factory=dict)
    stage: str = ""
    seconds: float = 0.0
    skipped: bool = False


def tasks_written(ref: GenerationRef) -> StageOutput | None:
    """The generation's tasks, when its stage already wrote them (seed_pool at generation 0, generate after)."""
    return StageOutput(ref) if ref.warehouse.has_rows("tasks", ref.run_id, ref.generation) else None


@dataclass(frozen=True)
class Rollouts(StageOutput):
    """The agent's raw answers, staged at `uri` (pipeline/staging.py) until `verify` scores them."""

    uri: str = ""


@dataclass(frozen=True)
class Adapters(StageOutput):
    """The adapters a stage trained, published under the warehouse root, and its steps in `training`."""

    agent: str = ""
    simulator: str = ""


Out = TypeVar("Out", bound=StageOutput)


def upstream_ref(upstream: GenerationRef | StageOutput) -> GenerationRef:
    return upstream if isinstance(upstream, GenerationRef) else upstream.ref


def generation_stage(
    *,
    done: Callable[..., StageOutput | None],
    reads: tuple[str, ...] = (),
    writes: tuple[str, ...] = (),
    gpu: bool = False,
) -> Callable[[Callable[..., Out]], Any]:
    """Decorator for a stage `body(upstream, ...) -> Out`; `done(upstream, ...)` returns the output when the work is
    already in the warehouse (then the body does not run), else None. `reads`: the tables the stage reads, at the
    versions handed on (or the latest, for a table no stage of this generation has written yet). `writes`: the
    tables it appends to, which it reads at their latest version (its own rows, for `done`) and hands on at the
    version it left them. The run's config is every stage's, whatever it declares."""
    unknown = sorted((set(reads) | set(writes)) - set(TABLES))
    if unknown:
        raise ValueError(f"generation_stage: unknown tables {unknown}; known: {sorted(TABLES)}")

    def decorate(body: Callable[..., Out]) -> Any:
        name = body.__name__.replace("_", "-")

        @functools.wraps(body)
        def run(upstream: GenerationRef | StageOutput, *args: Any) -> Out:
            started = time.perf_counter()
            handed = upstream_ref(upstream)
            kept = {table: v for table, v in handed.versions.items() if table not in writes}
            ref = dataclasses.replace(handed, versions=kept, declared=Declared(name, reads, writes))
            upstream = ref if isinstance(upstream, GenerationRef) else dataclasses.replace(upstream, ref=ref)
            crash_point(f"g{ref.generation}:before:{name}")
            found = done(upstream, *args)
            output = body(upstream, *args) if found is None else found
            crash_point(f"g{ref.generation}:end:{name}")
            written = {table: ref.warehouse.version(table) for table in writes}
            versions = {**kept, **{table: v for table, v in written.items() if v is not None}}
            ref = dataclasses.replace(handed, versions=versions)
            seconds = round(time.perf_counter() - started, 2)
            finished = dataclasses.replace(output, ref=ref, stage=name, seconds=seconds, skipped=found is not None)
            return cast(Out, finished)  # `done` finds the output the body would have made

        return stage(name, gpu=gpu)(run)

    return decorate
