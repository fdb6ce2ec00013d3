"""The search tokenizer's words come from the same jieba cut as the keyword extractor's: the search words
made from a cached cut are jieba's own ``cut_for_search`` of the piece, word for word and in order."""

from __future__ import annotations

import jieba
import pytest

from agent_memory.text import Tokenizer
from agent_memory.text._tokenize import _cut, _cut_for_search, clear_token_caches, ensure_jieba

PIECES = [
    "小明硕士毕业于中国科学院计算所后在日本京都大学深造",
    "中华人民共和国成立了",
    "北京大学生物系的研究生",
    "最近睡眠不好有点焦虑",
    "我不吃辣",
    "无辣不欢",
    "下周五要汇报季度项目进展",
    "自然语言处理和机器学习",
    "喝",
    "",
]


@pytest.mark.parametrize("piece", PIECES)
def test_the_search_words_are_jiebas_cut_for_search(piece: str) -> None:
    ensure_jieba()
    clear_token_caches()
    assert list(_cut_for_search(piece)) == list(jieba.cut_for_search(piece))
    assert list(_cut(piece)) == list(jieba.cut(piece, HMM=True))


def test_long_words_give_their_dictionary_parts_before_them() -> None:
    ensure_jieba()
    words = list(_cut_for_search("中华人民共和国成立了"))
    whole = words.index("中华人民共和国")
    assert {"中华", "华人", "人民", "共和", "共和国"} <= set(words[:whole])


def test_a_memory_read_by_both_tokenizers_gives_what_each_gives_alone() -> None:
    text = "小明硕士毕业于中国科学院计算所，后在日本京都大学深造。最近睡眠不好。"
    index, keywords = Tokenizer(), Tokenizer(stem=False, search_mode=False)
    clear_token_caches()
    alone_index = index.index_tokens(text)
    clear_token_caches()
    alone_keywords = keywords.tokens(text)
    clear_token_caches()
    both = (keywords.tokens(text), index.index_tokens(text))
    assert both == (alone_keywords, alone_index)
    assert "中国科学院" in alone_index and "计算所" in alone_keywords
