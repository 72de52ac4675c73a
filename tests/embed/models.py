"""Small real model folders the embedding tests build on disk (nothing is downloaded): a tokenizer
made with the `tokenizers` library over a vocabulary of English words and Chinese characters, and
either an ONNX graph (token vectors gathered by id, masked: what fastembed runs) or a safetensors
table of token vectors (what model2vec loads)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]


def vocabulary(texts: Iterable[str]) -> list[str]:
    """Lower-cased words and single CJK characters of the texts, after the special tokens."""
    words: dict[str, None] = {}
    for text in texts:
        for token in re.findall(r"[\u4e00-\u9fff]|[a-z0-9]+", text.lower()):
            words[token] = None
    return SPECIALS + sorted(words)


def write_tokenizer(folder: Path, vocab: list[str], max_length: int = 128) -> None:
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordLevel

    ids = {token: i for i, token in enumerate(vocab)}
    tokenizer = Tokenizer(WordLevel(ids, unk_token="[UNK]"))
    # BERT's normaliser puts spaces around CJK characters, so each is a token of its own.
    tokenizer.normalizer = normalizers.BertNormalizer(handle_chinese_chars=True, lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"model_max_length": max_length, "pad_token": "[PAD]", "unk_token": "[UNK]"})
    )
    (folder / "special_tokens_map.json").write_text(
        json.dumps({"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]"})
    )


def token_vectors(vocab: list[str], dim: int, seed: int = 0) -> Any:
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((len(vocab), dim)).astype(np.float32)
    table[0] = 0.0  # padding contributes nothing
    return table


def onnx_folder(folder: Path, texts: Iterable[str], dim: int = 32, config_dim: int | None = None) -> Path:
    """A fastembed-loadable folder: model.onnx mapping (input_ids, attention_mask) to
    last_hidden_state, its tokenizer, and the sentence-transformers files naming mean pooling."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    folder.mkdir(parents=True, exist_ok=True)
    vocab = vocabulary(texts)
    table = token_vectors(vocab, dim)
    graph = helper.make_graph(
        nodes=[
            helper.make_node("Gather", ["embeddings", "input_ids"], ["gathered"], axis=0),
            helper.make_node("Cast", ["attention_mask"], ["mask_float"], to=TensorProto.FLOAT),
            helper.make_node("Unsqueeze", ["mask_float", "last_axis"], ["mask_3d"]),
            helper.make_node("Mul", ["gathered", "mask_3d"], ["last_hidden_state"]),
        ],
        name="tiny-encoder",
        inputs=[
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"]),
        ],
        outputs=[helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", dim])],
        initializer=[
            numpy_helper.from_array(table, "embeddings"),
            numpy_helper.from_array(np.array([2], dtype=np.int64), "last_axis"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # readable by every onnxruntime fastembed supports
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / "model.onnx"))
    write_tokenizer(folder, vocab)
    (folder / "config.json").write_text(json.dumps({"hidden_size": config_dim or dim, "model_type": "bert"}))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": config_dim or dim, "pooling_mode_mean_tokens": True})
    )
    (folder / "modules.json").write_text(
        json.dumps(
            [
                {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
            ]
        )
    )
    return folder


def static_folder(folder: Path, texts: Iterable[str], dim: int = 24) -> Path:
    """A model2vec folder: model.safetensors holding the token vectors, tokenizer.json, config.json."""
    from safetensors.numpy import save_file

    folder.mkdir(parents=True, exist_ok=True)
    vocab = vocabulary(texts)
    save_file({"embeddings": token_vectors(vocab, dim, seed=1)}, str(folder / "model.safetensors"))
    write_tokenizer(folder, vocab)
    (folder / "config.json").write_text(
        json.dumps({"model_type": "model2vec", "normalize": True, "hidden_dim": dim, "apply_pca": None})
    )
    return folder
