"""Bucket terms of vectors (random-hyperplane LSH) for the store's full-text engine."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from agent_memory.search import VectorTermScheme, memory_vector_terms, query_vector_terms
from agent_memory.search._vector_terms import TERM_PREFIX, is_vector_term
from agent_memory.text import Tokenizer

EMBEDDER = "use-m3-test-d512"
DIM = 512


def _unit(rng: np.random.Generator, n: int = 1) -> np.ndarray:
    m = rng.standard_normal((n, DIM)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _near(v: np.ndarray, rng: np.random.Generator, noise: float) -> np.ndarray:
    w = v + noise * _unit(rng)[0]
    return (w / np.linalg.norm(w)).astype(np.float32)


def test_terms_are_the_same_in_another_process() -> None:
    vector = _unit(np.random.default_rng(3))[0]
    here = {
        "memory": list(memory_vector_terms(vector, embedder=EMBEDDER)),
        "query": query_vector_terms(vector, embedder=EMBEDDER, collection_size=50_000),
    }
    script = (
        "import json, sys, numpy as np\n"
        "from agent_memory.search import memory_vector_terms, query_vector_terms\n"
        "v = np.asarray(json.loads(sys.stdin.read()), dtype=np.float32)\n"
        f"print(json.dumps({{'memory': list(memory_vector_terms(v, embedder={EMBEDDER!r})),"
        f" 'query': query_vector_terms(v, embedder={EMBEDDER!r}, collection_size=50_000)}}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], input=json.dumps(vector.tolist()), capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == here
    assert here["memory"] and here["query"]


def test_the_scheme_depends_on_the_embedder_and_names_its_hyperplanes() -> None:
    vector = _unit(np.random.default_rng(4))[0]
    a = VectorTermScheme(embedder="a", dim=DIM)
    b = VectorTermScheme(embedder="b", dim=DIM)
    assert a.name != b.name
    assert a.name == VectorTermScheme(embedder="a", dim=DIM).name
    assert len(set(a.memory_terms(vector)) & set(b.memory_terms(vector))) < len(a.memory_terms(vector)) // 2
    with pytest.raises(ValueError, match="dimensional"):
        a.memory_terms(np.ones(DIM + 1, dtype=np.float32))


def test_a_near_copy_shares_most_terms_and_the_opposite_none() -> None:
    rng = np.random.default_rng(5)
    shared, opposite = [], []
    for v in _unit(rng, 20):
        terms = set(memory_vector_terms(v, embedder=EMBEDDER))
        copy = set(memory_vector_terms(_near(v, rng, 0.05), embedder=EMBEDDER))
        shared.append(len(terms & copy) / len(terms))
        opposite.append(len(terms & set(memory_vector_terms(-v, embedder=EMBEDDER))))
    assert min(shared) >= 0.5 and np.mean(shared) >= 0.75
    assert opposite == [0] * 20
    unrelated = [
        len(set(memory_vector_terms(a, embedder=EMBEDDER)) & set(memory_vector_terms(b, embedder=EMBEDDER))) / 64
        for a, b in zip(_unit(rng, 20), _unit(rng, 20), strict=True)
    ]
    assert np.mean(unrelated) < np.mean(shared) / 2


@pytest.mark.parametrize("size", [1, 10, 600, 20_000, 100_000, 10_000_000])
def test_the_query_asks_for_its_own_memory_terms(size: int) -> None:
    scheme = VectorTermScheme(embedder=EMBEDDER, dim=DIM)
    vector = _unit(np.random.default_rng(6))[0]
    own = scheme.memory_terms(vector)
    query = scheme.query_terms(vector, collection_size=size)
    levels = scheme.query_levels(size)
    asked = {own[t * len(scheme.levels) + j] for t in range(scheme.tables) for j in levels}
    assert asked <= set(query)
    assert len(query) == len(set(query))
    if size <= 600:
        assert set(own) <= set(query)  # a small collection asks at every level


def test_memories_nearer_the_query_match_more_of_its_terms() -> None:
    rng = np.random.default_rng(7)
    scheme = VectorTermScheme(embedder=EMBEDDER, dim=DIM)
    query = _unit(rng)[0]
    near = np.stack([_near(query, rng, noise) for noise in (0.3, 0.5, 0.7, 0.9)])
    memories = np.concatenate([_unit(rng, 5000), near])
    asked = set(scheme.query_terms(query, collection_size=len(memories)))
    counts = np.array([len(asked.intersection(terms)) for terms in scheme.memory_terms_many(memories)])
    ranked = list(np.argsort(-counts, kind="stable"))
    assert all(ranked.index(5000 + i) < 50 for i in range(4))
    assert counts[5000] >= counts[5003]


def test_term_format() -> None:
    rng = np.random.default_rng(8)
    vectors = _unit(rng, 50)
    terms = [t for v in vectors for t in memory_vector_terms(v, embedder=EMBEDDER)]
    terms += [t for v in vectors for t in query_vector_terms(v, embedder=EMBEDDER, collection_size=100_000)]
    for term in terms:
        assert term.isascii() and term == term.strip() and term.split() == [term]
        assert term == term.lower()  # FTS5's ascii tokenizer folds case
        assert term.startswith(TERM_PREFIX) and 4 <= len(term) <= 12
        assert is_vector_term(term)
    assert max(len(memory_vector_terms(v, embedder=EMBEDDER)) for v in vectors) <= 64
    assert memory_vector_terms(np.zeros(DIM, dtype=np.float32), embedder=EMBEDDER) == ()
    assert query_vector_terms(np.zeros(DIM, dtype=np.float32), embedder=EMBEDDER, collection_size=10) == []
    assert not any(is_vector_term(w) for w in ("数据库", "mysql", "abc123", "u7573", "~", "~3", "~g1", "~3g"))


def test_the_tokenizer_never_emits_a_bucket_term() -> None:
    sample = memory_vector_terms(_unit(np.random.default_rng(9))[0], embedder=EMBEDDER)
    text = f"我喜欢 ~科幻 电影 {' '.join(sample[:8])} MySQL~5.7 ~/.config ~~ ~abc"
    tokenizer = Tokenizer()
    for tokens in (tokenizer.tokens(text), tokenizer.index_tokens(text)):
        assert tokens and not any(t.startswith(TERM_PREFIX) for t in tokens)
        assert not set(tokens) & set(sample)


def test_a_batch_gives_each_row_its_terms() -> None:
    scheme = VectorTermScheme(embedder=EMBEDDER, dim=DIM)
    vectors = _unit(np.random.default_rng(10), 30)
    vectors[4] = 0.0
    assert scheme.memory_terms_many(vectors) == [scheme.memory_terms(v) for v in vectors]
