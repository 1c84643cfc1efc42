"""Where the evaluation data comes from: BFCL from the pinned `bfcl-eval` package, the others from a folder.

BFCL is published on PyPI (`bfcl-eval` ships `bfcl_eval/data`, `possible_answer/` included), so the README's set-up
installs it. API-Bank and Bamboogle are not published as packages: a user supplies a folder that holds them, laid
out as genenv/evaluation/loaders.py describes; without it they are skipped, with `FOLDER_SETS`' line saying what to
supply. A folder with its own `bfcl/` copy is read instead of the package (the tests' fixtures are such a folder).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

BFCL_REQUIREMENT = "bfcl-eval==2026.3.23"
"""The pinned release; installed without its dependencies (API clients we never call), as the Makefile does."""
INSTALL_BFCL = f"pip install --no-deps {BFCL_REQUIREMENT}"

FOLDER_SETS: dict[str, tuple[str, str]] = {
    "api-bank": (
        "api-bank/level-1-api.json",
        "API-Bank level-1 test data (AlibabaResearch/DAMO-ConvAI, api-bank/), as one JSON list",
    ),
    "bamboogle": ("bamboogle/test.jsonl", "the Bamboogle test split as FlashRAG publishes it (one JSON object a line)"),
}
"""Set name -> (its file under the benchmarks folder, where that file comes from)."""


def bfcl_dir(benchmarks_dir: str | Path | None = None) -> Path | None:
    """`<benchmarks_dir>/bfcl` when that folder exists, else the installed package's data, else None."""
    if benchmarks_dir and (Path(benchmarks_dir) / "bfcl").is_dir():
        return Path(benchmarks_dir) / "bfcl"
    spec = importlib.util.find_spec("bfcl_eval")  # finds the package without importing its heavy __init__
    locations = list(spec.submodule_search_locations or []) if spec else []
    data = Path(locations[0]) / "data" if locations else None
    return data if data is not None and data.is_dir() else None


def require_bfcl_dir(benchmarks_dir: str | Path | None = None) -> Path:
    found = bfcl_dir(benchmarks_dir)
    if found is None:
        raise FileNotFoundError(
            f"BFCL data not found: install it with `{INSTALL_BFCL}` (the README's set-up does), "
            "or pass a benchmarks folder that holds a bfcl/ copy"
        )
    return found


def folder_file(benchmarks_dir: str | Path | None, name: str) -> Path | None:
    """The file of folder-supplied set `name` (a FOLDER_SETS key) when the folder holds it, else None."""
    if not benchmarks_dir:
        return None
    path = Path(benchmarks_dir) / FOLDER_SETS[name][0]
    return path if path.is_file() else None


def require_folder_file(benchmarks_dir: str | Path | None, name: str) -> Path:
    path = folder_file(benchmarks_dir, name)
    if path is None:
        raise FileNotFoundError(missing_folder_set(benchmarks_dir, name))
    return path


def missing_folder_set(benchmarks_dir: str | Path | None, name: str) -> str:
    """One line: which file is missing and where it comes from."""
    relative, source = FOLDER_SETS[name]
    where = f"the benchmarks folder {str(benchmarks_dir)!r} has no {relative}" if benchmarks_dir else "no folder given"
    return f"{name}: {where}; supply a folder holding {relative} ({source})"
