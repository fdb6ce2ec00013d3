"""Text folding (full/half width, traditional/simplified Chinese, accents, case) on both backends.

Stored terms, stored keywords (tags, extracted keywords, synonyms) and queries are folded by the one
function ``data_layer.fold_text`` (``agent_memory.text.fold``); content is stored as written. A change
of the folding rule renames the analyzer, and memories analysed under the old name are re-analysed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import data_layer
from agent_memory.search import HybridMemorySearch, SearchAnalyzer
from agent_memory.text import FOLD_VERSION, Tokenizer, fold
from data_layer import MemoryAnalysis, MemoryDraft

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
#: The analyzer name stored before this folding rule existed (NFKC and lower-case only).
OLD_NAME = "jieba-precise-stem-stop-c5.5-v3|tfidf-5-0.3-v2|none"

MEMORIES = {
    "tokyo-trad": "去年秋天去東京旅行，住在淺草附近",
    "beijing-simp": "下个月去北京出差，住在国贸附近",
    "cafe-accent": "We met at the Café de Flore in Paris",
    "cafe-plain": "Bought a new espresso machine for the cafe corner",
    "abc-full": "型号 ＡＢＣ１２３ 的说明书放在抽屉里",
    "abc-half": "The ABC123 router needs a firmware update",
    "other": "周末在家看了一部科幻电影",
}


async def _store(system: Any, user: str = "u1") -> None:
    # ten days apart: no two memories are conversation neighbours, so only real matches score
    for i, (key, content) in enumerate(MEMORIES.items()):
        await system.layer.memory.add(
            user_id=user, memory_key=key, content=content, created_at=NOW - timedelta(days=10 * (i + 1))
        )


async def _keys(system: Any, query: str, user: str = "u1") -> list[str]:
    hits = await system.search.search(query, user_id=user, now=NOW, min_relevance_score=0.05)
    return [h.memory_key for h in hits]


# -- the rule --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "folded"),
    [
        ("東京", "东京"),
        ("臺灣的咖啡館", "台湾的咖啡馆"),
        ("café", "cafe"),
        ("CAFÉ", "cafe"),
        ("Crème Brûlée", "creme brulee"),
        ("ＡＢＣ１２３", "abc123"),
        ("ＭｙＳＱＬ　配置", "mysql 配置"),
        ("Straße", "strasse"),
        ("ﬁle", "file"),
        ("がぎぐ パ", "がぎぐ パ"),  # kana voicing marks are letters, not accents
        ("한국어", "한국어"),  # Hangul survives the decomposition
        ("简体中文 stays", "简体中文 stays"),
    ],
)
def test_fold_rule(text: str, folded: str) -> None:
    assert fold(text) == folded


def test_one_fold_everywhere() -> None:
    assert fold is data_layer.fold_text  # one function: the SQL side and the search side cannot disagree
    assert FOLD_VERSION in Tokenizer().name and FOLD_VERSION in SearchAnalyzer().name
    assert Tokenizer().tokens("東京的Café") == Tokenizer().tokens("东京的cafe")


def test_fold_is_idempotent() -> None:
    rng = random.Random(7)
    blocks = [
        (0x20, 0x7E),
        (0xA0, 0x24F),
        (0x370, 0x4FF),
        (0x1E00, 0x1FFF),
        (0x3000, 0x30FF),
        (0x4E00, 0x9FFF),
        (0xAC00, 0xD7A3),
        (0xFF00, 0xFFEF),
        (0xF900, 0xFAFF),
        (0x2100, 0x24FF),
    ]
    for _ in range(3000):
        text = "".join(chr(rng.randint(*rng.choice(blocks))) for _ in range(rng.randint(1, 10)))
        once = fold(text)
        assert fold(once) == once, repr(text)


def test_mixed_words_keep_their_parts_on_the_stored_side() -> None:
    tok = Tokenizer()
    assert tok.index_tokens("型号ＡＢＣ１２３") == ["型号", "abc123", "abc", "123"]
    assert tok.tokens("ABC123") == ["abc123"]  # a query looks for the word itself


# -- search on both backends -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("东京", "tokyo-trad"),  # simplified query, traditional memory
        ("北京", "beijing-simp"),
        ("國貿", "beijing-simp"),  # traditional query, simplified memory
        ("cafe", "cafe-accent"),
        ("CAFÉ", "cafe-plain"),
        ("café", "cafe-plain"),
    ],
)
async def test_folded_spellings_find_each_other(system: Any, query: str, expected: str) -> None:
    await _store(system)
    assert expected in await _keys(system, query)
    assert "other" not in await _keys(system, query)


async def test_both_ways_for_tokyo_and_cafe(words_system: Any) -> None:
    system = words_system
    await _store(system)
    assert (await _keys(system, "東京"))[:1] == ["tokyo-trad"]
    assert (await _keys(system, "东京"))[:1] == ["tokyo-trad"]
    assert set(await _keys(system, "cafe")) == {"cafe-accent", "cafe-plain"}
    assert set(await _keys(system, "CAFÉ")) == {"cafe-accent", "cafe-plain"}


@pytest.mark.parametrize("query", ["ＡＢＣ", "abc", "ABC", "ＡＢＣ１２３", "abc123"])
async def test_full_width_prefix_finds_both_widths(words_system: Any, query: str) -> None:
    system = words_system
    await _store(system)
    assert set(await _keys(system, query)) == {"abc-full", "abc-half"}


async def test_content_is_kept_as_written(system: Any) -> None:
    await _store(system)
    record = await system.layer.memory.retrieve_memory(memory_key="tokyo-trad", user_id="u1", touch=False)
    assert record.content == MEMORIES["tokyo-trad"]
    hits = await system.search.search("东京", user_id="u1", now=NOW)
    assert hits[0].record.content == MEMORIES["tokyo-trad"]  # shown as written, found folded


async def test_stored_keywords_are_folded(system: Any) -> None:
    memory = system.layer.memory
    await memory.add(user_id="u1", memory_key="tagged", content="去東京看櫻花", keywords=["東京", "ＣＡＦÉ", "Straße"])
    words = {k.keyword: k.extraction_source for k in await memory.get_keywords(user_id="u1", memory_key="tagged")}
    assert {"东京", "cafe", "strasse"} <= {w for w, s in words.items() if s == "user_tag"}
    assert all(fold(w) == w for w in words)  # extracted keywords are folded too
    assert "東京" not in words
    # keywords looked up in SQL are folded the same way: the traditional spelling removes the tag
    assert await memory.remove_keywords(user_id="u1", memory_key="tagged", keywords=["東京"]) == 1
    await memory.add_keywords(user_id="u1", memory_key="tagged", keywords=["ＫＹＯＴＯ"])
    assert "kyoto" in {k.keyword for k in await memory.get_keywords(user_id="u1", memory_key="tagged")}
    # a tag not in the text is found by its other spelling
    hits = await system.search.search("Kyōto", user_id="u1", now=NOW)
    assert [h.memory_key for h in hits] == ["tagged"]


async def test_synonyms_are_stored_and_looked_up_folded(system: Any) -> None:
    memory = system.layer.memory
    await memory.add_synonym("資料庫", "ＤＡＴＡＢＡＳＥ", similarity_score=0.9)
    pairs = {(s.keyword, s.synonym) for s in await memory.list_synonyms()}
    assert pairs == {("资料库", "database"), ("database", "资料库")}
    found = await memory.synonyms_for(["資料庫", "DataBase"])
    assert [s.synonym for s in found["资料库"]] == ["database"]
    assert [s.synonym for s in found["database"]] == ["资料库"]


class _OldAnalyzer:
    """Writes analyses as the analyzer before this rule did: unfolded terms, under the old name."""

    name = OLD_NAME

    async def analyze(self, drafts: Sequence[MemoryDraft]) -> list[MemoryAnalysis]:
        return [MemoryAnalysis(analyzer=OLD_NAME, tokens=d.content, keywords=()) for d in drafts]


async def test_stale_analyses_are_recomputed_after_the_version_bump(system: Any) -> None:
    memory = system.layer.memory
    current = memory.analyzer
    assert system.search.analyzer.name != OLD_NAME
    memory.set_analyzer(_OldAnalyzer())
    try:
        await memory.add(user_id="u9", memory_key="old-tokyo", content="東京 旅行", created_at=NOW - timedelta(days=3))
        await memory.add(user_id="u9", memory_key="old-cafe", content="CAFÉ", created_at=NOW - timedelta(days=30))
    finally:
        memory.set_analyzer(current)
    before = {r.memory_key: r for r in await memory.index_rows(user_id="u9")}
    assert {r.analyzer for r in before.values()} == {OLD_NAME}
    assert before["old-tokyo"].tokens == "東京 旅行"  # unfolded: an index of these rows could not match 东京

    # a fresh engine (a new process after the upgrade) re-analyses on the user's first search
    engine = HybridMemorySearch(memory, analyzer=system.search.analyzer)
    hits = await engine.search("东京", user_id="u9", now=NOW)
    assert [h.memory_key for h in hits][:1] == ["old-tokyo"]
    assert [h.memory_key for h in await engine.search("cafe", user_id="u9", now=NOW)] == ["old-cafe"]
    after = {r.memory_key: r for r in await memory.index_rows(user_id="u9")}
    assert {r.analyzer for r in after.values()} == {system.search.analyzer.name}
    assert "东京" in after["old-tokyo"].tokens.split() and "cafe" in after["old-cafe"].tokens.split()
    assert all(fold(k) == k for r in after.values() for k, _ in r.keywords)
    assert await memory.pending_analysis(user_id="u9", analyzer=system.search.analyzer.name) == []
