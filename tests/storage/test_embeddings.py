"""Embedders: the offline default, and an OpenAI-compatible endpoint (a local HTTP server) whose vectors
are stored on write and reused by searches."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime

import numpy as np
import pytest

from agent_memory.search import HashingEmbedder, OpenAIEmbedder, SearchAnalyzer
from agent_memory.search._embeddings import from_bytes, to_bytes
from agent_memory.text import KeywordExtractor
from data_layer import AgentFusionDataLayer
from embedding_server import DIM, embedding_server
from scripted import engine as make_engine


@pytest.fixture
def endpoint() -> Iterator[str]:
    with embedding_server() as server:
        _inputs[:] = []
        server.inputs = _inputs
        yield server.url


#: what the endpoint was asked, in order
_inputs: list[str] = []
NOW = datetime(2026, 3, 1, tzinfo=UTC)


async def test_hashing_embedder_is_deterministic_and_normalised() -> None:
    embedder = HashingEmbedder(dim=64)
    a = await embedder.embed(["喜欢科幻电影", "likes sci-fi movies", ""])
    b = await HashingEmbedder(dim=64).embed(["喜欢科幻电影"])
    assert a.shape == (3, 64)
    assert np.allclose(a[0], b[0])
    assert np.linalg.norm(a[0]) == pytest.approx(1.0, abs=1e-5)
    assert not a[2].any()
    with pytest.raises(ValueError, match="dim"):
        HashingEmbedder(dim=4)


def test_vectors_round_trip_as_bytes() -> None:
    vector = np.arange(DIM, dtype=np.float32)
    assert np.array_equal(from_bytes(to_bytes(vector), DIM), vector)
    assert from_bytes(to_bytes(vector), DIM + 1) is None


async def test_openai_endpoint_vectors_are_stored_and_reused(layer: AgentFusionDataLayer, endpoint: str) -> None:
    embedder = OpenAIEmbedder(model="toy", dim=DIM, base_url=endpoint)
    engine = make_engine(layer.memory, embedder=embedder)
    await layer.memory.add(user_id="u", memory_key="a", content="aaaa aaaa", created_at=NOW)
    await layer.memory.add(user_id="u", memory_key="b", content="bbbb bbbb", created_at=NOW)
    assert _inputs == ["aaaa aaaa", "bbbb bbbb"]  # embedded once, on write
    hits = await engine.search("aaa", user_id="u", mode="semantic", now=NOW)
    assert [h.memory_key for h in hits] == ["a"] and hits[0].semantic > 0.9  # "b" shares no feature
    fresh = make_engine(layer.memory, embedder=embedder)  # a new process
    await fresh.search("bbb", user_id="u", mode="semantic", now=NOW)
    assert _inputs == ["aaaa aaaa", "bbbb bbbb", "aaa", "bbb"]  # only the queries were embedded


async def test_wrong_dimension_is_a_clear_error(endpoint: str) -> None:
    embedder = OpenAIEmbedder(model="toy", dim=DIM + 1, base_url=endpoint)
    with pytest.raises(ValueError, match="expected 9"):
        await embedder.embed(["x"])


def test_a_change_of_embedder_does_not_reanalyse_the_words() -> None:
    # the vector is stored with its embedder's name; the analysis name is the words' alone, so a new
    # embedder re-embeds memories (in the background) without re-tokenising them
    long = SearchAnalyzer(
        embedder=OpenAIEmbedder(
            model="a-very-long-embedding-model-name-" * 3, dim=DIM, base_url="http://127.0.0.1:9/v1"
        )
    )
    assert (
        len(long.name) <= 64 and long.name == SearchAnalyzer().name == SearchAnalyzer(embedder=HashingEmbedder()).name
    )
    assert SearchAnalyzer(extractor=KeywordExtractor(max_keywords=2)).name != long.name


async def test_the_first_hashing_embedding_imports_scikit_learn_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """scikit-learn is imported by the first embedding (0.6 s in a fresh process): in a worker thread,
    so the evidence tools' first ``semantic_search`` does not stall every other chat on the loop."""
    embedder = HashingEmbedder(dim=64)
    built_on: list[bool] = []
    build = HashingEmbedder._hasher

    def recording(self: HashingEmbedder) -> object:
        built_on.append(threading.current_thread() is threading.main_thread())
        return build(self)

    monkeypatch.setattr(HashingEmbedder, "_hasher", recording)
    first = await embedder.embed(["喜欢科幻电影"])
    again = await embedder.embed(["喜欢科幻电影"])
    assert built_on == [False]  # built once, not on the loop's thread; the second embedding reuses it
    assert first.shape == (1, 64) and np.allclose(first, again)
