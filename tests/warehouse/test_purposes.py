"""Row purposes are one vocabulary (warehouse/purposes.py): the schema accepts exactly its members, and no product
module filters or compares a `purpose` against a bare string, where a typo would read an empty table silently."""

from __future__ import annotations

import ast
from pathlib import Path

from genenv.warehouse.purposes import Purpose
from genenv.warehouse.schemas import Trajectories

REPO = Path(__file__).resolve().parents[2]
PRODUCT = ("tasks", "flows", "curriculum", "evaluation", "warehouse", "runtime", "genenv", "bench")
VALUES = {p.value for p in Purpose}


def _mentions_purpose(node: ast.AST) -> bool:
    return any(
        (isinstance(n, ast.Constant) and n.value == "purpose") or (isinstance(n, ast.Attribute) and n.attr == "purpose")
        for n in ast.walk(node)
    )


def _is_in_on_purpose(node: ast.AST) -> bool:
    func = node.func if isinstance(node, ast.Call) else None
    return isinstance(func, ast.Attribute) and func.attr == "is_in" and _mentions_purpose(func.value)


def _bare_purposes(tree: ast.AST) -> list[int]:
    """Lines where a purpose value is a string literal: `purpose="fresh"`, `x.purpose == "pool"`,
    `pl.col("purpose").is_in(["fresh", ...])`."""
    lines = []
    for node in ast.walk(tree):
        literals: list[ast.expr] = []
        if isinstance(node, ast.keyword) and node.arg == "purpose":
            literals = [node.value]
        elif isinstance(node, ast.Compare) and _mentions_purpose(node):
            literals = [node.left, *node.comparators]
        elif _is_in_on_purpose(node):
            literals = [e for arg in node.args if isinstance(arg, ast.List | ast.Tuple) for e in arg.elts]
        lines += [n.lineno for n in literals if isinstance(n, ast.Constant) and n.value in VALUES]
    return lines


def test_the_schema_accepts_exactly_the_purposes() -> None:
    checks = Trajectories.to_schema().columns["purpose"].checks
    assert any(set(getattr(c, "statistics", {}).get("allowed_values", ())) == VALUES for c in checks)


def test_no_product_module_filters_a_purpose_by_a_bare_string() -> None:
    found = {}
    for folder in PRODUCT:
        for path in (REPO / folder).rglob("*.py"):
            lines = _bare_purposes(ast.parse(path.read_text(encoding="utf-8")))
            if lines:
                found[str(path.relative_to(REPO))] = lines
    assert not found, f"use genenv.warehouse.purposes.Purpose: {found}"
    assert sorted(_bare_purposes(ast.parse('rows.filter(purpose="fresh")\nx = g.purpose == "pool"'))) == [1, 2]
