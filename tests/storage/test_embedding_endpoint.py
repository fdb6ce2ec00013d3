"""``MEMORY_SEARCH_EMBEDDER=openai``: an OpenAI-compatible ``/v1/embeddings`` endpoint on loopback, down,
past its time-out, and replaced by another model."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agent_memory.settings import SettingsError, load_settings
from agent_memory.system import MemorySystem
from data_layer import NewMemory
from embedding_server import DIM, EmbeddingServer, embedding_server


@pytest.fixture
def endpoint() -> Iterator[EmbeddingServer]:
    with embedding_server() as server:
        yield server


def _settings(
    db_url: str, server: EmbeddingServer, *, model: str = "toy-a", timeout_s: float = 10.0, key: str = "sk-test"
) -> object:
    return load_settings(
        memory_database_url=db_url,
        memory_search_embedder="openai",
        memory_search_embedding_url=server.url,
        memory_search_embedding_model=model,
        memory_search_embedding_dim=DIM,
        memory_search_embedding_timeout_s=timeout_s,
        memory_search_embedding_api_key=key,
    )


async def test_an_endpoint_down_at_the_write_leaves_the_words_and_the_vectors_come_later(
    db_url: str, endpoint: EmbeddingServer, caplog: pytest.LogCaptureFixture
) -> None:
    async with MemorySystem.from_settings(_settings(db_url, endpoint)) as system:
        memory, search = system.layer.memory, system.search
        search.embedding.retry_s = 0.0
        endpoint.failing = True
        with caplog.at_level("WARNING"):
            await memory.add(user_id="u1", memory_key="tea", content="oolong tea every afternoon")
            await memory.add(user_id="u1", memory_key="run", content="running by the river")
        assert "stored without vectors" in caplog.text
        name = search.embedder.name
        assert len(await memory.pending_embedding(user_id="u1", embedder=name)) == 2
        hits = await search.search("oolong", user_id="u1")  # the words still find it; the query's vector fails
        assert [h.memory_key for h in hits] == ["tea"]
        assert await search.embedding.wait("u1") == 0
        endpoint.failing = False
        await search.embedding.wait("u1")
        assert await memory.pending_embedding(user_id="u1", embedder=name) == []
        found = await search.search("oolong tea every afternoon", user_id="u1", mode="semantic")
        assert found[0].memory_key == "tea" and found[0].semantic > 0.9
        assert endpoint.authorization == "Bearer sk-test"  # MEMORY_SEARCH_EMBEDDING_API_KEY
        assert search.embedder.name == f"openai:toy-a:d{DIM}"  # the model and dimension named


async def test_a_request_past_its_time_out_fails_the_vector_not_the_write(
    db_url: str, endpoint: EmbeddingServer, caplog: pytest.LogCaptureFixture
) -> None:
    settings = _settings(db_url, endpoint, timeout_s=2.0)
    async with MemorySystem.from_settings(settings) as system:
        endpoint.held.set()  # the endpoint holds every request until released
        with caplog.at_level("WARNING"):
            await system.layer.memory.add(user_id="u1", memory_key="tea", content="oolong tea")
        assert "stored without vectors" in caplog.text
        endpoint.held.clear()
        endpoint.release.set()
        assert await system.layer.memory.count(user_id="u1") == 1
        await system.search.embedding.wait("u1")
        name = system.search.embedder.name
        assert await system.layer.memory.pending_embedding(user_id="u1", embedder=name) == []


async def test_another_model_never_compares_the_old_vectors_and_re_embeds_them(
    db_url: str, endpoint: EmbeddingServer, caplog: pytest.LogCaptureFixture
) -> None:
    async with MemorySystem.from_settings(_settings(db_url, endpoint, model="toy-a")) as first:
        await first.layer.memory.add(user_id="u1", memory_key="tea", content="oolong tea")
        old = first.search.embedder.name
    renamed = _settings(db_url, endpoint, model="toy-b")
    async with MemorySystem.from_settings(renamed) as second:
        memory, search = second.layer.memory, second.search
        assert search.embedder.name != old
        assert [r.memory_key for r in await memory.pending_embedding(user_id="u1", embedder=search.embedder.name)] == [
            "tea"
        ]
        endpoint.refused = {"oolong tea"}  # the memory cannot be re-embedded yet; the query can
        with caplog.at_level("WARNING"):
            hits = await search.search("oolong", user_id="u1")
        # said once: two processes with different embedders would re-embed each other's memories
        assert f"embedded with {old} are re-embedded with {search.embedder.name}" in caplog.text
        # the query has the new model's vector; the memory only the old model's, which is not compared
        assert [h.memory_key for h in hits] == ["tea"] and hits[0].semantic == 0.0
        assert await search.embedding.wait("u1") == 0
        endpoint.refused = set()
        await search.settle(user_id="u1")
        found = await search.search("oolong tea", user_id="u1", mode="semantic")
        assert found[0].memory_key == "tea" and found[0].semantic > 0.9
        assert await memory.pending_embedding(user_id="u1", embedder=search.embedder.name) == []


def test_the_endpoint_settings_say_what_is_missing() -> None:
    with pytest.raises((SettingsError, ValueError), match=r"MEMORY_SEARCH_EMBEDDING_URL.*MEMORY_SEARCH_EMBEDDING_DIM"):
        load_settings(memory_search_embedder="openai", memory_search_embedding_model="m")


async def test_a_first_search_asks_for_no_embedding_pass_when_every_memory_has_its_vector(
    db_url: str, endpoint: EmbeddingServer
) -> None:
    async with MemorySystem.from_settings(_settings(db_url, endpoint, model="toy-a")) as first:
        await first.layer.memory.add(user_id="u1", memory_key="tea", content="oolong tea")
        await first.layer.memory.add(user_id="u2", memory_key="coffee", content="black coffee")
        assert await first.layer.memory.pending_embedding(user_id="u1", embedder=first.search.embedder.name) == []
    async with MemorySystem.from_settings(_settings(db_url, endpoint, model="toy-a")) as second:
        memory, search = second.layer.memory, second.search
        asked: list[str] = []
        real = memory.pending_embedding

        async def counted(**kwargs: Any) -> Any:
            asked.append(str(kwargs["user_id"]))
            return await real(**kwargs)

        setattr(memory, "pending_embedding", counted)  # noqa: B010 (a spy on the store's method)
        assert [h.memory_key for h in await search.search("oolong", user_id="u1")] == ["tea"]
        assert asked == []  # the rows read said that every memory has its vector
        # a bulk write leaves its vectors to a background pass: the next search asks for one
        await memory.add_many(user_id="u2", memories=[NewMemory(memory_key="more", content="black coffee again")])
        assert {h.memory_key for h in await search.search("coffee", user_id="u2")} == {"coffee", "more"}
        await search.embedding.wait("u2")
        assert "u2" in asked
        assert await real(user_id="u2", embedder=search.embedder.name) == []
