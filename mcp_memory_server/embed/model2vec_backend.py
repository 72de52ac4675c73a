"""Static embeddings (model2vec): a table of token vectors averaged per text, loaded from a local
folder (`model.safetensors`, `tokenizer.json`, `config.json`). Fast and small, weaker than a
transformer; no download: only folders are accepted."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .embedder import EmbedderUnavailable
from .folders import fingerprint, one_line
from .vectors import checked

__all__ = ["Model2vecEmbedder"]

_PROBE = "你好, hello"


class Model2vecEmbedder:
    def __init__(self, folder: str) -> None:
        try:
            from model2vec import StaticModel
        except ImportError as exc:
            raise EmbedderUnavailable(
                f"model2vec: not installed (install the model2vec extra: pip install 'jiyi[model2vec]'; {exc})"
            ) from exc
        path = Path(folder).expanduser().resolve()
        if not path.is_dir():
            # model2vec would take a missing folder for a model name and try to download it.
            raise EmbedderUnavailable(f"model2vec: the model folder {path} does not exist")
        weights = path / "model.safetensors"
        for needed in (weights, path / "tokenizer.json", path / "config.json"):
            if not needed.is_file():
                raise EmbedderUnavailable(f"model2vec: {needed} is missing")
        try:
            self._model = StaticModel.from_pretrained(path, normalize=True, force_download=False)
            probe = self._model.encode([_PROBE])
        except Exception as exc:  # safetensors, tokenizers and json raise many types; all mean "cannot load"
            raise EmbedderUnavailable(f"model2vec: cannot load {path} ({one_line(exc)})") from exc
        self._dim = int(self._model.dim)
        checked(probe, 1, self._dim, f"model2vec ({path})")
        self._model_id = f"model2vec:{path}@{fingerprint(weights)}"

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return self._dim

    def embed_queries(self, texts: Sequence[str]) -> Any:
        return self._embed(texts)

    def embed_passages(self, texts: Sequence[str]) -> Any:
        return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> Any:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        return checked(self._model.encode(list(texts), show_progress_bar=False), len(texts), self._dim, "model2vec")
