"""How much a word says in general use: the weight a query word carries beside its rarity among the
user's own memories.

>>> informativeness("今天") < informativeness("电影") < informativeness("魔术") <= 1.0
True
>>> informativeness("postgr"), informativeness("跨年")
(1.0, 1.0)

A search weighs each query word by its idf over the user's memories. With a few dozen memories that
cannot tell an everyday word from a topic word: 今天 and 魔术 each occur in one memory and get the same
idf, so "今天主子胃口好多了" matched "今天和爸妈视频……" as strongly as a memory about the cat. jieba's
word counts (60 million words of general Chinese, already loaded to segment the text) know that 今天
says little: it is used 16,000 times, 魔术 170 times. The weight is the word's surprisal in those
counts, ``ln(total / count)``, relative to that of a word used :data:`RARE_WORD_FREQ` times, capped at 1:

======  =======  ============
word    count    weight
======  =======  ============
工作    66,367   0.51
今天    15,960   0.62
电影     4,918   0.71
期待     1,218   0.81
魔术       170   0.96
香菜        34   1
======  =======  ============

A word jieba does not count (跨年, a name) is rare: weight 1. Words without Chinese characters keep 1
too: there are no general counts for them here, and English stop words are dropped before searching.

Measured on the allusion set, MemDaily and LoCoMo (figures in ``benchmarks/zh_allusion/README.md``):
the weight is linear in the surprisal; its square lowered the allusion set's dev half.

:func:`unheld_weight` says how much a query word that no memory holds counts against a memory's share
of the message: a word naming a thing (主子, 胃口) says the message is about something the memories do
not know; a word saying what is done, when or how (准备, 越来越, 今天) leaves the thing it is said of,
which a memory may well be about ("汇报越来越近了，该怎么准备？" is about the report).
"""

from __future__ import annotations

import math
import re
from functools import cache
from pathlib import Path

import jieba

from ._derived import derived_table
from ._normalize import has_cjk
from ._tokenize import RARE_WORD_FREQ, ensure_jieba


def informativeness(term: str) -> float:
    """The general weight of a search term in 0-1 (1 for a rare, unknown or non-Chinese word).

    ``term`` is a folded search term (:meth:`~agent_memory.text.Tokenizer.tokens`).
    """
    if not isinstance(term, str):
        raise TypeError(f"informativeness() takes a search term (str), not {type(term).__name__}")
    if not has_cjk(term):
        return 1.0
    ensure_jieba()
    count = jieba.dt.FREQ.get(term, 0)
    if count <= RARE_WORD_FREQ:
        return 1.0
    total = jieba.dt.total
    return min(1.0, math.log(total / count) / math.log(total / RARE_WORD_FREQ))


#: What a query word no memory holds weighs when it is not a content word (:func:`unheld_weight`).
PREDICATE_WEIGHT = 0.3
#: jieba's part-of-speech tags of the words that say what is done, when, how much or how (verbs, adverbs,
#: time words, numerals and measure words, pronouns, locatives, prepositions, conjunctions, particles,
#: interjections, state and distinguishing words ...). Nouns, place words, adjectives, idioms and words
#: jieba does not tag are content words.
PREDICATE_TAGS = (
    "v",
    "vg",
    "vd",
    "vi",
    "vq",
    "d",
    "dg",
    "ad",
    "df",
    "t",
    "tg",
    "m",
    "mq",
    "mg",
    "q",
    "r",
    "rr",
    "rz",
    "rg",
    "f",
    "p",
    "c",
    "u",
    "uj",
    "ul",
    "ud",
    "uz",
    "ug",
    "uv",
    "y",
    "e",
    "o",
    "z",
    "zg",
    "b",
    "k",
    "h",
    "g",
)
_PREDICATE_LINE = re.compile(rf"^(\S+) \d+ (?:{'|'.join(PREDICATE_TAGS)})$", re.MULTILINE)


_DICTIONARY = Path(jieba.__file__).parent / "dict.txt"


@cache
def _predicate_words() -> frozenset[str]:
    """The words of jieba's dictionary (shipped with the package) tagged with a predicate tag: about
    65,000 of 349,000, found by one scan of the file (about 0.06 s, then read back by later processes
    in a few milliseconds: :func:`derived_table`; 7 MB kept)."""
    return derived_table(
        "predicate-words", sources=[_DICTIONARY], code=Path(__file__), build=_scan_predicates, adopt=_word_set
    )


def _scan_predicates() -> frozenset[str]:
    return frozenset(_PREDICATE_LINE.findall(_DICTIONARY.read_bytes().decode("utf-8")))


def _word_set(raw: object) -> frozenset[str] | None:
    if isinstance(raw, frozenset) and raw and all(type(w) is str for w in raw):
        return raw
    return None


def content_word(term: str) -> bool:
    """Whether a search term names a thing or a quality (a noun, place word, adjective or idiom, a word
    jieba does not know, any word without Chinese characters) rather than saying what is done, when or
    how (a verb, adverb, time word, numeral ...: :data:`PREDICATE_TAGS`).

    >>> content_word("胃口"), content_word("海边"), content_word("今天"), content_word("准备")
    (True, True, False, False)
    """
    if not isinstance(term, str):
        raise TypeError(f"content_word() takes a search term (str), not {type(term).__name__}")
    return not has_cjk(term) or term not in _predicate_words()


def unheld_weight(term: str) -> float:
    """How much a query term no memory holds counts, in 0-1: 1 for a content word (a noun, adjective or
    idiom, a word jieba does not know, any word without Chinese characters), :data:`PREDICATE_WEIGHT`
    for a verb, adverb, time word, numeral or other word that says what is done, when or how.

    >>> unheld_weight("胃口"), unheld_weight("准备"), unheld_weight("今天"), unheld_weight("visa")
    (1.0, 0.3, 0.3, 1.0)
    """
    if not isinstance(term, str):
        raise TypeError(f"unheld_weight() takes a search term (str), not {type(term).__name__}")
    return 1.0 if content_word(term) else PREDICATE_WEIGHT
