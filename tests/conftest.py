"""Shared fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.tiny import build_tiny_model


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama with its tokenizer, built once per session (about 0.1 s)."""
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model") / "model")
