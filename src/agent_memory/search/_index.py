"""A per-user in-memory search index, kept in step with storage row by row.

The index holds, for each active memory, its analysed terms, stored keywords, embedding and the few
fields filters need; content stays in the database. Neighbouring memories of one conversation (same
user and friend, consecutive, at most ``link_minutes`` apart) are linked, so a memory can be found
through the words of the turns around it (BM25F over the memory and its neighbours).

>>> from datetime import UTC, datetime
>>> ix = UserIndex()
>>> t = datetime(2024, 5, 1, tzinfo=UTC)
>>> ix.put(IndexedMemory("a", "k1", None, "general", t, ("mysql", "配置")))
>>> ix.put(IndexedMemory("b", "k2", None, "general", t, ("咖啡",)))
>>> ix.size
2
>>> ix.remove("a")
>>> ix.size
1
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np
import numpy.typing as npt
from scipy import sparse

from data_layer import Scope

from ._scoring import bm25_idf

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Weights of the neighbours at distance 1 and 2 in a conversation.
NEIGHBOUR_WEIGHTS = (0.5, 0.25)


@dataclass(frozen=True, slots=True)
class IndexedMemory:
    """What the index keeps of one memory."""

    id: Hashable
    memory_key: str
    friend_id: str | None
    memory_type: str
    created_at: datetime
    terms: tuple[str, ...]
    keywords: tuple[tuple[str, float], ...] = ()
    embedding: npt.NDArray[np.float32] | None = None


@dataclass(slots=True)
class _Slot:
    memory: IndexedMemory
    tf: dict[str, int]
    ts: float


@dataclass(slots=True)
class _Postings:
    by_slot: dict[int, float] = field(default_factory=dict)
    cached: tuple[IntArray, FloatArray] | None = None

    def arrays(self) -> tuple[IntArray, FloatArray]:
        if self.cached is None:
            slots = np.fromiter(self.by_slot.keys(), dtype=np.int64, count=len(self.by_slot))
            values = np.fromiter(self.by_slot.values(), dtype=np.float64, count=len(self.by_slot))
            self.cached = (slots, values)
        return self.cached


def _inner_words(term: str) -> list[str]:
    """Substrings of 2+ characters inside a Chinese term of 3 to 8 characters (科幻电影 -> 科幻, 幻电, 电影, ...)."""
    if not 3 <= len(term) <= 8 or not all("\u3400" <= ch <= "\u9fff" for ch in term):
        return []
    return [term[i:j] for i in range(len(term)) for j in range(i + 2, len(term) + 1) if j - i < len(term)]


class UserIndex:
    """Terms, keywords, embeddings and conversation links of one user's active memories.

    Not thread-safe: the owning :class:`~agent_memory.search.HybridMemorySearch` serialises access.
    """

    def __init__(self, *, link_minutes: float = 30.0, embedding_dim: int | None = None) -> None:
        self.link_seconds = link_minutes * 60.0
        self.embedding_dim = embedding_dim
        self._slots: list[_Slot | None] = []
        self._slot_of: dict[Hashable, int] = {}
        self._free: list[int] = []
        self._terms: dict[str, _Postings] = {}
        self._keywords: dict[str, _Postings] = {}
        self._sessions: dict[str, list[tuple[float, str, int]]] = {}
        self._links: dict[str, list[tuple[int, int, float]]] = {}
        self._dirty_sessions: set[str] = set()
        self._vocab: list[str] | None = None
        #: inner words of long Chinese terms (电影 -> {科幻电影}), so a query word finds compounds
        self._inner: dict[str, set[str]] = {}
        self._arrays: dict[str, np.ndarray] | None = None
        self._adjacency: sparse.csr_matrix | None = None
        self._neighbours: tuple[IntArray, FloatArray] | None = None
        self._norms: FloatArray | None = None
        self._norms_at = 0
        self._embeddings: npt.NDArray[np.float32] | None = None

    # -- writes -------------------------------------------------------------------------------------

    @property
    def size(self) -> int:
        """Number of indexed memories."""
        return len(self._slot_of)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._slot_of

    def ids(self) -> set[Hashable]:
        """Ids of the indexed memories."""
        return set(self._slot_of)

    def put(self, memory: IndexedMemory) -> None:
        """Add a memory or replace the indexed version of it."""
        if memory.id in self._slot_of:
            self.remove(memory.id)
        slot = self._free.pop() if self._free else len(self._slots)
        tf: dict[str, int] = {}
        for term in memory.terms:
            tf[term] = tf.get(term, 0) + 1
        entry = _Slot(memory, tf, memory.created_at.timestamp())
        if slot == len(self._slots):
            self._slots.append(entry)
        else:
            self._slots[slot] = entry
        self._slot_of[memory.id] = slot
        for term, count in tf.items():
            self._post(self._terms, term, slot, float(count))
        for word, weight in memory.keywords:
            self._post(self._keywords, word, slot, weight)
        session = memory.friend_id or ""
        bisect.insort(self._sessions.setdefault(session, []), (entry.ts, memory.memory_key, slot))
        self._changed(session)
        self.note_put_norm(memory.id)  # a reused slot must not keep the previous memory's norm

    def remove(self, memory_id: Hashable) -> None:
        """Drop a memory (no error when it is not indexed)."""
        slot = self._slot_of.pop(memory_id, None)
        if slot is None:
            return
        entry = self._slots[slot]
        assert entry is not None
        for term in entry.tf:
            self._unpost(self._terms, term, slot)
        for word, _ in entry.memory.keywords:
            self._unpost(self._keywords, word, slot)
        session = entry.memory.friend_id or ""
        members = self._sessions[session]
        members.remove((entry.ts, entry.memory.memory_key, slot))
        self._slots[slot] = None
        self._free.append(slot)
        if self._norms is not None and slot < len(self._norms):
            self._norms[slot] = 0.0
        self._changed(session)

    def _post(self, table: dict[str, _Postings], term: str, slot: int, value: float) -> None:
        postings = table.get(term)
        if postings is None:
            postings = table[term] = _Postings()
            self._vocab = None
            for inner in _inner_words(term):
                self._inner.setdefault(inner, set()).add(term)
        postings.by_slot[slot] = max(value, postings.by_slot.get(slot, 0.0))
        postings.cached = None

    def _unpost(self, table: dict[str, _Postings], term: str, slot: int) -> None:
        postings = table.get(term)
        if postings is None:
            return
        postings.by_slot.pop(slot, None)
        postings.cached = None
        if not postings.by_slot:
            del table[term]
            self._vocab = None
            if term not in self._terms and term not in self._keywords:
                for inner in _inner_words(term):
                    holders = self._inner.get(inner)
                    if holders is not None:
                        holders.discard(term)
                        if not holders:
                            del self._inner[inner]

    def _changed(self, session: str) -> None:
        self._dirty_sessions.add(session)
        self._arrays = None
        self._adjacency = None
        self._embeddings = None

    # -- derived structures ------------------------------------------------------------------------

    @property
    def capacity(self) -> int:
        """Number of slots (indexed memories plus free slots); score vectors have this length."""
        return len(self._slots)

    def arrays(self) -> dict[str, np.ndarray]:
        """Per-slot arrays: ``active``, ``ts``, ``length`` and ``expanded_length`` (with neighbours)."""
        if self._arrays is None:
            n = len(self._slots)
            active = np.zeros(n, dtype=bool)
            ts = np.zeros(n, dtype=np.float64)
            length = np.zeros(n, dtype=np.float64)
            friend = np.full(n, None, dtype=object)
            kind = np.full(n, None, dtype=object)
            for i, entry in enumerate(self._slots):
                if entry is not None:
                    active[i] = True
                    ts[i] = entry.ts
                    length[i] = sum(entry.tf.values())
                    friend[i] = entry.memory.friend_id
                    kind[i] = entry.memory.memory_type
            expanded = length + self.adjacency() @ length
            self._arrays = {
                "active": active,
                "ts": ts,
                "length": length,
                "expanded_length": expanded,
                "friend": friend,
                "type": kind,
            }
        return self._arrays

    def adjacency(self) -> sparse.csr_matrix:
        """Symmetric slot-by-slot matrix of neighbour weights (0.5 at distance 1, 0.25 at distance 2)."""
        if self._adjacency is None:
            for session in self._dirty_sessions:
                self._links[session] = self._link(self._sessions.get(session, []))
                if not self._sessions.get(session):
                    self._sessions.pop(session, None)
                    self._links.pop(session, None)
            self._dirty_sessions.clear()
            rows: list[int] = []
            cols: list[int] = []
            vals: list[float] = []
            for links in self._links.values():
                for a, b, w in links:
                    rows += (a, b)
                    cols += (b, a)
                    vals += (w, w)
            n = len(self._slots)
            self._adjacency = sparse.csr_matrix((vals, (rows, cols)), shape=(n, n), dtype=np.float64)
            width = 2 * len(NEIGHBOUR_WEIGHTS)
            table = np.full((n, width), -1, dtype=np.int64)
            weights = np.zeros((n, width), dtype=np.float64)
            fill = np.zeros(n, dtype=np.int64)
            for a, b, w in zip(rows, cols, vals, strict=True):
                table[a, fill[a]] = b
                weights[a, fill[a]] = w
                fill[a] += 1
            self._neighbours = (table, weights)
        return self._adjacency

    def neighbour_table(self) -> tuple[IntArray, FloatArray]:
        """``(slots, weights)``: per slot, up to four neighbours (-1 pads) and their weights."""
        self.adjacency()
        assert self._neighbours is not None
        return self._neighbours

    def spread(self, slots: IntArray, values: FloatArray) -> FloatArray:
        """Per slot, the weighted sum of its neighbours' ``values`` (given on ``slots``)."""
        if len(slots) * 30 > len(self._slots):  # many slots: one sparse matrix-vector product is cheaper
            dense = np.zeros(len(self._slots), dtype=np.float64)
            dense[slots] = values
            return np.asarray(self.adjacency() @ dense, dtype=np.float64)
        table, weights = self.neighbour_table()
        targets = table[slots].ravel()
        contrib = (weights[slots] * np.asarray(values, dtype=np.float64)[:, None]).ravel()
        ok = targets >= 0
        return np.bincount(targets[ok], weights=contrib[ok], minlength=len(self._slots))

    def _link(self, members: Sequence[tuple[float, str, int]]) -> list[tuple[int, int, float]]:
        links = []
        for i, (ts, _, slot) in enumerate(members):
            for distance, weight in enumerate(NEIGHBOUR_WEIGHTS, start=1):
                j = i + distance
                if j >= len(members) or members[j][0] - ts > self.link_seconds:
                    break
                links.append((slot, members[j][2], weight))
        return links

    def vocabulary(self) -> list[str]:
        """Sorted distinct terms (for prefix look-ups)."""
        if self._vocab is None:
            self._vocab = sorted(self._terms.keys() | self._keywords.keys())
        return self._vocab

    def expansions(self, term: str, *, min_prefix: int) -> list[str]:
        """Indexed terms that start with ``term`` or that ``term`` starts with, and Chinese compounds
        that contain ``term`` (not ``term`` itself)."""
        if len(term) < min_prefix:
            return []
        vocab = self.vocabulary()
        found = []
        i = bisect.bisect_right(vocab, term)
        while i < len(vocab) and vocab[i].startswith(term) and len(found) < 50:
            found.append(vocab[i])
            i += 1
        for cut in range(min_prefix, len(term)):
            head = term[:cut]
            if head in self._terms or head in self._keywords:
                found.append(head)
        taken = set(found)
        found.extend(sorted(t for t in self._inner.get(term, ()) if t not in taken and t != term)[:50])
        return found

    def document_frequency(self, term: str) -> int:
        """How many memories contain ``term`` in their text."""
        postings = self._terms.get(term)
        return len(postings.by_slot) if postings else 0

    def postings(self, term: str) -> tuple[IntArray, FloatArray] | None:
        """``(slots, term frequencies)`` of a text term, or ``None``."""
        postings = self._terms.get(term)
        return postings.arrays() if postings else None

    def keyword_postings(self, word: str) -> tuple[IntArray, FloatArray] | None:
        """``(slots, weights)`` of a stored keyword, or ``None``."""
        postings = self._keywords.get(word)
        return postings.arrays() if postings else None

    def tfidf_idf(self, df: int) -> float:
        """Smoothed idf of the tf-idf cosine: ``ln((1 + N) / (1 + df)) + 1``."""
        return math.log((1 + self.size) / (1 + df)) + 1.0

    def norms(self) -> FloatArray:
        """Per-slot tf-idf vector norms, refreshed when the collection grew or shrank by over 2 %."""
        n = len(self._slots)
        stale = (
            self._norms is None or len(self._norms) != n or abs(self.size - self._norms_at) > 0.02 * max(1, self.size)
        )
        if stale:
            self._recompute_norms()
        assert self._norms is not None
        return self._norms

    def _recompute_norms(self) -> None:
        n = len(self._slots)
        norms = np.zeros(n, dtype=np.float64)
        idf = {term: self.tfidf_idf(len(p.by_slot)) for term, p in self._terms.items()}
        for i, entry in enumerate(self._slots):
            if entry is not None:
                norms[i] = math.sqrt(sum(((1 + math.log(c)) * idf[t]) ** 2 for t, c in entry.tf.items()))
        self._norms = norms
        self._norms_at = self.size

    def note_put_norm(self, memory_id: Hashable) -> None:
        """Compute the norm of one newly put memory with the current idf (no full refresh)."""
        if self._norms is None:
            return
        slot = self._slot_of[memory_id]
        entry = self._slots[slot]
        assert entry is not None
        if len(self._norms) < len(self._slots):
            self._norms = np.concatenate([self._norms, np.zeros(len(self._slots) - len(self._norms))])
        self._norms[slot] = math.sqrt(
            sum(((1 + math.log(c)) * self.tfidf_idf(self.document_frequency(t))) ** 2 for t, c in entry.tf.items())
        )

    def missing_embeddings(self) -> list[IndexedMemory]:
        """Indexed memories without an embedding."""
        return [e.memory for e in self._slots if e is not None and e.memory.embedding is None]

    def set_embedding(self, memory_id: Hashable, vector: npt.NDArray[np.float32]) -> None:
        """Attach an embedding computed after indexing (ignored for memories no longer indexed)."""
        slot = self._slot_of.get(memory_id)
        if slot is None:
            return
        entry = self._slots[slot]
        assert entry is not None
        entry.memory = replace(entry.memory, embedding=vector)
        if self._embeddings is not None and len(self._embeddings) == len(self._slots):
            self._embeddings[slot] = vector

    def embeddings(self) -> npt.NDArray[np.float32] | None:
        """Slot-by-dimension matrix of embeddings (zero rows where missing), or ``None`` without any."""
        if self.embedding_dim is None:
            return None
        if self._embeddings is None:
            matrix = np.zeros((len(self._slots), self.embedding_dim), dtype=np.float32)
            for i, entry in enumerate(self._slots):
                if entry is not None and entry.memory.embedding is not None:
                    matrix[i] = entry.memory.embedding
            self._embeddings = matrix
        return self._embeddings

    def bm25_idf(self, terms: Iterable[str]) -> dict[str, float]:
        """Lucene BM25 idf of each term over the indexed memories."""
        terms = list(terms)
        dfs = [self.document_frequency(t) for t in terms]
        values = bm25_idf(self.size, dfs)
        return {t: float(v) for t, v, df in zip(terms, values, dfs, strict=True) if df > 0}

    # -- filters and results -----------------------------------------------------------------------

    def mask(
        self,
        *,
        scope: Scope | None = None,
        memory_types: Sequence[str] | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
    ) -> npt.NDArray[np.bool_]:
        """Slots that pass the filters; the friend filter is the scope's rule (:class:`data_layer.Scope`)."""
        arrays = self.arrays()
        keep = arrays["active"].copy()
        if start is not None:
            keep &= arrays["ts"] >= start.timestamp()
        if end is not None:
            keep &= arrays["ts"] < end.timestamp()
        if scope is not None:
            keep &= scope.friend_mask(arrays["friend"])
        if memory_types:
            keep &= np.isin(arrays["type"], list(memory_types))
        return keep

    def memory(self, slot: int) -> IndexedMemory:
        """The memory in a slot."""
        entry = self._slots[slot]
        if entry is None:
            raise KeyError(slot)
        return entry.memory

    def slot_terms(self, slot: int) -> Mapping[str, int]:
        """Term frequencies of the memory in a slot."""
        entry = self._slots[slot]
        if entry is None:
            raise KeyError(slot)
        return entry.tf

    def tie_key(self, slot: int) -> tuple[float, str]:
        """Stable tie-break of a slot: creation time, then memory key (the same on every backend)."""
        entry = self._slots[slot]
        if entry is None:
            raise KeyError(slot)
        return (entry.ts, entry.memory.memory_key)
