"""Deterministic synthetic zh+en memory corpora for load and latency benchmarks.

:func:`synthetic_memories` is built from a few dozen phrases, so its queries find what they ask for;
its texts repeat the same pieces, which a tokenizer's caches answer after the first time.
:func:`varied_memories` is for write costs: texts that share few pieces, as real chat does.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta

from data_layer import PROFILE_TYPES, NewMemory

_ZH_SUBJECTS = [
    "数据库",
    "项目汇报",
    "旅行计划",
    "健身",
    "读书会",
    "咖啡",
    "科幻电影",
    "家庭聚餐",
    "搬家",
    "面试",
    "预算",
    "周报",
    "服务器",
    "部署",
    "论文",
    "音乐会",
    "马拉松",
    "体检",
    "装修",
    "猫粮",
]
_ZH_ACTIONS = ["讨论了", "决定", "计划", "提醒我", "记录了", "比较了", "完成了", "推迟了", "预订了", "担心"]
_ZH_DETAILS = [
    "下周三之前要准备好材料",
    "预算控制在五千元以内",
    "需要和同事确认时间",
    "地点改到了杭州",
    "更喜欢安静一点的地方",
    "第二版方案效果更好",
    "要提前一天提醒",
    "配置文件放在共享盘",
    "端口改成了 5432",
    "记得带上护照",
]
_EN_SUBJECTS = [
    "database migration",
    "quarterly report",
    "trip to Kyoto",
    "running plan",
    "book club",
    "coffee beans",
    "sci-fi movie night",
    "family dinner",
    "apartment move",
    "job interview",
    "monthly budget",
    "server outage",
    "deployment checklist",
    "research paper",
    "jazz concert",
    "half marathon",
]
_EN_ACTIONS = ["discussed", "decided on", "planned", "asked to remember", "compared", "finished", "postponed"]
_EN_DETAILS = [
    "before next Wednesday",
    "under a budget of 500 dollars",
    "with the platform team",
    "moved to Friday evening",
    "prefers the quieter option",
    "the second draft worked better",
    "needs a reminder the day before",
]
_TYPES = ["general", "event", "profile", "user_preference", "command_output"]


def synthetic_memories(
    count: int, *, seed: int = 7, start: datetime, friends: int = 3, key_prefix: str = "syn"
) -> Iterator[NewMemory]:
    """``count`` memories, about half Chinese and half English, spread over the year before ``start``."""
    rng = random.Random(seed)
    for i in range(count):
        if i % 2 == 0:
            subject = rng.choice(_ZH_SUBJECTS)
            summary = f"{rng.choice(_ZH_ACTIONS)}{subject}"
            content = f"用户{summary}，{rng.choice(_ZH_DETAILS)}。另外{rng.choice(_ZH_DETAILS)}。（记录 {i}）"
        else:
            subject = rng.choice(_EN_SUBJECTS)
            summary = f"{rng.choice(_EN_ACTIONS)} the {subject}"
            content = f"The user {summary}, {rng.choice(_EN_DETAILS)}; also {rng.choice(_EN_DETAILS)} (note {i})."
        yield _memory(rng, f"{key_prefix}-{i:07d}", summary, content, start=start, friends=friends)


def _memory(rng: random.Random, key: str, summary: str, content: str, *, start: datetime, friends: int) -> NewMemory:
    """A memory of a drawn type (a friend's unless a profile type) and time in the year before ``start``."""
    memory_type = rng.choice(_TYPES)
    friend = None if memory_type in PROFILE_TYPES else f"friend-{rng.randrange(friends)}"
    return NewMemory(
        memory_key=key,
        content=content,
        summary=summary,
        memory_type=memory_type,
        friend_id=friend,
        created_at=start - timedelta(minutes=rng.randrange(365 * 24 * 60)),
    )


def synthetic_queries(count: int, *, seed: int = 11) -> list[str]:
    """Search queries over the same vocabulary, mixed Chinese and English."""
    rng = random.Random(seed)
    queries = []
    for i in range(count):
        if i % 2 == 0:
            queries.append(f"之前{rng.choice(_ZH_ACTIONS)}的{rng.choice(_ZH_SUBJECTS)}")
        else:
            queries.append(f"what did we say about the {rng.choice(_EN_SUBJECTS)}")
    return queries


#: Parts of speech of jieba's dictionary drawn for the varied Chinese texts, and the least frequency
#: a word needs to be drawn (rarer words are mostly names and terms no chat would hold).
_ZH_PARTS = ("n", "v", "a", "nr", "ns", "t", "d", "vn")
_ZH_MIN_FREQUENCY = 50
_ZH_PATTERNS = (
    "{nr}{t}在{ns}{v}了{a}的{n}，{d}{v}{n}。",
    "{t}和{nr}{v}{vn}，觉得{n}{a}，下次{v}{n}。",
    "{nr}说{ns}的{n}{d}{a}，我们{v}{n}和{n}。",
    "我{d}{v}{n}，{t}要{v}{vn}，{n}放在{ns}。",
)


@functools.cache
def _zh_words() -> dict[str, tuple[tuple[str, ...], tuple[int, ...]]]:
    """jieba's dictionary words by part of speech, with their frequencies (the draw's weights)."""
    import jieba

    words: dict[str, tuple[list[str], list[int]]] = {part: ([], []) for part in _ZH_PARTS}
    with jieba.get_dict_file() as fh:
        for line in fh:
            word, frequency, part = line.decode("utf-8").split()
            if part in words and int(frequency) >= _ZH_MIN_FREQUENCY:
                words[part][0].append(word)
                words[part][1].append(int(frequency))
    return {part: (tuple(w), tuple(f)) for part, (w, f) in words.items()}


@functools.cache
def _en_sentences() -> tuple[str, ...]:
    """Plain English sentences of CPython's own documentation (``pydoc_data``, in every install)."""
    import pydoc_data.topics

    text = re.sub(r"\s+", " ", " ".join(pydoc_data.topics.topics.values()))
    found = re.findall(r"(?<=[.] )[A-Z][a-z][^.]{30,200}[a-z]\.", text)
    return tuple(sorted({s for s in found if not re.search(r"[\"()\[\]{}=_*<>|\\]", s)}))


def _zh_text(rng: random.Random, pattern: str) -> str:
    """``pattern`` with a word drawn for each ``{part}`` in it."""
    words = _zh_words()
    return re.sub(r"\{(\w+)\}", lambda m: rng.choices(*words[m.group(1)])[0], pattern)


def varied_memories(
    count: int, *, seed: int = 7, start: datetime, friends: int = 3, key_prefix: str = "var"
) -> Iterator[NewMemory]:
    """``count`` memories of varied text, half Chinese and half English, spread over the year before
    ``start``: Chinese sentences put together from jieba's dictionary words by part of speech (drawn by
    their frequency), English ones from two sentences of CPython's documentation. Few texts share a
    piece, so a tokenizer's caches help no more than with real chat (types and friends as
    :func:`synthetic_memories`)."""
    rng = random.Random(seed)
    english: Sequence[str] = _en_sentences()
    for i in range(count):
        if i % 2 == 0:
            summary = _zh_text(rng, rng.choice(_ZH_PATTERNS)).rstrip("。")
            content = f"{summary}。{_zh_text(rng, rng.choice(_ZH_PATTERNS))}"
        else:
            first, second = rng.sample(english, 2)
            summary = first.rstrip(".")
            content = f"The user noted: {first} {second}"
        yield _memory(rng, f"{key_prefix}-{i:07d}", summary, content, start=start, friends=friends)
