"""What a query word weighs: general informativeness, unheld words, colloquial question words, sentence
parts, and the text score's ceiling over every query term (pure functions on tiny in-memory indexes)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import jieba
import numpy as np
import pytest

from agent_memory.search import IndexedMemory, UserIndex
from agent_memory.search import _components as c
from agent_memory.search._parts import MAX_PARTS, sentence_parts
from agent_memory.text import Tokenizer, content_word, ensure_jieba, informativeness, unheld_weight

TOK = Tokenizer()
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def build(texts: dict[str, str]) -> UserIndex:
    index = UserIndex()
    for i, (key, text) in enumerate(texts.items()):
        index.put(IndexedMemory(key, key, None, "general", T0 + timedelta(days=i), tuple(TOK.tokens(text)), ()))
    return index


def at(index: UserIndex, scores: np.ndarray) -> dict[str, float]:
    return {index.memory(int(s)).memory_key: float(scores[s]) for s in np.flatnonzero(index.mask())}


# -- informativeness ------------------------------------------------------------------------------------


def test_a_word_used_more_often_in_general_chinese_says_less() -> None:
    ensure_jieba()
    counts = {w: jieba.dt.FREQ[w] for w in ("工作", "今天", "电影", "期待", "魔术")}
    ordered = sorted(counts, key=counts.get, reverse=True)  # most used first
    weights = [informativeness(w) for w in ordered]
    assert weights == sorted(weights)  # the more a word is used, the less it weighs
    assert all(0.0 < w < 1.0 for w in weights)


def test_rare_unknown_and_non_chinese_words_weigh_fully() -> None:
    ensure_jieba()
    rare = next(w for w, n in jieba.dt.FREQ.items() if 0 < n <= 20 and len(w) == 2)
    assert informativeness(rare) == 1.0
    assert informativeness("团子酱酱") == 1.0  # not in the dictionary at all
    assert informativeness("postgr") == informativeness("visa") == informativeness("2026") == 1.0


def test_informativeness_and_unheld_weight_refuse_what_is_not_a_term() -> None:
    for function in (informativeness, unheld_weight):
        with pytest.raises(TypeError, match="str"):
            function(3)


def test_an_unheld_word_naming_a_thing_counts_more_than_one_saying_what_is_done_or_when() -> None:
    things = ("胃口", "主子", "小区", "海边", "焦虑", "越来越近")  # nouns, a place, an adjective, a "name"
    predicates = ("准备", "今天", "一直", "越来越", "起来")  # a verb, a time word, adverbs, a directional verb
    assert all(content_word(w) for w in things) and {unheld_weight(w) for w in things} == {1.0}
    assert not any(content_word(w) for w in predicates) and max(unheld_weight(w) for w in predicates) < 1.0
    assert unheld_weight("visa") == unheld_weight("宏筑科技") == 1.0  # not Chinese / not in the dictionary
    with pytest.raises(TypeError, match="str"):
        content_word(None)


# -- colloquial question words ---------------------------------------------------------------------------


@pytest.mark.parametrize("message", ["我的手机是啥型号来着？", "咋办呢", "你干嘛呢", "他今年多大了", "这事怎么办"])
def test_colloquial_question_words_are_not_search_terms(message: str) -> None:
    assert not {"啥", "咋办", "干嘛", "多大", "怎么办"} & set(TOK.tokens(message))
    assert {"手机", "型号"} <= set(TOK.tokens("我的手机是啥型号来着？"))  # the words that say something stay


@pytest.mark.parametrize(
    ("message", "asked"),
    [("我同事有多高来着？", "身高"), ("我表姐现在多大年纪啦？", "岁"), ("我妈几岁了", "岁"), ("他今年多少岁", "岁")],
)
def test_a_question_word_names_what_it_asks_for(message: str, asked: str) -> None:
    """多高 asks for a 身高, 几岁 for a 岁: the words a memory that answers says ("我同事身高162cm",
    "我妈今年58岁"), while 多 / 高 / 几岁 themselves are no words such a memory holds."""
    assert asked in TOK.tokens(message)
    assert asked in TOK.tokens({"身高": "我同事身高162cm", "岁": "我妈今年58岁"}[asked])


@pytest.mark.parametrize("message", ["今天真是多高兴啊", "他今年多大了", "多少人来了"])
def test_words_that_only_look_like_an_asked_attribute_add_nothing(message: str) -> None:
    assert not {"身高", "体重", "岁"} & set(TOK.tokens(message))


def test_a_question_word_is_not_split_into_the_words_inside_it() -> None:
    """啥时候 is a question word; the 时候 inside it would match every memory that says 时候."""
    assert TOK.tokens("啥时候") == []
    assert "时候" in TOK.tokens("那时候我还小")  # the word itself still counts elsewhere


# -- sentence parts ---------------------------------------------------------------------------------------


def test_each_sentence_of_a_message_is_a_part() -> None:
    parts = sentence_parts("今天天气真好，想去海边走走。昨天的电视剧也好看！对了，我上司有多高来着？", TOK.tokens)
    assert len(parts) == 3
    assert "海边" in parts[0] and "电视剧" in parts[1] and "上司" in parts[2]
    assert "海边" not in parts[2]


def test_one_sentence_or_clauses_of_one_question_are_not_split() -> None:
    assert sentence_parts("那个地点是青岛的活动，持续时间是什么？", TOK.tokens) == []
    assert sentence_parts("推荐一部电影", TOK.tokens) == []
    assert sentence_parts("", TOK.tokens) == []


def test_sentences_without_a_query_term_are_no_part() -> None:
    assert sentence_parts("好的。嗯嗯。我上司有多高？", TOK.tokens) == []  # only one sentence has a term
    parts = sentence_parts("我养了猫。猫叫团子", TOK.tokens, terms={"团子"})
    assert parts == []  # the first sentence has no term the query kept


def test_an_ellipsis_a_wave_dash_and_half_width_marks_before_chinese_end_a_sentence() -> None:
    for message in ("今天天气真好……对了，我上司有多高？", "天气真好～我上司有多高", "天气真好!我上司多高?"):
        parts = sentence_parts(message, TOK.tokens)
        assert len(parts) == 2 and "上司" in parts[1] and "天气" in parts[0], message


def test_a_long_message_is_cut_into_at_most_max_parts_in_order() -> None:
    message = "。".join(
        f"第{i}个话题关于{word}" for i, word in enumerate(["猫", "狗", "茶", "书", "车", "山", "海"] * 6)
    )
    parts = sentence_parts(message, TOK.tokens)
    assert 1 < len(parts) <= MAX_PARTS  # 42 sentences: 7 parts of 6
    assert "猫" in parts[0] and "海" in parts[-1]  # the order of the message is kept
    assert len(sentence_parts("。".join(["猫"] * 2000), TOK.tokens)) <= 2  # equal parts are kept once


def test_common_terms_go_with_every_sentence() -> None:
    parts = sentence_parts("端口改成多少了？备份呢？", TOK.tokens, common={"数据库": 1})
    assert len(parts) == 2 and all(p["数据库"] == 1 for p in parts)
    assert sentence_parts("端口改成多少了？", TOK.tokens, common={"数据库": 1}) == []  # one sentence


def test_english_sentences_end_at_a_mark_before_a_space_not_inside_a_number() -> None:
    parts = sentence_parts("Caroline moved to Berlin last spring. The rent was 3.5 times higher!", TOK.tokens)
    assert len(parts) == 2
    assert "3" not in parts[0] and "3" in parts[1] and "5" in parts[1]


# -- the text score's ceiling over every query term ----------------------------------------------------------


def test_text_weights_give_an_unheld_term_the_mean_idf_of_the_held_ones() -> None:
    index = build({"a": "mysql port", "b": "redis cache", "c": "coffee", "d": "mysql backup"})
    query = c.query_terms(TOK.tokens("mysql port kafka"))
    held = index.bm25_idf(query)  # only the terms some memory holds
    assert set(held) == {"mysql", "port"}
    weights = c.text_weights(index, query)
    assert weights["mysql"] == pytest.approx(held["mysql"]) and weights["port"] == pytest.approx(held["port"])
    assert weights["kafka"] == pytest.approx((held["mysql"] + held["port"]) / 2)
    halved = c.text_weights(index, query, unheld=lambda t: 0.5)
    assert halved["kafka"] == pytest.approx(weights["kafka"] / 2) and halved["mysql"] == weights["mysql"]
    scaled = c.text_weights(index, query, informativeness=lambda t: 0.5)
    assert all(scaled[t] == pytest.approx(weights[t] / 2) for t in query)


def test_the_bm25_ceiling_counts_a_term_no_memory_holds() -> None:
    index = build({"a": "mysql port", "b": "redis cache"})
    held = c.query_terms(TOK.tokens("mysql port"))
    more = c.query_terms(TOK.tokens("mysql port kafka"))
    assert c.bm25_ceiling(index, more) > c.bm25_ceiling(index, held)
    ratio_held = at(index, c.bm25f(index, held) / c.bm25_ceiling(index, held))["a"]
    ratio_more = at(index, c.bm25f(index, more) / c.bm25_ceiling(index, more))["a"]
    assert ratio_more == pytest.approx(ratio_held * 2 / 3)  # kafka weighs the mean of mysql and port


def test_tfidf_cosine_has_a_dimension_for_a_term_no_memory_holds() -> None:
    index = build({"a": "mysql port", "b": "redis cache"})
    cos = at(index, c.tfidf_cosine(index, c.query_terms(TOK.tokens("mysql port kafka")), smooth=False))
    idf = index.tfidf_idf(1)  # mysql and port are each in one memory
    expected = (2 * idf * idf) / (math.sqrt(2) * idf * math.sqrt(2 * idf * idf + idf * idf))
    assert cos["a"] == pytest.approx(expected)  # sqrt(2/3), not 1
    assert cos["b"] == 0.0
    less = at(
        index, c.tfidf_cosine(index, c.query_terms(TOK.tokens("mysql port kafka")), smooth=False, unheld=lambda t: 0.0)
    )
    assert less["a"] == pytest.approx(1.0)
