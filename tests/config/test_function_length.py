"""No product function grows past 60 lines (decorators and docstring included): a longer one mixes concerns that read
better as helpers beside it. Product: every package the wheel ships, not tests/ or bench/."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LIMIT = 60


def _product_files() -> list[Path]:
    folders = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"].values()
    return sorted(path for folder in folders for path in (REPO / folder).rglob("*.py"))


def _lengths(path: Path) -> list[tuple[int, str]]:
    lengths = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
            start = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
            lengths.append((node.end_lineno - start + 1, f"{path.relative_to(REPO)}:{node.lineno} {node.name}"))
    return lengths


def test_every_product_function_is_under_60_lines():
    lengths = [entry for path in _product_files() for entry in _lengths(path)]
    assert len(lengths) > 500  # the package's functions were found
    assert sorted(entry for entry in lengths if entry[0] >= LIMIT) == []
