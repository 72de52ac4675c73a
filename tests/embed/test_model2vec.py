"""The model2vec backend on a static-embedding folder built on disk (safetensors + tokenizer.json)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mcp_memory_server.config.settings import Semantic
from mcp_memory_server.embed import EmbedderUnavailable, load_embedder

from .models import static_folder

TEXTS = ["the user lives in shanghai", "peanut allergy", "dark mode editor", "用户 住在 上海", "乌龙茶"]


def test_a_static_folder_loads_and_embeds(tmp_path: Path) -> None:
    folder = static_folder(tmp_path / "potion-tiny", TEXTS, dim=24)
    model = load_embedder(Semantic(embedding_model=f"model2vec:{folder}"))
    assert model.dim == 24
    assert model.model_id.startswith(f"model2vec:{folder}@")
    vectors = model.embed_passages(["user lives in shanghai", "peanut allergy", "用户住在上海"])
    assert vectors.shape == (3, 24)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    q = model.embed_queries(["where does the user live shanghai"])[0]
    assert float(vectors[0] @ q) > float(vectors[1] @ q)
    assert int(np.argmax(vectors @ model.embed_queries(["上海"])[0])) == 2
    assert model.embed_queries([]).shape == (0, 24)


def test_failures(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailable, match="does not exist"):
        load_embedder(Semantic(embedding_model=f"model2vec:{tmp_path / 'nowhere'}"))
    folder = static_folder(tmp_path / "cut", TEXTS)
    (folder / "model.safetensors").write_bytes((folder / "model.safetensors").read_bytes()[:50])
    with pytest.raises(EmbedderUnavailable, match=rf"^model2vec: cannot load {folder} \("):
        load_embedder(Semantic(embedding_model=f"model2vec:{folder}"))
    folder = static_folder(tmp_path / "notok", TEXTS)
    (folder / "tokenizer.json").unlink()
    with pytest.raises(EmbedderUnavailable, match=r"tokenizer\.json is missing"):
        load_embedder(Semantic(embedding_model=f"model2vec:{folder}"))
