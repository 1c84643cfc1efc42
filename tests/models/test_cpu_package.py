"""models/cpu/ is machinery under the model API: it imports nothing else of genenv, and the model API is what calls
it, so the API reads without it and it can be swapped per device."""

from __future__ import annotations

import ast
from pathlib import Path

import genenv.models.cpu as cpu


def test_the_cpu_machinery_imports_nothing_of_genenv_outside_itself() -> None:
    outside = set()
    for path in Path(cpu.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            outside |= {f"{path.name}: {n}" for n in names if n.startswith("genenv") and not n.startswith(cpu.__name__)}
    assert outside == set()
