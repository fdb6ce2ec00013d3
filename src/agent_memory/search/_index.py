"""A per-user in-memory search index, kept in step with storage row by row.

The index holds, for each active memory, its analysed terms, stored keywords, embedding and the few
fields filters need; content stays in the database. Neighbouring memories of one conversation (same
user and friend, consecutive, at most ``link_minutes`` apart) are linked, so a memory can be found
through the words of the turns around it (BM25F over the memory and its neighbours).

This module holds the write path (put/remove, posting upkeep) and the term statistics scorers read
(vocabulary, postings, idf, tf-idf norms, embeddings). The derived per-slot arrays, neighbour links and
filter masks come from ``_index_arrays``; slot and posting records from ``_index_postings``. An index
loaded from a snapshot (``_snapshot``) holds lazy containers (``_index_lazy``) that make a slot's or a
term's objects when first touched; per-term score parts of earlier searches are kept by :meth:`memo`,
and other small values derived from the index by :meth:`derived`, until the next write (the same
numbers, computed once).

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
import re
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TypeVar

import numpy as np
import numpy.typing as npt
from scipy import sparse

from ._index_arrays import NEIGHBOUR_WEIGHTS as NEIGHBOUR_WEIGHTS
from ._index_arrays import SlotArraysMixin
from ._index_lazy import LazyList, LazyMap
from ._index_postings import FloatArray, IntArray, _inner_words, _Postings, _Slot
from ._scoring import bm25_idf

#: Bounds of :meth:`UserIndex.memo`: vectors kept, and values over all of them (16 bytes each).
MEMO_ENTRIES, MEMO_VALUES = 256, 1_000_000
#: Bounds of :meth:`UserIndex.derived`: small values kept, and their estimated bytes (oldest dropped first).
DERIVED_ENTRIES, DERIVED_BYTES = 2048, 2_000_000
_V = TypeVar("_V")


def _estimated_bytes(value: object) -> int:
    """A rough size of a kept value: 32 bytes a plain item (a float; a word's string is mostly the
    index's own), 56 a container and 8 an item's place in it, a dict about 100 an item.

    >>> _estimated_bytes(({"咖啡": 0.8}, (("拿铁", 1.2, 1.0),)))
    476
    """
    if isinstance(value, dict):
        return 64 + 100 * len(value)
    if isinstance(value, tuple | list | set | frozenset):
        return 56 + sum(8 + _estimated_bytes(item) for item in value)
    return 32


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
    #: the row's change counter when indexed (keys the engine's record cache)
    revision: int = -1
    #: the conversation session the memory was said in (metadata ``session_id``); ``None``: a memory
    #: of its own, never linked to the memories written around it
    session: str | None = None
    #: who said it (metadata ``speaker``); a query naming one speaker weighs the others' words less
    speaker: str | None = None
    #: whether it asks something; in a session, the turn after it answers (see ``followers``)
    asks: bool = False


def link_group(memory: IndexedMemory) -> str | None:
    """The group whose members are linked as neighbours: one session of one AI friend's chat.

    Only turns of one conversation session lift each other (a question's answer is in the next
    turn); two memories written minutes apart but on their own ("I like café au lait", "the trip
    moves to Chengdu") are unrelated, and linking them made one recall the other.
    """
    return None if memory.session is None else f"{memory.friend_id or ''}\x1f{memory.session}"


_DIGITS = re.compile(r"\d+")


def turn_order(memory_key: str) -> str:
    """What orders the turns of a session written at the same time: the key with its numbers compared
    as numbers, so ``msg-9`` comes before ``msg-10`` (each run of digits is prefixed with its length).

    >>> sorted(["turn-10", "turn-9", "turn-1"], key=turn_order)
    ['turn-1', 'turn-9', 'turn-10']
    """
    return _DIGITS.sub(lambda m: f"{len(m.group()):03d}{m.group()}", memory_key)


class UserIndex(SlotArraysMixin):
    """Terms, keywords, embeddings and conversation links of one user's active memories.

    Not thread-safe: the owning :class:`~agent_memory.search.HybridMemorySearch` serialises access.
    """

    def __init__(self, *, link_minutes: float = 30.0, embedding_dim: int | None = None) -> None:
        self.link_seconds = link_minutes * 60.0
        self.embedding_dim = embedding_dim
        # the containers are plain dicts and lists, or their lazy forms in an index loaded from a snapshot
        self._slots: LazyList[_Slot | None] = LazyList()
        self._slot_map: dict[Hashable, int] | None = {}
        #: (number of memories, loader of the id -> slot map) of an index loaded from a snapshot
        self._slot_map_source: tuple[int, Callable[[], dict[Hashable, int]]] | None = None
        self._free: list[int] = []
        self._terms: dict[str, _Postings] | LazyMap[str, _Postings] = {}
        self._keywords: dict[str, _Postings] | LazyMap[str, _Postings] = {}
        self._sessions: dict[str, list[tuple[float, str, int]]] | LazyMap[str, list[tuple[float, str, int]]] = {}
        self._links: dict[str, IntArray] | LazyMap[str, IntArray] = {}
        self._dirty_sessions: set[str] = set()
        self._dirty_slots: set[int] = set()
        self._vocab: list[str] | None = None
        #: inner words of long Chinese terms (电影 -> {科幻电影}), so a query word finds compounds
        self._inner: dict[str, set[str]] | LazyMap[str, set[str]] = {}
        self._postings_total = 0
        #: per-term score parts of earlier searches (:meth:`memo`), valid until the next write
        self._memo: dict[Hashable, tuple[IntArray, FloatArray] | None] = {}
        self._memo_size = 0
        #: small values derived from the index (a memory's feedback terms, a word's held neighbours)
        self._derived: dict[Hashable, tuple[object, int]] = {}
        self._derived_bytes = 0
        #: what a snapshot-loaded index came from (``_snapshot._Source``): saving again copies untouched slots
        self._snapshot_source: object | None = None
        #: per slot, whether a snapshot's slot carries an embedding (lets missing_embeddings skip loading)
        self._snapshot_embedded: npt.NDArray[np.bool_] | None = None
        self._arrays: dict[str, np.ndarray] | None = None
        self._adjacency: sparse.csr_matrix | None = None
        self._neighbours: tuple[IntArray, FloatArray] | None = None
        self._followers: IntArray | None = None
        self._link_rows: IntArray | None = None
        #: speakers by code (``arrays()["speaker"]``; codes are kept until a rebuild) and how many active
        #: memories each said
        self._speaker_names: list[str] = []
        self._speaker_codes: dict[str, int] = {}
        self._speaker_counts: list[int] = []
        self._norms: FloatArray | None = None
        self._norms_at = 0
        self._embeddings: npt.NDArray[np.float32] | None = None
        #: the rows ``_embeddings`` is the first part of (more than the slots after a growth)
        self._embedding_rows: npt.NDArray[np.float32] | None = None

    # -- writes -------------------------------------------------------------------------------------

    @property
    def _slot_of(self) -> dict[Hashable, int]:
        """Memory id -> slot (made on first use in an index loaded from a snapshot)."""
        if self._slot_map is None:
            assert self._slot_map_source is not None
            self._slot_map = self._slot_map_source[1]()
            self._slot_map_source = None
        return self._slot_map

    @property
    def size(self) -> int:
        """Number of indexed memories."""
        if self._slot_map is None and self._slot_map_source is not None:
            return self._slot_map_source[0]
        return len(self._slot_of)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._slot_of

    def ids(self) -> set[Hashable]:
        """Ids of the indexed memories."""
        return set(self._slot_of)

    def slot(self, memory_id: Hashable) -> int | None:
        """The slot of an indexed memory (``None``: not indexed)."""
        return self._slot_of.get(memory_id)

    def approx_bytes(self) -> int:
        """A rough size of the index in memory (slots, postings, terms, embeddings), for cache caps."""
        dim = self.embedding_dim or 0
        has_vectors = self._embeddings is not None or self._snapshot_embedded is not None
        vectors = dim * 4 * len(self._slots) if has_vectors else 0
        terms = len(self._terms) + len(self._keywords)
        memo = 16 * self._memo_size + self._derived_bytes
        return 2048 + 600 * len(self._slots) + 90 * self._postings_total + 160 * terms + vectors + memo

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
        session = link_group(memory)
        if session is not None:
            bisect.insort(self._sessions.setdefault(session, []), (entry.ts, turn_order(memory.memory_key), slot))
        if memory.speaker is not None:
            self._speaker_counts[self.speaker_code(memory.speaker)] += 1
        self._changed(session, slot)
        self._set_embedding_row(slot, memory.embedding)
        self.note_put_norm(memory.id)  # a reused slot must not keep the previous memory's norm

    def put_many(self, memories: Iterable[IndexedMemory]) -> None:
        """:meth:`put` of each of ``memories``; those new to the index go into new slots in one pass (the
        postings, sessions and speakers of the whole batch written together, as a build does)."""
        fresh: list[IndexedMemory] = []
        for memory in memories:
            if memory.id in self._slot_of or self._free:
                self.put(memory)
            else:
                fresh.append(memory)
        if not fresh:
            return
        slots, slot_of, terms, keywords = self._slots, self._slot_of, self._terms, self._keywords
        new_terms: list[str] = []
        touched: set[str] = set()
        posted = 0
        for memory in fresh:
            slot = len(slots)
            tf = dict(Counter(memory.terms))
            entry = _Slot(memory, tf, memory.created_at.timestamp())
            slots.append(entry)
            slot_of[memory.id] = slot
            for term, count in tf.items():
                postings = terms.get(term)
                if postings is None:
                    postings = terms[term] = _Postings()
                    new_terms.append(term)
                postings.by_slot[slot] = float(count)
                postings.cached = None
            posted += len(tf)
            for word, weight in memory.keywords:
                postings = keywords.get(word)
                if postings is None:
                    postings = keywords[word] = _Postings()
                    new_terms.append(word)
                by_slot = postings.by_slot
                if slot not in by_slot:
                    posted += 1
                by_slot[slot] = max(weight, by_slot.get(slot, 0.0))
                postings.cached = None
            session = link_group(memory)
            if session is not None:
                self._sessions.setdefault(session, []).append((entry.ts, turn_order(memory.memory_key), slot))
                touched.add(session)
            if memory.speaker is not None:
                self._speaker_counts[self.speaker_code(memory.speaker)] += 1
            self._dirty_slots.add(slot)
        self._postings_total += posted
        for session in touched:
            self._sessions[session].sort()
        self._dirty_sessions |= touched
        self._add_words(dict.fromkeys(new_terms))
        self._changed(None, len(slots) - 1)
        for memory in fresh:
            self._set_embedding_row(slot_of[memory.id], memory.embedding)
            self.note_put_norm(memory.id)

    def _add_words(self, words: Iterable[str]) -> None:
        """Keep the vocabulary and the compounds' inner words in step with newly indexed ``words``."""
        added = list(words)
        if self._vocab is not None:
            self._vocab = None  # made again, sorted, when next asked
        for term in added:
            for inner in _inner_words(term):
                self._inner.setdefault(inner, set()).add(term)

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
        session = link_group(entry.memory)
        if session is not None:
            self._sessions[session].remove((entry.ts, turn_order(entry.memory.memory_key), slot))
        if entry.memory.speaker is not None:
            self._speaker_counts[self._speaker_codes[entry.memory.speaker]] -= 1
        self._slots[slot] = None
        self._free.append(slot)
        if self._norms is not None and slot < len(self._norms):
            self._norms[slot] = 0.0
        self._changed(session, slot)
        self._set_embedding_row(slot, None)

    def speakers(self) -> dict[str, int]:
        """The speakers of the indexed memories by code (``arrays()["speaker"]``), those with a memory."""
        return {name: code for code, name in enumerate(self._speaker_names) if self._speaker_counts[code]}

    def speaker_names(self) -> list[str]:
        """Every speaker's name the index has given a code, by code (also those with no memory now)."""
        return list(self._speaker_names)

    def speaker_code(self, name: str) -> int:
        """The code of a speaker's name in ``arrays()["speaker"]``, given on first use."""
        code = self._speaker_codes.get(name)
        if code is None:
            code = self._speaker_codes[name] = len(self._speaker_names)
            self._speaker_names.append(name)
            self._speaker_counts.append(0)
        return code

    def _post(self, table: dict[str, _Postings] | LazyMap[str, _Postings], term: str, slot: int, value: float) -> None:
        postings = table.get(term)
        if postings is None:
            postings = table[term] = _Postings()
            if self._vocab is not None and not self._in_other(table, term):
                bisect.insort(self._vocab, term)  # a new word keeps the sorted vocabulary (no re-sort)
            for inner in _inner_words(term):
                self._inner.setdefault(inner, set()).add(term)
        by_slot = postings.by_slot
        if slot not in by_slot:
            self._postings_total += 1
        by_slot[slot] = max(value, by_slot.get(slot, 0.0))
        postings.cached = None

    def _unpost(self, table: dict[str, _Postings] | LazyMap[str, _Postings], term: str, slot: int) -> None:
        postings = table.get(term)
        if postings is None:
            return
        if postings.by_slot.pop(slot, None) is not None:
            self._postings_total -= 1
        postings.cached = None
        if not postings.by_slot:
            del table[term]
            if self._vocab is not None and not self._in_other(table, term):
                at = bisect.bisect_left(self._vocab, term)
                if at < len(self._vocab) and self._vocab[at] == term:
                    del self._vocab[at]
                else:  # not where it should be: made again when next asked
                    self._vocab = None
            if term not in self._terms and term not in self._keywords:
                for inner in _inner_words(term):
                    holders = self._inner.get(inner)
                    if holders is not None:
                        holders.discard(term)
                        if not holders:
                            del self._inner[inner]

    def _in_other(self, table: dict[str, _Postings] | LazyMap[str, _Postings], term: str) -> bool:
        """Whether ``term`` is in the other of the two tables (text terms, keywords) than ``table``."""
        return term in (self._keywords if table is self._terms else self._terms)

    def _changed(self, session: str | None, slot: int) -> None:
        if session is not None:
            self._dirty_sessions.add(session)
        self._dirty_slots.add(slot)
        self._adjacency = None
        self._followers = None
        self._link_rows = None
        if self._memo:
            self._memo.clear()
            self._memo_size = 0
        if self._derived:
            self._derived.clear()
            self._derived_bytes = 0

    def memo(
        self, key: Hashable, compute: Callable[[], tuple[IntArray, FloatArray] | None]
    ) -> tuple[IntArray, FloatArray] | None:
        """``compute()`` (a sparse per-slot vector of one query term), kept until the next write.

        Scorers keep here what depends only on the index and the term (a term's BM25F part, its
        keyword tier): a term searched again costs a look-up. The arrays are read-only. At most
        :data:`MEMO_ENTRIES` vectors and :data:`MEMO_VALUES` values are kept (oldest dropped first).
        """
        try:
            return self._memo[key]
        except KeyError:
            pass
        value = compute()
        size = 0 if value is None else len(value[0])
        if size > MEMO_VALUES:
            return value
        if value is not None:
            for array in value:
                array.flags.writeable = False
        while self._memo and (len(self._memo) >= MEMO_ENTRIES or self._memo_size + size > MEMO_VALUES):
            oldest = next(iter(self._memo))
            dropped = self._memo.pop(oldest)
            self._memo_size -= 0 if dropped is None else len(dropped[0])
        self._memo[key] = value
        self._memo_size += size
        return value

    def derived(self, key: Hashable, compute: Callable[[], _V]) -> _V:
        """``compute()``, kept until the next write: a small value that depends only on the index and
        ``key`` (a memory's feedback terms, which memories hold a word's neighbours). The search rounds
        of one recall, and the next turns until a memory changes, ask for the same ones. At most
        :data:`DERIVED_ENTRIES` values of :data:`DERIVED_BYTES` (estimated, counted in
        :meth:`approx_bytes`) are kept, oldest dropped first; callers must not change what they get.

        >>> index.derived(("feedback", 3), lambda: ranked_terms(index, 3))  # doctest: +SKIP
        """
        found = self._derived.get(key)
        if found is not None:
            # the kept values are of every kind; a key's value is the one its ``compute`` made
            return found[0]  # type: ignore[return-value]
        value = compute()
        size = _estimated_bytes(value)
        while self._derived and (len(self._derived) >= DERIVED_ENTRIES or self._derived_bytes + size > DERIVED_BYTES):
            self._derived_bytes -= self._derived.pop(next(iter(self._derived)))[1]
        if size <= DERIVED_BYTES:
            self._derived[key] = (value, size)
            self._derived_bytes += size
        return value

    def has_derived(self, key: Hashable) -> bool:
        """Whether :meth:`derived` holds a value for ``key``."""
        return key in self._derived

    def _set_embedding_row(self, slot: int, vector: npt.NDArray[np.float32] | None) -> None:
        """Keep a built embedding matrix in step with one slot; a grown index grows it (rows to spare are
        kept, so a write does not copy, let alone rebuild, every memory's vector)."""
        matrix = self._embeddings
        if matrix is None:
            return
        if self.embedding_dim is None:
            self._embeddings = self._embedding_rows = None
            return
        n = len(self._slots)
        if len(matrix) < n:
            rows = self._embedding_rows
            if rows is None or len(rows) < n or not (matrix is rows or matrix.base is rows):
                rows = np.zeros((n + n // 8 + 64, self.embedding_dim), dtype=np.float32)
                rows[: len(matrix)] = matrix
                self._embedding_rows = rows
            matrix = self._embeddings = rows[:n]  # the rows past the old matrix are zero: never written
        matrix[slot] = 0.0 if vector is None else vector  # searches hold the user's lock: no reader now

    # -- derived structures ------------------------------------------------------------------------

    def vocabulary(self) -> list[str]:
        """Sorted distinct terms (for prefix look-ups); kept in step by writes once made (callers must not
        keep it across a write)."""
        if self._vocab is None:
            self._vocab = sorted(self._terms.keys() | self._keywords.keys())
        return self._vocab

    def expansions(self, term: str, *, min_prefix: int) -> list[str]:
        """Indexed terms that start with ``term`` or that ``term`` starts with, and Chinese compounds
        that contain ``term`` (not ``term`` itself)."""
        if len(term) < min_prefix:
            return []
        vocab = self.vocabulary()
        found: list[str] = []
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
        return postings.count() if postings else 0

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
        idf = {term: self.tfidf_idf(p.count()) for term, p in self._terms.items()}
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
        known = self._snapshot_embedded
        out = []
        for i in range(len(self._slots)):
            if known is not None and i < len(known) and known[i] and self._slots.pending(i):
                continue  # a snapshot slot with an embedding, not loaded yet
            entry = self._slots[i]
            if entry is not None and entry.memory.embedding is None:
                out.append(entry.memory)
        return out

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
            self._embeddings = self._embedding_rows = matrix
        return self._embeddings

    def bm25_idf(self, terms: Iterable[str]) -> dict[str, float]:
        """Lucene BM25 idf of each term over the indexed memories."""
        terms = list(terms)
        dfs = [self.document_frequency(t) for t in terms]
        values = bm25_idf(self.size, dfs)
        return {t: float(v) for t, v, df in zip(terms, values, dfs, strict=True) if df > 0}

    # -- filters and results -----------------------------------------------------------------------

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
