"""Models run by fastembed (ONNX Runtime): a model name fastembed knows, downloaded into its cache,
or a local folder holding an ONNX model and its tokenizer."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .embedder import EmbedderUnavailable
from .folders import fingerprint, one_line
from .vectors import checked

__all__ = ["FastembedEmbedder", "is_folder"]

# Where an exported model keeps its graph, in the order fastembed's own models use them.
_MODEL_FILES = ("model.onnx", "onnx/model.onnx", "model_optimized.onnx", "onnx/model_quantized.onnx")
# The e5 family was trained with these prefixes; without them its queries and passages are
# embedded as the same kind of text and recall drops.
_E5 = re.compile(r"(?:^|[^a-z0-9])e5(?:[^a-z0-9]|$)", re.IGNORECASE)
_PROBE = "query: 你好, hello"


def is_folder(value: str) -> bool:
    """A local folder rather than a model name: an existing directory, or a value written as a path
    (names such as `intfloat/multilingual-e5-large` contain a slash too)."""
    return value.startswith(("/", "./", "../", "~")) or Path(value).expanduser().is_dir()


class FastembedEmbedder:
    def __init__(self, model: str, threads: int | None = None, batch: int = 32) -> None:
        try:
            from fastembed import TextEmbedding
        except ImportError as exc:
            raise EmbedderUnavailable(
                f"fastembed: not installed (install the fastembed extra: pip install 'jiyi[fastembed]'; {exc})"
            ) from exc
        self._batch = batch
        self._prefixes = False
        if is_folder(model):
            folder = Path(model).expanduser().resolve()
            name, kwargs, dim, self._model_id = _from_folder(folder)
            where = str(folder)
            self._prefixes = bool(_E5.search(folder.name) or _E5.search(name))
        else:
            known = {m["model"].lower(): m for m in TextEmbedding.list_supported_models()}
            if model.lower() not in known:
                raise EmbedderUnavailable(
                    f"fastembed: unknown model {model!r} (a model name fastembed lists, or a local folder)"
                )
            name, kwargs, dim = known[model.lower()]["model"], {}, int(known[model.lower()]["dim"])
            self._model_id = f"fastembed:{name}"
            where = name
            self._prefixes = bool(_E5.search(name))
        try:
            self._model = TextEmbedding(name, threads=threads, **kwargs)
        except EmbedderUnavailable:
            raise
        except Exception as exc:  # onnxruntime, tokenizers and the hub raise many types; all mean "cannot load"
            raise EmbedderUnavailable(f"fastembed: cannot load {where} ({one_line(exc)})") from exc
        self._dim = dim
        try:
            probe = np.stack(list(self._model.embed([_PROBE])))
        except Exception as exc:
            raise EmbedderUnavailable(
                f"fastembed: the model {where} fails on a test sentence ({one_line(exc)})"
            ) from exc
        if probe.ndim != 2 or probe.shape[1] != dim:
            raise EmbedderUnavailable(
                f"fastembed: the model {where} makes vectors of {probe.shape[-1]} values, its config says {dim}"
            )
        checked(probe, 1, dim, f"fastembed ({where})")

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return self._dim

    def embed_queries(self, texts: Sequence[str]) -> Any:
        return self._embed(texts, "query: ")

    def embed_passages(self, texts: Sequence[str]) -> Any:
        return self._embed(texts, "passage: ")

    def _embed(self, texts: Sequence[str], prefix: str) -> Any:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        items = [prefix + t for t in texts] if self._prefixes else list(texts)
        rows = list(self._model.embed(items, batch_size=self._batch))
        return checked(np.stack(rows), len(texts), self._dim, "fastembed")


def _from_folder(folder: Path) -> tuple[str, dict[str, Any], int, str]:
    """(the model name to load, TextEmbedding's keyword arguments, the dimension, the model id) of
    a local folder. A folder that holds one of fastembed's own models loads as that model; any
    other is registered as a custom model, its pooling and normalisation read from the
    sentence-transformers files beside it."""
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    if not folder.is_dir():
        raise EmbedderUnavailable(f"fastembed: the model folder {folder} does not exist")
    model_file = next((f for f in _MODEL_FILES if (folder / f).is_file()), None)
    if model_file is None:
        raise EmbedderUnavailable(f"fastembed: no ONNX model in {folder} (looked for {', '.join(_MODEL_FILES)})")
    for needed in ("tokenizer.json", "tokenizer_config.json"):
        if not (folder / needed).is_file():
            raise EmbedderUnavailable(f"fastembed: {folder / needed} is missing (the model's tokenizer)")
    config = _json(folder / "config.json")
    pooling_config = _json(folder / "1_Pooling" / "config.json")
    dim = pooling_config.get("word_embedding_dimension") or config.get("hidden_size")
    if not isinstance(dim, int) or dim <= 0:
        raise EmbedderUnavailable(
            f"fastembed: {folder} does not say its vectors' dimension (hidden_size in config.json)"
        )
    content = fingerprint(folder / model_file)
    model_id = f"fastembed:{folder}@{content}"

    # The folder's own name or the name it was exported from, when fastembed knows that model.
    known = {m["model"].lower(): m for m in TextEmbedding.list_supported_models()}
    for candidate in (str(config.get("_name_or_path", "")), folder.name):
        found = known.get(candidate.lower())
        if found and found["model_file"] == model_file and int(found["dim"]) == dim:
            return found["model"], {"specific_model_path": str(folder)}, dim, model_id

    if pooling_config.get("pooling_mode_cls_token"):
        pooling = PoolingType.CLS
    elif pooling_config.get("pooling_mode_lasttoken"):
        pooling = PoolingType.LAST_TOKEN
    else:
        pooling = PoolingType.MEAN  # sentence-transformers' default, and the e5 family's
    modules = _json_list(folder / "modules.json")
    normalization = any(str(m.get("type", "")).endswith("Normalize") for m in modules)
    # One registration per model file and settings: a name fastembed has not seen, so loading the
    # same folder twice in a process reuses it and a changed folder gets a new one.
    name = f"local/{folder.name}-{content}-{pooling.value.lower()}-{int(normalization)}-{dim}"
    if name.lower() not in known:
        TextEmbedding.add_custom_model(
            model=name,
            pooling=pooling,
            normalization=normalization,
            sources=ModelSource(hf=name),  # never fetched: specific_model_path points at the folder
            dim=dim,
            model_file=model_file,
        )
    return name, {"specific_model_path": str(folder)}, dim, model_id


def _json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EmbedderUnavailable(f"fastembed: {path} is not readable JSON ({one_line(exc)})") from exc
    return value if isinstance(value, dict) else {}


def _json_list(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EmbedderUnavailable(f"fastembed: {path} is not readable JSON ({one_line(exc)})") from exc
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []
