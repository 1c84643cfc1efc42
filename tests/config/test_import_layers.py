"""The installed package's import graph, read with `ast`: no module imports from a layer above its own, and no
circle of imports. Every import counts, including those inside functions and under TYPE_CHECKING."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

from genenv.config import RoleUpdate

LAYERS = (
    ("cli", ("genenv.cli",)),
    ("commands", ("genenv.cli.commands",)),
    ("flows", ("genenv.flows",)),
    ("validation (a config against the registries and this machine)", ("genenv.validation",)),
    ("tasks (the stages)", ("genenv.tasks",)),
    ("pipeline (what every stage stands on)", ("genenv.pipeline",)),
    ("runtime (where the models run: in-process, vLLM, Ray workers)", ("genenv.runtime",)),
    ("evaluation", ("genenv.evaluation",)),
    ("domains", ("genenv.domains",)),
    ("models, warehouse, curriculum", ("genenv.models", "genenv.warehouse", "genenv.curriculum")),
    (
        "config",
        (
            "genenv.config",
            "genenv.parameters",
            "genenv.intervals",
            "genenv.registry",
            "genenv.errors",
            "genenv.atomic",
            "genenv.faults",
            "genenv.arms",
            "genenv.benchmark_data",
            "genenv.infra",
            "genenv",
        ),
    ),
)
"""Top to bottom; a module may import from its own layer and the layers below."""


def _modules() -> dict[str, Path]:
    """Every module of the installed `genenv` package. Its subpackages are the checkout's top-level folders, which
    an editable install maps by name (they are not under genenv/), so every package the layers name is a start."""
    found: dict[str, Path] = {}
    pending = sorted({prefix for _, prefixes in LAYERS for prefix in prefixes})
    seen: set[str] = set()
    while pending:
        package = pending.pop()
        spec = importlib.util.find_spec(package)
        if package in seen or spec is None or spec.submodule_search_locations is None:
            continue
        seen.add(package)
        for folder in spec.submodule_search_locations:
            for path in Path(folder).iterdir():
                if path.suffix == ".py":
                    found[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
                elif (path / "__init__.py").is_file():
                    pending.append(f"{package}.{path.name}")
    return found


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules `name` imports: `from pkg import sub` counts as `pkg.sub` when that is a module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            candidates = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for candidate in candidates:
            while candidate and candidate not in known:
                candidate = candidate.rpartition(".")[0]
            if candidate and candidate != name:
                targets.add(candidate)
    return targets


def _layer(name: str) -> int:
    """The layer of the longest prefix that names `name` (genenv.cli.commands.sql is a command, not the CLI)."""
    matches = [
        (len(prefix), index)
        for index, (_, prefixes) in enumerate(LAYERS)
        for prefix in prefixes
        if name == prefix or (prefix != "genenv" and name.startswith(prefix + "."))
    ]
    if not matches:
        raise AssertionError(f"{name} belongs to no layer: add it to LAYERS")
    return max(matches)[1]


MODULES = _modules()
GRAPH = {name: _imports(name, path, MODULES) for name, path in MODULES.items()}


def test_the_graph_covers_the_whole_package():
    assert {"genenv.cli", "genenv.config", "genenv.flows.generation", "genenv.tasks.rollout"} <= set(MODULES)
    assert "genenv.pipeline.contract" in MODULES
    assert {"genenv.runtime.handle", "genenv.runtime.pool"} <= set(MODULES)
    assert "genenv.config" in GRAPH["genenv.runtime.handle"]  # imports are read


def test_no_module_imports_from_a_layer_above_its_own():
    upward = [
        f"{name} ({LAYERS[_layer(name)][0]}) imports {target} ({LAYERS[_layer(target)][0]})"
        for name, targets in sorted(GRAPH.items())
        for target in sorted(targets)
        if _layer(target) < _layer(name)
    ]
    assert upward == []


def test_the_config_imports_nothing_from_the_project():
    """Only its interval type, a leaf that imports nothing either: the config is the floor."""
    assert GRAPH["genenv.config"] <= {"genenv.intervals"} and GRAPH["genenv.intervals"] == set()


def test_no_circle_of_imports():
    """Depth-first search; a back edge closes a circle, reported with its modules in order."""
    state: dict[str, str] = {}
    circles: list[list[str]] = []

    def visit(name: str, path: list[str]) -> None:
        state[name] = "open"
        for target in sorted(GRAPH[name]):
            if state.get(target) == "open":
                circles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[name] = "done"

    for name in sorted(GRAPH):
        if name not in state:
            visit(name, [name])
    assert circles == []


def _decorators(path: Path) -> set[str]:
    """The names the module's functions are decorated with, called (`@stage(...)`) or not (`@flow`)."""
    found = (
        d.func if isinstance(d, ast.Call) else d
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef)
        for d in node.decorator_list
    )
    return {d.id for d in found if isinstance(d, ast.Name)}


def _is_stage(path: Path) -> bool:
    """The module defines a stage: a function decorated with `generation_stage(...)` or `stage(...)`."""
    return bool(_decorators(path) & {"generation_stage", "stage"})


STAGES = {name for name, path in MODULES.items() if name.startswith("genenv.tasks.") and _is_stage(path)}


def test_no_stage_imports_another_stage():
    """A stage reads what an earlier stage recorded; what two stages both need lives below them (tasks/agent_groups.py,
    curriculum/, domains/), so a stage's code is found from the flow in one hop and changes nowhere else."""
    assert {"genenv.tasks.rollout", "genenv.tasks.finetune", "genenv.tasks.commit", "genenv.tasks.fork"} <= STAGES
    crossing = [f"{name} imports {target}" for name in sorted(STAGES) for target in sorted(GRAPH[name] & STAGES)]
    assert crossing == []


SHARED_BY_STAGES = {"agent_groups", "answers", "simulator_update"}
"""The modules of tasks/ that are not stages: what two stages share, or one stage's part (simulator_update)."""


def test_tasks_holds_the_stages_and_what_they_share_nothing_else():
    """A newcomer who opens tasks/ sees the pipeline's steps; the machinery every stage stands on is pipeline/."""
    others = {n.removeprefix("genenv.tasks.") for n in MODULES if n.startswith("genenv.tasks.")} - {
        s.removeprefix("genenv.tasks.") for s in STAGES
    }
    assert others == SHARED_BY_STAGES


def test_flows_holds_flows_only():
    """flows/ wires stages; what checks a config for a run (validation) stands below it, beside the config."""
    flows = {name for name in MODULES if name.startswith("genenv.flows.")}
    assert "genenv.flows.evolve" in flows
    assert [name for name in sorted(flows) if "flow" not in _decorators(MODULES[name])] == []


ROLE_UPDATE_FIELDS = {f"{role}_{name}" for role in ("agent", "simulator") for name in RoleUpdate.__dataclass_fields__}


def test_updates_are_configured_only_through_role_update():
    """No module outside the config reads a role's update field itself (`config.agent_lr`): each `fit` takes
    `config.role_update(role)`, so the agent's and the simulator's updates cannot drift apart again."""
    readers = [
        f"{name} reads {node.attr}"
        for name, path in sorted(MODULES.items())
        if name != "genenv.config"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute) and node.attr in ROLE_UPDATE_FIELDS
    ]
    assert readers == []
