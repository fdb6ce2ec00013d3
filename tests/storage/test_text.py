"""Tokenisation, time expressions and keyword extraction (offline and with a scripted model)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from agent_memory.text import (
    KeywordExtractor,
    Tokenizer,
    dictionary_cuts,
    fold,
    named_time_range,
    parse_time_expressions,
    query_time_range,
)
from data_layer import NewMemory
from scripted import replay

NOW = datetime(2024, 5, 15, 10, 30, tzinfo=UTC)  # a Wednesday


def test_fold_full_width() -> None:
    assert fold("ＭｙＳＱＬ　１２３，") == "mysql 123,"


def test_tokens_chinese_english_and_stop_words() -> None:
    tokens = Tokenizer().tokens("我之前的 MySQL 数据库配置 was painted")
    assert "mysql" in tokens and "数据库" in tokens and "配置" in tokens
    assert "paint" in tokens  # stemmed
    assert "我" not in tokens and "的" not in tokens and "was" not in tokens


def test_rare_single_characters_are_kept() -> None:
    assert "猫" in Tokenizer().tokens("我养了一只猫")
    assert "了" not in Tokenizer().tokens("我养了一只猫")


def test_search_mode_adds_inner_words() -> None:
    assert "数据" in Tokenizer(search_mode=True).tokens("数据库")
    assert Tokenizer(search_mode=True).name != Tokenizer().name


@pytest.mark.parametrize(
    ("text", "parts", "not_parts"),
    [
        ("今天天气真好", ["今天天气", "天气"], ["天天"]),  # 天天 runs across 今天 | 天气
        ("研究生命起源", ["研究", "生命", "起源"], ["研究生"]),
        ("周末天气预报", ["天气预报", "天气", "预报"], []),
        ("科幻电影", ["科幻电影", "电影"], []),
    ],
)
def test_a_rare_compound_gives_the_words_it_is_made_of_not_one_across_them(
    text: str, parts: list[str], not_parts: list[str]
) -> None:
    tokens = Tokenizer().tokens(text)
    assert all(p in tokens for p in parts) and not set(not_parts) & set(tokens)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("我同事有多高来着？", ["同事", "身高"]),  # jieba alone: 多 / 高来 / 着 (多高 asks for a 身高)
        ("我上司多大来着呢", ["上司"]),  # 多大来 / 着
        ("那家咖啡馆在哪来着", ["咖啡馆"]),  # 哪来 / 着
        ("我的体重来着", ["体重"]),
        ("他来着急了", ["着急"]),  # inside a run 来着 is no particle: 来 / 着急
    ],
)
def test_a_sentence_final_laizhe_is_not_glued_to_the_word_before_it(text: str, tokens: list[str]) -> None:
    """ "叫啥来着" is how people ask for something they were told: a word no memory holds (高来, 哪来) would
    weigh in the query as an unmatched word."""
    assert Tokenizer().tokens(text) == tokens


def test_dictionary_cuts_split_a_compound_into_its_fewest_words() -> None:
    assert dictionary_cuts("今天天气") == (2,)
    assert dictionary_cuts("今天天气" * 3) == (4, 8)  # the fewest words: 今天天气 itself is one
    assert dictionary_cuts("数据库") == ()  # 数据 + 库: no two-character words make it up
    assert dictionary_cuts("") == () and dictionary_cuts("abc") == ()
    with pytest.raises(TypeError, match="word must be a str, got int"):
        dictionary_cuts(42)


async def test_a_memory_about_the_weather_is_not_found_by_a_word_across_its_compound(words_system: Any) -> None:
    """Stored and searched terms alike: "今天天气不错" does not hold 天天 (every day), and still holds 天气."""
    system = words_system
    await system.layer.memory.add_many(user_id="u1", memories=[NewMemory("w", "今天天气不错，适合去公园跑步")])
    assert await system.search.search("天天加班好累", user_id="u1") == []
    assert [h.memory_key for h in await system.search.search("天气", user_id="u1")] == ["w"]


def test_query_and_memory_meet_across_widths() -> None:
    tok = Tokenizer()
    assert tok.tokens("Ｐｙｔｈｏｎ 编程") == tok.tokens("python 编程")


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("昨天吃了什么", datetime(2024, 5, 14, tzinfo=UTC), datetime(2024, 5, 15, tzinfo=UTC)),
        ("去年的旅行", datetime(2023, 1, 1, tzinfo=UTC), datetime(2024, 1, 1, tzinfo=UTC)),
        ("what did I do last week", datetime(2024, 5, 6, tzinfo=UTC), datetime(2024, 5, 13, tzinfo=UTC)),
        ("the trip in May 2023", datetime(2023, 5, 1, tzinfo=UTC), datetime(2023, 6, 1, tzinfo=UTC)),
        ("yesterday's lunch", datetime(2024, 5, 14, tzinfo=UTC), datetime(2024, 5, 15, tzinfo=UTC)),
    ],
)
def test_time_expressions(text: str, start: datetime, end: datetime) -> None:
    found = query_time_range(text, now=NOW)
    assert found is not None
    assert (found.start, found.end) == (start, end)


def test_this_week_runs_from_monday_to_now() -> None:
    found = query_time_range("这周的会议", now=NOW)
    assert found is not None
    assert found.start == datetime(2024, 5, 13, tzinfo=UTC)
    assert NOW < found.end <= datetime(2024, 5, 20, tzinfo=UTC)  # memories lie in the past


@pytest.mark.parametrize(
    ("text", "expression", "start"),
    [
        ("这周一直在加班", "这周", datetime(2024, 5, 13, tzinfo=UTC)),  # 一直: all week, not Monday
        ("上周一起去爬山", "上周", datetime(2024, 5, 6, tzinfo=UTC)),  # 一起: together
        ("上周一开会", "上周一", datetime(2024, 5, 6, tzinfo=UTC)),
        ("周一下午开会", "周一", datetime(2024, 5, 13, tzinfo=UTC)),
        ("从周一直到周三都在出差", "周一", datetime(2024, 5, 13, tzinfo=UTC)),  # 直到: Monday until
        ("这周天气好", "这周", datetime(2024, 5, 13, tzinfo=UTC)),  # 天气: the weather, not Sunday
        ("周一直接去公司", "周一", datetime(2024, 5, 13, tzinfo=UTC)),  # 直接: straight, on Monday
        ("上周天去爬山", "上周天", datetime(2024, 5, 12, tzinfo=UTC)),  # Sunday of last week
    ],
)
def test_a_weekday_is_not_the_start_of_a_word(text: str, expression: str, start: datetime) -> None:
    found = query_time_range(text, now=NOW)
    assert found is not None and (found.expression, found.start) == (expression, start)


def test_vague_time_expressions_end_now() -> None:
    for text in ("最近在忙什么", "上次说的那个项目"):
        found = query_time_range(text, now=NOW)
        assert found is not None and not found.precise
        assert found.start < NOW <= found.end


def test_no_time_expression() -> None:
    assert parse_time_expressions("MySQL 数据库配置", now=NOW) == []
    with pytest.raises(ValueError, match="timezone-aware"):
        parse_time_expressions("昨天", now=datetime(2024, 5, 15))


def test_offline_keywords_by_type_and_weight() -> None:
    ex = KeywordExtractor(max_keywords=3, min_weight=0.3)
    kws = ex.extract(content="运行 deploy.sh --force 部署 nginx 服务到生产环境", memory_type="command_output")
    words = [k.keyword for k in kws]
    assert "deploy.sh" in words and "--force" in words and "命令" in words
    assert all(0.0 <= k.weight <= 1.0 for k in kws)
    pref = ex.extract(content="喜欢喝手冲咖啡", memory_type="user_preference")
    assert "偏好" in [k.keyword for k in pref] and "咖啡" in [k.keyword for k in pref]


def test_query_keywords_are_typed() -> None:
    found = KeywordExtractor().query_keywords("上周 部署 nginx 的配置")
    kinds = {k.keyword: k.type for k in found}
    assert kinds.get("nginx") == "entity"
    assert "time" in kinds.values()


async def test_llm_keywords_follow_the_prompt() -> None:
    answer = json.dumps({"keywords": [{"word": "MySQL", "weight": 0.9}, {"word": "端口", "weight": 0.6}]})
    client = replay([answer])
    ex = KeywordExtractor(model_client=client)
    assert await ex.extract_keywords("MySQL 端口 3306", "数据库配置", "command_output") == [
        ("mysql", 0.9),
        ("端口", 0.6),
    ]
    prompt = client.create_calls[0]["messages"][0].content
    assert "记忆摘要: 数据库配置" in prompt and "最多 5 个关键词" in prompt


async def test_malformed_llm_answer_falls_back_to_offline() -> None:
    ex = KeywordExtractor(model_client=replay(["not json at all"]))
    pairs = await ex.extract_keywords("MySQL 端口 3306 配置", "数据库配置", "general")
    assert pairs and "mysql" in [w for w, _ in pairs]


def test_extractor_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="max_keywords"):
        KeywordExtractor(max_keywords=0)
    with pytest.raises(ValueError, match="min_weight"):
        KeywordExtractor(min_weight=2)


async def test_stored_keywords_say_where_they_came_from() -> None:
    answer = json.dumps({"keywords": [{"word": "MySQL", "weight": 0.9}]})
    ex = KeywordExtractor(model_client=replay([answer, "broken"]))
    by_model = await ex.extract_inputs(content="MySQL 端口 3306", summary="数据库配置")
    assert [(k.keyword, k.source) for k in by_model] == [("mysql", "llm")]
    fallback = await ex.extract_inputs(content="MySQL 端口 3306", summary="数据库配置")
    assert fallback and {k.source for k in fallback} == {"system"}


def test_a_named_time_is_a_precise_one() -> None:
    """Vague words filter with use_time_expressions, but name no span to measure a distance to."""
    assert named_time_range("最近睡得不好", now=NOW) is None and query_time_range("最近睡得不好", now=NOW) is not None
    assert named_time_range("没有时间词", now=NOW) is None
    week = named_time_range("上周说的那家餐厅", now=NOW)
    assert week is not None and (week.start.isoformat(), week.end.isoformat()) == (
        "2024-05-06T00:00:00+00:00",
        "2024-05-13T00:00:00+00:00",
    )


@pytest.mark.parametrize(
    ("text", "calendar"),
    [
        ("on 7 July, 2023", True),
        ("in May", True),
        ("May 2023", True),
        ("2023-07-07", True),
        ("in 2023", True),
        ("2024年3月", True),
        ("3月4日", True),
        ("2023年", True),
        ("五月份", True),
        ("上周", False),
        ("yesterday", False),
        ("三天前", False),
        ("last month", False),
        ("today", False),
        ("during 2023", True),
        ("since May", False),
        ("since 2023", False),
    ],
)
def test_a_date_written_out_is_told_from_a_span_counted_from_now(text: str, calendar: bool) -> None:
    """The search weighs relevance by a date the question writes out, not by "上周" or "today" (words as
    often said in passing): the range says which it is."""
    found = named_time_range(text, now=NOW)
    assert found is not None and found.calendar is calendar


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("Where was Tim in the week before 16 November 2023?", "2023-11-09", "2023-11-16"),
        ("the day after May 3, 2023", "2023-05-04", "2023-05-05"),
        ("on the Sunday before October 25, 2022", "2022-10-23", "2022-10-24"),  # a Tuesday
        ("the Monday after 6 November 2023", "2023-11-13", "2023-11-14"),  # a Monday: the next one
        ("last weekend before April 10, 2023", "2023-04-08", "2023-04-10"),  # a Monday
        ("the weekend before 12 November 2023", "2023-11-04", "2023-11-06"),  # a Sunday: the weekend before it
        ("the weekend after 11 November 2023", "2023-11-18", "2023-11-20"),  # a Saturday
        ("the month before 1 March 2024", "2024-01-31", "2024-03-01"),  # a month: the 30 days before
        ("2023年11月16日前一周在哪", "2023-11-09", "2023-11-16"),
        ("3月4日的前一天", "2024-03-03", "2024-03-04"),
        ("11月16日后两天", "2023-11-17", "2023-11-19"),  # no year: the latest 16 November
        ("3月4号前三天", "2024-03-01", "2024-03-04"),
    ],
)
def test_a_span_next_to_a_written_date_is_counted_from_that_date(text: str, start: str, end: str) -> None:
    """ "the week before 16 November 2023" / "11月16日前一周" is the week before that date, not before now."""
    found = named_time_range(text, now=NOW)
    assert found is not None and found.calendar
    assert (found.start.date().isoformat(), found.end.date().isoformat()) == (start, end)
    assert query_time_range("the week before", now=NOW) is not None  # alone: still the week before now


def test_a_written_date_that_cannot_be_read_is_not_taken_for_a_span_before_now() -> None:
    """ "the week before 31 February 2023" must not become the week before now (it named another time)."""
    for text in (
        "the week before 31 February 2023",
        "the week before November 16",
        "the week before the 3rd",
        "2月30日前一天",
        "13月4日前一天",
    ):
        found = named_time_range(text, now=NOW)
        assert found is None or found.start.year != NOW.year, (text, found)


def test_a_month_after_by_or_of_is_no_time_the_question_is_about() -> None:
    """ "by June", "a friend of May", "a group of 2000 runners" name a person, a deadline or a number as
    often as a time: no named time; "since May" runs from May to now."""
    for text in ("the cake baked by June", "a friend of May", "a group of 2000 runners"):
        assert named_time_range(text, now=NOW) is None, text
        assert query_time_range(text, now=NOW) is not None  # still a guess for use_time_expressions
    since = named_time_range("what changed since March", now=NOW)
    assert since is not None and since.start == datetime(2024, 3, 1, tzinfo=UTC) and since.end > NOW
    assert named_time_range("since 2030", now=NOW) is None  # a start still to come names nothing


def test_chinese_characters_are_told_apart_by_code_point_range() -> None:
    """has_cjk / is_cjk: the four ranges of unified ideographs (basic, extension A, compatibility,
    extension B), their edges included, and nothing just outside them or of another script."""
    from agent_memory.text import has_cjk, is_cjk

    inside = ["\u3400", "\u4dbf", "\u4e00", "\u9fff", "\uf900", "\ufaff", "\U00020000", "\U0002a6df", "東", "猫"]
    outside = ["\u33ff", "\u4dc0", "\u4dff", "\ua000", "\uf8ff", "\ufb00", "\U0001ffff", "\U0002a6e0"]
    outside += ["a", "é", "。", "、", "ア", "한", "Ａ", "１", " ", "\n"]
    assert [c for c in inside if not is_cjk(c)] == []
    assert [c for c in outside if is_cjk(c)] == []
    assert has_cjk("mysql 配置") and has_cjk("abc\U00020000") and not has_cjk("".join(outside))
    assert not has_cjk("")
    with pytest.raises(TypeError, match="one character"):
        is_cjk("东京")
