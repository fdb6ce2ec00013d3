"""One search's index, read from the store's engine: the query's candidates, with the user's statistics.

A :class:`CandidateIndex` is a :class:`~._index.UserIndex` of the memories one search may rank (those
the store's engine returns for the query's words, their conversation neighbours, those near the query
in meaning), whose collection statistics are the user's whole collection's: ``size`` is how many
active analysed memories the user has, a term's document frequency is read from the store's
``memory_term_statistics``. The ranking stages (:mod:`._pipeline`) therefore score a candidate nearly
as the index of all the user's memories scores it (the average length BM25 normalises by is the
candidates': a length counting the neighbours' words is not stored), and nothing of it outlives the
search.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np

from ._index import UserIndex
from ._index_postings import FloatArray, _inner_words


class CandidateIndex(UserIndex):
    """The candidates of one search, scored with the statistics of the user's whole collection.

    ``memories``: how many active analysed memories the user has; ``frequencies``: the document
    frequency of every term the search asks about (the query's, its synonyms' and the candidates' own);
    a term not in it is held by the candidates alone.
    """

    def __init__(
        self,
        *,
        memories: int,
        frequencies: Mapping[str, int],
        link_minutes: float = 30.0,
        embedding_dim: int | None = None,
    ) -> None:
        super().__init__(link_minutes=link_minutes, embedding_dim=embedding_dim)
        self._memories = memories
        self._frequencies = dict(frequencies)
        #: query words whose compounds among the candidates' words were looked for (see :meth:`expansions`)
        self._inner_asked: set[str] = set()

    @property
    def size(self) -> int:
        """The user's memories (not the candidates): the ``N`` of every idf."""
        return max(self._memories, len(self._slot_of))

    def add_frequencies(self, frequencies: Mapping[str, int]) -> None:
        """More document frequencies read from the store (before the first score)."""
        self._frequencies.update(frequencies)

    def document_frequency(self, term: str) -> int:
        """How many of the user's memories hold ``term`` (read from the store; at least the candidates')."""
        local = super().document_frequency(term)
        return max(local, self._frequencies.get(term, 0))

    def norms(self) -> FloatArray:
        """Per-slot tf-idf norms with the collection's idf (computed once: the index never changes)."""
        if self._norms is None or len(self._norms) != len(self._slots):
            norms = np.zeros(len(self._slots), dtype=np.float64)
            idf: dict[str, float] = {}
            for i, entry in enumerate(self._slots):
                if entry is None:
                    continue
                total = 0.0
                for term, count in entry.tf.items():
                    weight = idf.get(term)
                    if weight is None:
                        weight = idf[term] = self.tfidf_idf(self.document_frequency(term))
                    total += ((1 + math.log(count)) * weight) ** 2
                norms[i] = math.sqrt(total)
            self._norms = norms
            self._norms_at = self.size
        return self._norms

    def _add_words(self, words: Iterable[str]) -> None:
        """Nothing up front: a search asks for the compounds of a few query words only (:meth:`expansions`)."""
        self._vocab = None

    def expansions(self, term: str, *, min_prefix: int) -> list[str]:
        """As the index of all memories, the compounds holding ``term`` found among the candidates' words
        when first asked (the candidates hold thousands of words, the query a few)."""
        if len(term) >= min_prefix and term not in self._inner_asked:
            self._inner_asked.add(term)
            holders = {w for w in self.vocabulary() if term in w and w != term and term in _inner_words(w)}
            if holders:
                self._inner[term] = holders
        return super().expansions(term, min_prefix=min_prefix)
