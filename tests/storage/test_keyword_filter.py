"""The search's ``keywords`` parameter filters, on both backends; ``search_query_expanded`` is the engine's.

The rule (``SearchQuery``): a memory is returned only when it holds at least one of the keywords; it
holds a keyword when every search term of the folded keyword is one of its terms or a term of one of
its stored keywords; matching is exact; a keyword nobody holds returns nothing, without an error.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agent_memory.search import SearchQuery
from agent_memory.tools import MemoryToolbox, SearchMemoriesInput
from data_layer import InvalidInputError, Scope

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
#: One query that matches every memory below a little, so only the filter decides what comes back.
BROAD = "旅行 配置 拉面 latte 总结 database"

MEMORIES = {
    "db": ("MySQL 数据库配置: port 3306 database", None),
    "tokyo": ("去東京旅行，吃了一碗拉面", None),
    "cafe": ("A Café latte before the trip", None),
    "tagged": ("季度总结写完了", ["Kyoto", "項目管理"]),
    "ml": ("machine learning 课程的笔记", None),
}


async def _store(system: Any) -> None:
    for i, (key, (content, tags)) in enumerate(MEMORIES.items()):
        await system.layer.memory.add(
            user_id="u1", memory_key=key, content=content, keywords=tags, created_at=NOW - timedelta(days=10 * (i + 1))
        )


async def _keys(system: Any, keywords: list[str] | None, query: str = BROAD) -> set[str]:
    hits = await system.search.search(query, user_id="u1", keywords=keywords, now=NOW, limit=20)
    return {h.memory_key for h in hits}


async def test_without_keywords_the_broad_query_finds_all(system: Any) -> None:
    await _store(system)
    assert await _keys(system, None) >= {"db", "tokyo", "cafe", "tagged"}
    assert await _keys(system, []) == await _keys(system, None)  # an empty list filters nothing


@pytest.mark.parametrize(
    ("keywords", "expected"),
    [
        (["东京"], {"tokyo"}),  # simplified keyword, traditional memory
        (["東京"], {"tokyo"}),
        (["数据库"], {"db"}),
        (["MYSQL"], {"db"}),
        (["CAFÉ"], {"cafe"}),  # case and accent folded
        (["cafe"], {"cafe"}),
        (["kyoto"], {"tagged"}),  # held through a stored tag only (not in the text)
        (["项目管理"], {"tagged"}),  # the tag's traditional spelling was folded when stored
        (["东京", "数据库"], {"tokyo", "db"}),  # any one of the keywords is enough (seed 4.1's alternatives)
        (["数据库", "配置", "database"], {"db"}),  # a database, in both languages
        (["Machine Learning"], {"ml"}),  # every term of a keyword must be held
    ],
)
async def test_keywords_include_only_memories_holding_one(system: Any, keywords: list[str], expected: set[str]) -> None:
    await _store(system)
    assert await _keys(system, keywords, query=BROAD + " machine") == expected


@pytest.mark.parametrize(
    "keywords",
    [
        ["不存在的词"],  # no memory holds it
        ["unknownword"],
        ["数据"],  # exact: a prefix of 数据库 does not hold
        ["machine vision"],  # "vision" is missing from the ml memory
        ["的"],  # stop words only: no term to hold
        ["%"],
    ],
)
async def test_keywords_nobody_holds_return_nothing(system: Any, keywords: list[str]) -> None:
    await _store(system)
    assert await _keys(system, keywords) == set()


async def test_filter_is_part_of_the_cache_key(system: Any) -> None:
    await _store(system)
    assert len(await _keys(system, None)) > 1
    assert await _keys(system, ["東京"]) == {"tokyo"}
    assert await _keys(system, ["数据库"]) == {"db"}
    assert len(await _keys(system, None)) > 1


def test_query_keeps_folded_keywords() -> None:
    scope = Scope.of("u1")
    q = SearchQuery.build("配置", scope=scope, keywords=["東京", " MySQL ", "mysql", "CAFÉ", "  "])
    assert q.keywords == ("cafe", "mysql", "东京")
    assert SearchQuery.build("配置", scope=scope).keywords is None
    assert SearchQuery.build("配置", scope=scope, keywords=[]).keywords is None
    assert q.cache_key() != SearchQuery.build("配置", scope=scope).cache_key()
    with pytest.raises(InvalidInputError, match="at most 20 keywords"):
        SearchQuery.build("配置", scope=scope, keywords=[f"w{i}" for i in range(21)])
    with pytest.raises(InvalidInputError, match="keywords must be a list"):
        SearchQuery.build("配置", scope=scope, keywords="数据库")


# -- the tool ------------------------------------------------------------------------------------------


async def test_tool_passes_keywords_through(system: Any) -> None:
    await _store(system)
    box = MemoryToolbox(system.search, scope=Scope.of("u1"), now=NOW)
    out = await box.search_memories(SearchMemoriesInput(query=BROAD, keywords=["東京"], min_relevance_score=0.0))
    assert out.success and [r.memory_key for r in out.results] == ["tokyo"]
    out = await box.search_memories(SearchMemoriesInput(query=BROAD, keywords=["没有这个词"], min_relevance_score=0))
    assert out.success and out.total_found == 0 and out.results == []
    assert out.message is not None and "keywords" in out.message


async def test_search_query_expanded_is_what_the_engine_used(system: Any) -> None:
    memory = system.layer.memory
    await memory.add(
        user_id="u1", memory_key="zh-db", content="资料库的备份每天凌晨做", created_at=NOW - timedelta(days=5)
    )
    await memory.add(user_id="u1", memory_key="other", content="周末去爬山", created_at=NOW - timedelta(days=50))
    await memory.add_synonym("数据库", "資料庫", similarity_score=0.9)

    query = SearchQuery.build("數據庫 備份", scope=Scope.of("u1"), limit=5, now=NOW)
    result = await system.search.run(query)
    assert result.expanded[:2] == ("数据库", "备份")  # folded query terms first
    assert "资料库" in result.expanded  # the synonym from keyword_synonyms, folded
    assert [h.memory_key for h in result][:1] == ["zh-db"]

    box = MemoryToolbox(system.search, scope=Scope.of("u1"), now=NOW)
    out = await box.search_memories(SearchMemoriesInput(query="數據庫 備份", limit=5, min_relevance_score=0.0))
    assert out.search_query_expanded == ", ".join(result.expanded)
    assert [r.memory_key for r in out.results][:1] == ["zh-db"]
