"""Does a message need memory at all? The recall's intent analysis, offline.

Greetings and small talk ("你好", "哈哈", "thanks!") are answered without a search: recalling for
them costs time and risks putting unrelated memories in front of the model. Everything else (a
reference to the past, a preference question, a task) is searched.

>>> classify_intent("你好呀"), classify_intent("推荐个电影吧"), classify_intent("按之前的配置来")
('greeting', 'preference', 'past_reference')
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime, timedelta
from typing import Literal

from ..domain import QUESTION_MARK_CLASS, listed_in_full
from ..formation import QUESTION_ZH, TOPIC_CUES, topic_label
from ..text import fold, parse_time_expressions

Intent = Literal["greeting", "chitchat", "past_reference", "preference", "task"]

_GREETING = re.compile(
    r"^(你好|您好|嗨|哈喽|早上好|早安|早|中午好|下午好|晚上好|晚安|在吗|在不在"
    r"|hi|hello|hey|good (morning|afternoon|evening|night))"
    r"[呀啊哇吖嘛呢~～!！。.,，\s]*$",
    re.IGNORECASE,
)
_CHITCHAT = re.compile(
    r"^(哈+|呵+|嘿+|嗯+|哦+|噢+|好的?|好吧|行|可以|没事|谢谢|多谢|感谢|拜拜|再见|ok|okay|k|lol|haha+|thanks?|thank you|"
    r"bye|cool|nice|great|yes|no|yeah|yep|nope|sure)[呀啊哇吖嘛呢~～!！。.,，\s]*$",
    re.IGNORECASE,
)
_PAST = re.compile(
    r"之前|以前|上次|上回|刚才|那次|那个|那件|还记得|记得吗|说过|提过|聊过|原来"
    r"|\b(earlier|before|previous(ly)?|last time|remember|you said|i said|i told you|mentioned)\b",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"推荐|建议|喜欢|爱好|偏好|习惯|口味|适合我|我该|我应该|帮我选|有什么好|(吃|喝|玩|看|听|读|去|做|干)(点|些)?(什么|啥)|去哪"
    r"|\b(recommend|suggest|prefer|favou?rite|like|should i|what do i|any ideas"
    r"|what (to|can i) (eat|do|watch|read|play))\b",
    re.IGNORECASE,
)
#: A request for suggestions (what to do, eat, watch ...): the preference questions that depend on the
#: user's standing profile rather than on a past event ("What is her favourite book?" is not one).
_SUGGESTION = re.compile(
    r"推荐|建议|有什么好|适合我|帮我选|(吃|喝|玩|看|听|读|去|做|干)(点|些)?(什么|啥)|去哪"
    r"|\b(recommend\w*|suggest\w*|any ideas|what should i|where should i|what (to|can i) (eat|do|watch|read|play))\b",
    re.IGNORECASE,
)
#: A question: it asks about something rather than telling how the user is. The archiver's yes/no
#: question forms (吗, 是不是, A不A ...) plus question marks and question words; a question word before
#: 都/也 ("什么都不想做", "怎么都睡不着") or after 知道 ("不知道为什么") tells, it does not ask.
_KNOWING = re.compile(r"知道(是)?(为什么|怎么|什么)")
_QUESTION = re.compile(
    QUESTION_ZH.pattern
    + "|"
    + QUESTION_MARK_CLASS
    + r"|呢\s*[。.!！~～]*$|(?:什么|怎么|为什么|哪|谁|多少|几点|几号|要不要)(?![都也])"
    r"|^(what|when|where|who|whom|which|why|how|do|does|did|is|are|was|were|can|could|should|would|will|have|has)\b",
    re.IGNORECASE,
)
#: The longest span counted back from now that still means "the user's last days".
RECENT_DAYS = 14

#: The moment the spans of :func:`recent_days_told` and :func:`days_asked_about` are read at: a Sunday
#: evening at a month's end, when every span that runs up to now ("这周", "这个月", "this week") is whole.
#: Read at today's date, "这个月" on the 2nd of a month would last two days and tell of the last days;
#: what it names is a month, whatever the date (and the answer depends on the text alone).
_WHOLE_SPANS = datetime(2024, 3, 31, 23, 0, tzinfo=UTC)
_CJK = re.compile(r"[\u4e00-\u9fff]")
_TOPIC_CUES = {topic: re.compile(cues, re.IGNORECASE) for topic, cues in TOPIC_CUES.items()}


def classify_intent(text: str) -> Intent:
    """The message's intent (the first 500 characters are read)."""
    head = " ".join(str(text)[:500].split())
    if not head or _GREETING.match(head):
        return "greeting"
    if _CHITCHAT.match(head):
        return "chitchat"
    if _PAST.search(head):
        return "past_reference"
    if _PREFERENCE.search(head):
        return "preference"
    return "task"


def preference_topics(text: str) -> tuple[str, ...]:
    """The profile topics a request for suggestions is about, in the order of :data:`TOPIC_CUES` (none
    for any other message). What to do or eat depends on the user's standing interests or diet even
    when the request names none of them.

    >>> preference_topics("周末想放松一下，有什么推荐？"), preference_topics("晚饭吃什么好"), preference_topics("你好")
    (('interest',), ('diet',), ())
    """
    head = " ".join(str(text)[:500].split())
    if classify_intent(head) != "preference" or not _SUGGESTION.search(head):
        return ()
    return cue_topics(head)


def cue_topics(text: str) -> tuple[str, ...]:
    """The profile topics whose cues (:data:`TOPIC_CUES`) a text names, in the order of the table: what
    it is about, a statement or a question alike (the first 2,000 characters are read).

    >>> cue_topics("最近睡眠不好"), cue_topics("对了，我不吃辣"), cue_topics("我养了一只橘猫")
    (('schedule',), ('diet',), ())
    """
    head = str(text)[:2000]
    return tuple(topic for topic, cues in _TOPIC_CUES.items() if cues.search(head))


def topic_terms(text: str) -> str:
    """The labels of :func:`preference_topics` in the message's language ("兴趣", "interest"): the word
    every profile item of the topic starts with, so a search with it finds the user's items of the topic.

    >>> topic_terms("周末想放松一下，有什么推荐？"), topic_terms("Any ideas for dinner tonight?")
    ('兴趣', 'diet')
    """
    lang = "zh" if _CJK.search(text[:500]) else "en"
    return " ".join(topic_label(topic, lang) for topic in preference_topics(text))


def recent_days_told(text: str) -> str | None:
    """The time words of a message that tells how the user's last days went ("最近睡眠不好，有点焦虑",
    "这两天好累", "I've been so tired lately"), else ``None``.

    How someone is now is explained by what they said in the days before, in whatever words: "最近
    睡眠不好" and "这几天一直在熬夜" share none. The recall then reads those days (a search of the time
    words alone lists the memories of that time, see ``SearchQuery.time_alone``) besides searching the
    words. Only a statement counts, naming a span that runs up to now and lasts more than a day and at
    most :data:`RECENT_DAYS` days: "最近有什么好看的电影？" asks about films, "上周的会" names a closed
    week, "今天天气真好" is small talk about a day whose messages the chat window holds anyway,
    greetings and requests for suggestions are not about the user's days.

    >>> recent_days_told("最近睡眠不好，有点焦虑"), recent_days_told("I've been so tired lately")
    ('最近', 'lately')
    >>> recent_days_told("最近有什么新闻？"), recent_days_told("上周去爬山了"), recent_days_told("推荐个电影吧")
    (None, None, None)
    """
    head = " ".join(str(text)[:500].split())
    if classify_intent(head) not in ("task", "past_reference") or _QUESTION.search(_KNOWING.sub("", head)):
        return None
    for span in parse_time_expressions(head, now=_WHOLE_SPANS):
        if span.end >= _WHOLE_SPANS and timedelta(days=1) < span.end - span.start <= timedelta(days=RECENT_DAYS):
            return span.expression
    return None


#: Words that ask what happened and name nothing in particular ("我们上周聊了什么", "what did we talk about").
_WHAT_HAPPENED = re.compile(
    r"我们|咱们|咱|我|你|都|在|了|过|的|又|还|一起|聊天|聊|说|谈|讲|做|干|忙|发生|事情|事|经历|什么|啥|哪些|些"
    r"|怎么样|如何|吗|呢|吧|呀|啊"
    r"|\b(what|did|do|does|we|i|you|have|has|had|been|talk(ed)?|about|chat(ted)?|discuss(ed)?|say|said"
    r"|happen(ed)?|up|to|doing|done|busy|go|went|on|the|was|were|is|are)\b",
    re.IGNORECASE,
)


def days_asked_about(text: str) -> str | None:
    """The time words of a question that asks only what happened then ("我们上周聊了什么？", "我最近都在忙
    什么", "What did we talk about last week?"), else ``None``.

    Its other words name nothing to match: the answer is what was said in those days, so the recall
    reads them (as for :func:`recent_days_told`). A question that names something ("上周说的那个方案")
    is searched by its words; a span wider than ``agent_memory.domain.MAX_LISTED_DAYS`` days is too long to
    read this way.

    >>> days_asked_about("我们上周聊了什么？"), days_asked_about("What did we talk about last week?")
    ('上周', 'last week')
    >>> days_asked_about("上周说的那个方案呢？"), days_asked_about("去年发生了什么")
    (None, None)
    """
    return _days_asked(" ".join(str(text)[:500].split()))


@functools.lru_cache(maxsize=256)
def _days_asked(head: str) -> str | None:
    """:func:`days_asked_about` of a normalised text, kept: a planner asks at every step of one recall
    (it depends on the text alone, as :func:`days_to_read` explains)."""
    if classify_intent(head) in ("greeting", "chitchat"):
        return None
    spans = parse_time_expressions(head, now=_WHOLE_SPANS)
    if not spans or not listed_in_full(spans[0].end - spans[0].start):
        return None
    rest = fold(head)
    for span in spans:
        rest = rest.replace(span.expression, " ")
    return None if re.search(r"\w", _WHAT_HAPPENED.sub(" ", rest)) else spans[0].expression


def days_to_read(text: str) -> str | None:
    """The time words whose days a recall reads first: :func:`recent_days_told` or
    :func:`days_asked_about` (``None`` for any other message). The one rule both recalls follow; a
    planner asks at every step of one recall, so the answer is kept per text (it depends on the text
    alone: the spans are read at :data:`_WHOLE_SPANS` only to tell their length and whether they end now).
    """
    return _days_to_read(" ".join(str(text)[:500].split()))


@functools.lru_cache(maxsize=256)
def _days_to_read(head: str) -> str | None:
    return recent_days_told(head) or _days_asked(head)


def needs_memory(text: str) -> bool:
    """Whether recall should search for this message."""
    return classify_intent(text) not in ("greeting", "chitchat")
