"""Does a message need memory at all? Seed 002's intent analysis, offline.

Greetings and small talk ("你好", "哈哈", "thanks!") are answered without a search: recalling for
them costs time and risks putting unrelated memories in front of the model. Everything else (a
reference to the past, a preference question, a task) is searched.

>>> classify_intent("你好呀"), classify_intent("推荐个电影吧"), classify_intent("按之前的配置来")
('greeting', 'preference', 'past_reference')
"""

from __future__ import annotations

import re
from typing import Literal

from ..archiving._topics import TOPIC_CUES, topic_label

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
    return tuple(topic for topic, cues in _TOPIC_CUES.items() if cues.search(head))


def topic_terms(text: str) -> str:
    """The labels of :func:`preference_topics` in the message's language ("兴趣", "interest"): the word
    every profile item of the topic starts with, so a search with it finds the user's items of the topic.

    >>> topic_terms("周末想放松一下，有什么推荐？"), topic_terms("Any ideas for dinner tonight?")
    ('兴趣', 'diet')
    """
    lang = "zh" if _CJK.search(text[:500]) else "en"
    return " ".join(topic_label(topic, lang) for topic in preference_topics(text))


def needs_memory(text: str) -> bool:
    """Whether recall should search for this message."""
    return classify_intent(text) not in ("greeting", "chitchat")
