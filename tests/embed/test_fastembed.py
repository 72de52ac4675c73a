"""The fastembed backend on model folders built on disk: a tiny real ONNX encoder and tokenizer,
loaded through fastembed's own code (specific_model_path, a custom model for an unknown folder)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from mcp_memory_server.config.settings import Semantic
from mcp_memory_server.embed import EmbedderUnavailable, load_embedder

from .models import onnx_folder

TEXTS = [
    "the user lives in shanghai near the metro",
    "the user lives in beijing near the park",
    "peanut allergy is serious",
    "dark mode in every editor",
    "用户 住在 上海",
    "用户 喜欢 乌龙茶",
    "query passage",
]


def _load(folder: Path) -> object:
    return load_embedder(Semantic(embedding_model=f"fastembed:{folder}"))


def test_a_local_onnx_folder_loads_and_embeds(tmp_path: Path) -> None:
    folder = onnx_folder(tmp_path / "tiny-encoder", TEXTS, dim=32)
    model = load_embedder(Semantic(embedding_model=f"fastembed:{folder}"))
    assert model.dim == 32
    assert model.model_id.startswith(f"fastembed:{folder}@")
    vectors = model.embed_passages(["the user lives in shanghai", "lives in beijing", "peanut allergy", "用户住在上海"])
    assert vectors.shape == (4, 32)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    q = model.embed_queries(["where does the user live in shanghai"])[0]
    sims = vectors @ q
    assert sims[0] > sims[2]  # shares words with the first, none with the allergy
    assert sims[1] > sims[2]
    zh = model.embed_queries(["上海 用户"])[0]
    assert int(np.argmax(vectors @ zh)) == 3
    # Not an e5 model: queries and passages are the same kind of text.
    assert np.allclose(model.embed_queries(["dark mode"]), model.embed_passages(["dark mode"]))
    assert model.embed_queries([]).shape == (0, 32)
    # Loading the same folder again reuses fastembed's registration of it.
    again = load_embedder(Semantic(embedding_model=f"fastembed:{folder}"))
    assert again.model_id == model.model_id
    assert np.allclose(again.embed_passages(["peanut allergy"]), vectors[2:3])


def test_e5_models_get_their_prefixes(tmp_path: Path) -> None:
    folder = onnx_folder(tmp_path / "tiny-multilingual-e5", TEXTS, dim=16)
    model = load_embedder(Semantic(embedding_model=f"fastembed:{folder}"))
    # "query" and "passage" are words of the tiny vocabulary, so the prefixes change the vectors.
    assert not np.allclose(model.embed_queries(["dark mode"]), model.embed_passages(["dark mode"]))


def test_a_changed_model_gets_a_new_id(tmp_path: Path) -> None:
    folder = onnx_folder(tmp_path / "m", TEXTS, dim=32)
    first = load_embedder(Semantic(embedding_model=f"fastembed:{folder}")).model_id
    onnx_folder(tmp_path / "m", [*TEXTS, "another word"], dim=32)
    assert load_embedder(Semantic(embedding_model=f"fastembed:{folder}")).model_id != first


def test_a_truncated_model_onnx(tmp_path: Path) -> None:
    folder = onnx_folder(tmp_path / "cut", TEXTS)
    data = (folder / "model.onnx").read_bytes()
    (folder / "model.onnx").write_bytes(data[: len(data) // 2])
    with pytest.raises(EmbedderUnavailable, match=rf"^fastembed: cannot load {folder} \(") as raised:
        _load(folder)
    assert "\n" not in str(raised.value)


def test_a_missing_tokenizer(tmp_path: Path) -> None:
    folder = onnx_folder(tmp_path / "notok", TEXTS)
    (folder / "tokenizer.json").unlink()
    with pytest.raises(EmbedderUnavailable, match=r"tokenizer.json is missing \(the model's tokenizer\)"):
        _load(folder)


def test_a_corrupt_tokenizer(tmp_path: Path) -> None:
    folder = onnx_folder(tmp_path / "badtok", TEXTS)
    (folder / "tokenizer.json").write_text('{"version": "1.0", "model": ')
    with pytest.raises(EmbedderUnavailable, match=rf"^fastembed: cannot load {folder} \("):
        _load(folder)


def test_a_model_whose_output_differs_from_its_config(tmp_path: Path) -> None:
    folder = onnx_folder(tmp_path / "wrongdim", TEXTS, dim=32, config_dim=64)
    with pytest.raises(EmbedderUnavailable, match="makes vectors of 32 values, its config says 64"):
        _load(folder)


def test_folder_problems_are_named(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailable, match="does not exist"):
        _load(tmp_path / "nowhere")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(EmbedderUnavailable, match="no ONNX model in"):
        _load(empty)
    nodim = onnx_folder(tmp_path / "nodim", TEXTS)
    shutil.rmtree(nodim / "1_Pooling")
    (nodim / "config.json").write_text("{}")
    with pytest.raises(EmbedderUnavailable, match="does not say its vectors' dimension"):
        _load(nodim)
    badjson = onnx_folder(tmp_path / "badjson", TEXTS)
    (badjson / "config.json").write_text("{not json")
    with pytest.raises(EmbedderUnavailable, match=r"config\.json is not readable JSON"):
        _load(badjson)


def test_an_unknown_model_name_is_refused_without_a_download() -> None:
    with pytest.raises(EmbedderUnavailable, match="unknown model 'nobody/no-such-model'"):
        load_embedder(Semantic(embedding_model="fastembed:nobody/no-such-model"))
