"""What the benchmark scripts share on the command line: which model they load (the embedded SmolLM2 from its cache
folder, or `--model DIR`, any model folder), and `--smoke`: the script's whole path at tiny sizes, which the test
suite runs on its tiny model (tests/bench/test_bench_smoke.py) so a refactor cannot break a benchmark unnoticed. A
smoke run measures nothing worth reading."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from genenv.models.loading import EMBEDDED_MODEL, resolve_base_model


def add_model_options(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """--models (the embedded model's cache folder) and --model (a model folder to load instead)."""
    parser.add_argument("--models", type=Path, default=Path("data") / "models", help="model cache folder")
    parser.add_argument("--model", type=Path, help="a model folder to load instead of the embedded SmolLM2")
    return add_smoke_option(parser)


def add_smoke_option(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, for the test suite (measures nothing)")
    return parser


def parsed(parser: argparse.ArgumentParser, argv: list[str] | None = None, **smoke: Any) -> argparse.Namespace:
    """The arguments, with `smoke`'s sizes in place of the given ones under --smoke."""
    args = parser.parse_args(argv)
    if args.smoke:
        for name, value in smoke.items():
            setattr(args, name, value)
    return args


def base_model(args: argparse.Namespace) -> Path:
    """The folder of the model to load: --model, else the embedded SmolLM2 (converted once into --models)."""
    return args.model if args.model is not None else resolve_base_model(EMBEDDED_MODEL, args.models)
