"""A search index kept in step by writes holds what one built from the same memories holds: the sorted
vocabulary and the embedding matrix, grown and shrunk one memory at a time."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import numpy as np

from agent_memory.search._index import IndexedMemory, UserIndex

T0 = datetime(2026, 3, 1, tzinfo=UTC)
DIM = 8


def _memory(n: int, rng: random.Random) -> IndexedMemory:
    words = (*(f"w{rng.randrange(40)}" for _ in range(5)), f"only{n}")
    keywords = ((f"k{rng.randrange(10)}", 1.0), (f"w{rng.randrange(40)}", 0.5))  # a keyword may be a text term too
    vector = np.asarray([rng.random() for _ in range(DIM)], dtype=np.float32)
    return IndexedMemory(n, f"m{n}", None, "general", T0, words, keywords, vector)


def _built(memories: dict[int, IndexedMemory]) -> UserIndex:
    index = UserIndex(embedding_dim=DIM)
    for memory in memories.values():
        index.put(memory)
    return index


def test_the_vocabulary_and_vectors_kept_by_writes_are_those_of_a_build() -> None:
    rng = random.Random(3)
    live = {n: _memory(n, rng) for n in range(30)}
    index = _built(live)
    index.vocabulary()
    index.embeddings()  # both made: from here on the writes keep them
    for n in range(30, 130):
        if n % 3 == 0:  # a removal, which may take a word out of the vocabulary
            gone = rng.choice(sorted(live))
            index.remove(gone)
            del live[gone]
        live[n] = _memory(n, rng)
        index.put(live[n])
        if n % 4 == 0:  # a memory written again, with other words
            again = rng.choice(sorted(live))
            live[again] = _memory(again, rng)
            index.put(live[again])
        terms = {t for m in live.values() for t in m.terms} | {w for m in live.values() for w, _ in m.keywords}
        assert index.vocabulary() == sorted(terms)
        matrix = index.embeddings()
        assert matrix is not None and matrix.shape == (index.capacity, DIM)
        for memory in live.values():
            slot = index.slot(memory.id)
            assert slot is not None and np.array_equal(matrix[slot], memory.embedding)
        free = [s for s in range(index.capacity) if all(index.slot(m) != s for m in live)]
        assert not matrix[free].any()  # a free slot holds no vector
    assert index.vocabulary() == _built(live).vocabulary()


def _session_memory(n: int, rng: random.Random) -> IndexedMemory:
    base = _memory(n, rng)
    words = (*base.terms, "科幻电影" if n % 4 == 0 else "电影院")
    speaker = ("Ann", "Bo")[n % 2]
    return IndexedMemory(
        n, f"m{n}", None, "general", T0, words, base.keywords, base.embedding, session=f"s{n % 3}", speaker=speaker
    )


def test_memories_put_together_are_indexed_as_those_put_one_by_one() -> None:
    rng = random.Random(5)
    memories = [_session_memory(n, rng) for n in range(40)]
    one = UserIndex(embedding_dim=DIM)
    for memory in memories:
        one.put(memory)
    together = UserIndex(embedding_dim=DIM)
    together.put_many(memories[:25])
    together.put_many([*memories[25:], memories[3]])  # one already indexed: put again in place
    assert together.size == one.size == 40
    for term in {t for m in memories for t in m.terms}:
        a, b = one.postings(term), together.postings(term)
        assert a is not None and b is not None
        assert dict(zip(*(x.tolist() for x in a), strict=True)) == dict(zip(*(x.tolist() for x in b), strict=True))
    for word in {w for m in memories for w, _ in m.keywords}:
        a, b = one.keyword_postings(word), together.keyword_postings(word)
        assert a is not None and b is not None and sorted(a[0].tolist()) == sorted(b[0].tolist())
    assert together.vocabulary() == one.vocabulary()
    assert together.expansions("电影", min_prefix=2) == one.expansions("电影", min_prefix=2)
    assert "科幻电影" in together.expansions("电影", min_prefix=2)
    assert together.speakers() == one.speakers() == {"Ann": 0, "Bo": 1}
    assert (together.adjacency() != one.adjacency()).nnz == 0
    for name in ("active", "ts", "length", "expanded_length", "speaker"):
        assert np.array_equal(together.arrays()[name], one.arrays()[name]), name
    assert np.array_equal(together.embeddings(), one.embeddings())
