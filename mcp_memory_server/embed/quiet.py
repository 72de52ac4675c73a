"""Keeps model libraries off stdout, which is the MCP protocol's channel in stdio mode."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator

__all__ = ["quiet"]

# Progress bars and download notices of the Hugging Face stack (fastembed, model2vec, tokenizers),
# set before those libraries are imported: they read them once. Bars go to stderr, but a server
# log is no place for them either.
_QUIET_ENV = {
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TQDM_DISABLE": "1",
    "TOKENIZERS_PARALLELISM": "false",  # no fork warning printed by tokenizers in a process that forks
}


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Python-level prints of whatever runs inside go to stderr instead of stdout.

    Only `sys.stdout` is swapped, never file descriptor 1: the stdio transport writes protocol
    messages through its own handle while a model loads in a worker thread, and a redirected
    descriptor would send them to stderr. (That transport already points descriptor 1 at stderr
    while it serves, so C code that writes to it cannot corrupt the protocol either.)"""
    for name, value in _QUIET_ENV.items():
        os.environ.setdefault(name, value)
    for name in ("fastembed", "huggingface_hub", "model2vec", "onnxruntime"):
        logging.getLogger(name).setLevel(logging.ERROR)
    with contextlib.redirect_stdout(sys.stderr):
        yield
