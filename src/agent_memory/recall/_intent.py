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
    r"推荐|建议|喜欢|爱好|偏好|习惯|口味|适合我|我该|我应该|帮我选"
    r"|\b(recommend|suggest|prefer|favou?rite|like|should i|what do i)\b",
    re.IGNORECASE,
)


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


def needs_memory(text: str) -> bool:
    """Whether recall should search for this message."""
    return classify_intent(text) not in ("greeting", "chitchat")
