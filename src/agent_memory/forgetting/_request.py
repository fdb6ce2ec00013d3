"""A user's explicit request to forget something, in Chinese or English, and what it is about.

>>> forget_request("别再记着我前任的事了").subject
'我前任'
>>> forget_request("Please forget what I told you about my ex.").subject
'my ex'
>>> forget_request("我忘了带钥匙") is None, forget_request("don't forget my birthday") is None
(True, True)

A request is an order to the assistant, so its verb opens a clause (after polite words: 请, 麻烦你,
"please", "can you", "I want you to"): what the user forgot (我忘了带钥匙, "I forgot my keys"), what
someone else said (她说忘了他吧), a condition (如果你忘了…) and "don't forget" open with something
else. A question asks (你忘了我前任的事吗？, "did you forget…?") unless it is a polite request (你能忘掉…吗？,
"can you forget…?"). Quotations that hold a person are someone else's speech and are left out, as the
archiver's statement rules leave them out.

Verbs that only mean "forget (about)" here are taken alone (忘掉, 别再记着, 不要记住, "stop remembering",
"don't remember"); 忘了 / 忘记 / "forget" also tell of a lapse ("忘了带钥匙"), and 删掉 / "delete" of files,
so those need a sign that the thing is something the user told or the memory holds (关于, 的事, 说过,
记忆, "about", "what I told you", "memories"). The subject is what follows the verb (or precedes it in
把…忘了), without those signs: a pronoun alone ("forget it", 忘了吧) names nothing to forget.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from ..domain import ends_as_question
from ..formation import quotations_removed

CJK = re.compile(r"[\u4e00-\u9fff]")

#: Polite or framing words before a Chinese order (请, 麻烦你, 我希望你, 以后, 你能 ...).
_ZH_LEAD = (
    r"(?:请你?|麻烦你?|拜托你?|求你|帮我|你|我(?:希望|想|要)(?:你|让你)?|让你|以后|今后|从现在起|就|也|还是"
    r"|能不能|可不可以|能|可以|赶紧|快|再)*"
)
#: Verbs that mean "forget" here on their own.
_ZH_STRONG = (
    r"(?:忘掉|忘光|别再?记着|别再?记住|别再?记得|不要再?记着|不要再?记住|不要再?记得|不用再?记着|不用再?记住|别再?惦记)"
)
#: Verbs that also tell of a lapse or of files: they need a sign of something told or remembered.
_ZH_WEAK = r"(?:忘了|忘记|删掉|删了|删除|抹掉|抹去|清除|清掉)"
_ZH_ORDER = re.compile(rf"^\s*{_ZH_LEAD}\s*(?P<verb>{_ZH_STRONG}|{_ZH_WEAK})(?P<rest>.+)$")
_ZH_BA = re.compile(
    rf"^\s*{_ZH_LEAD}\s*把(?P<rest>.+?)(?P<verb>全部|都|统统|通通)?(?:给|从记忆里|从你的记忆里)?"
    r"(?:忘掉|忘了|忘记|删掉|删了|删除|抹掉|清除)"
)
_ZH_SIGN = re.compile(
    r"关于|有关|的事|这件事|那件事|那些事|的记忆|记忆|说过|告诉过?你|跟你说|和你说|对你说|提过|你知道的|你记得的|记住的"
)
#: A polite request put as a question (你能…吗, 可以…吗): still an order.
_ZH_POLITE = re.compile(r"^\s*(?:请你?|麻烦你?)?\s*(?:你)?(?:能不能|可不可以|能|可以|可否)")

_EN_LEAD = (
    r"(?:(?:please|pls|just|also|now|and|so|ok|okay|can you|could you|would you|will you|"
    r"i want you to|i would like you to|i need you to|i would like to ask you to)\s+)*"
)
_EN_STRONG = r"(?:stop remembering|quit remembering|do not remember|never remember|do not keep in mind|unlearn)"
_EN_WEAK = r"(?:forget(?: about)?|delete|erase|remove|wipe|clear)"
_EN_ORDER = re.compile(rf"^\s*{_EN_LEAD}(?P<verb>{_EN_STRONG}|{_EN_WEAK})\b(?P<rest>.+)$", re.I)
_EN_SIGN = re.compile(
    r"\b(?:about|told you|said|mentioned|memor(?:y|ies)|you know|you remember|you have on|that i)\b|^\s*(?:my|that)\b",
    re.I,
)
_EN_POLITE = re.compile(r"^\s*(?:please\s+)?(?:can|could|would|will)\s+you\b", re.I)
_EN_DELETE = re.compile(r"^(?:delete|erase|remove|wipe|clear)$", re.I)
_EN_DELETE_SIGN = re.compile(r"\b(?:about|told you|said|mentioned|memor(?:y|ies)|you know|you remember)\b", re.I)

# what the subject is said with, taken off its ends
_ZH_FRAME_HEAD = re.compile(
    r"^(?:掉|了|记|掉了)?(?:所有|全部|一切)?(?:我(?:之前|以前|刚才|曾经)?(?:跟|和|对|给|向)你(?:说|讲|提|聊)(?:过|起)?(?:的)?"
    r"|我(?:之前|以前|刚才|曾经)?告诉过?你的|你(?:知道|记得|记住)的|(?:所有|全部|一切)?(?:关于|有关)|那些|那段|这段)+"
)
_ZH_FRAME_TAIL = re.compile(
    r"(?:的(?:事情?|记忆|那些事|所有事|一切|内容|话|部分|信息)|(?:这|那)(?:件事|些事|个事)|的?相关(?:的)?(?:记忆|内容)?"
    r"|有关的(?:事|记忆|内容)?|(?:吧|了|啊|呀|哦|嘛|好吗|好不好|可以吗|行吗|吗|呢|全部|都|统统|掉))+$"
)
_EN_FRAME_HEAD = re.compile(
    r"^(?:(?:all|everything|anything|what|whatever|the things?|the stuff|the part|any memor(?:y|ies)|"
    r"all memor(?:y|ies)|memor(?:y|ies)|that|the fact that|you know|you remember|you have on|"
    r"i (?:told|said to|mentioned to) you|"
    r"i (?:told|said|mentioned)|i have (?:told|said|mentioned)|about|of|regarding|on|that i said|from memory|)\s+)+",
    re.I,
)
_EN_FRAME_TAIL = re.compile(
    r"(?:\s+(?:please|pls|ok|okay|now|anymore|any more|from now on|for me|thanks|thank you|forever|completely|"
    r"entirely|right away|at all))+$",
    re.I,
)
# the word table keeps several entries to a line (fmt: skip); one to a line it would fill a screen
_PRONOUNS = frozenset({"它", "他", "她", "这个", "那个", "这些", "那些", "这", "那", "一切", "所有", "全部", "都",
                       "it", "that", "this", "them", "those", "these", "everything", "all", "anything", "about it",
                       "him", "her", "me", "you", "what i said"})  # fmt: skip
#: At most this long a subject is searched for (a longer one is a sentence, not a thing).
MAX_SUBJECT_CHARS = 80

_SENTENCE = re.compile(r"[^。!?;\n]{1,2000}[。!?;\n]{0,8}")
_CLAUSE = re.compile(r"[,，、:]|\s-\s")
_ZH_QUESTION_TAIL = re.compile(r"(?:吗|么|嘛|没有|没)[\s。!?]*$")


@dataclass(frozen=True, slots=True)
class ForgetRequest:
    """An explicit request to forget: ``subject`` is what to forget, in the user's words; ``clause`` the
    part of the message that asked."""

    subject: str
    clause: str
    lang: str


def forget_request(text: str) -> ForgetRequest | None:
    """The request to forget that ``text`` (a user's message) makes, or ``None`` (see the module docs)."""
    if not isinstance(text, str) or not text.strip():
        return None
    outer = quotations_removed(text)
    for match in _SENTENCE.finditer(outer):
        sentence = match.group(0)
        question = ends_as_question(sentence) or bool(_ZH_QUESTION_TAIL.search(sentence))
        for clause in _CLAUSE.split(sentence.rstrip(" \n。.!?;")):
            found = _in_clause(clause.strip(), question=question)
            if found is not None:
                return found
    return None


def _in_clause(clause: str, *, question: bool) -> ForgetRequest | None:
    if not clause:
        return None
    if CJK.search(clause):
        if question and not _ZH_POLITE.search(clause):
            return None
        return _zh(clause)
    if question and not _EN_POLITE.search(clause):
        return None
    return _en(clause)


def _zh(clause: str) -> ForgetRequest | None:
    ba = _ZH_BA.search(clause)
    if ba is not None:
        rest, strong = ba.group("rest"), True  # 把…忘了 names the thing and orders it forgotten
    else:
        order = _ZH_ORDER.search(clause)
        if order is None:
            return None
        rest, strong = order.group("rest"), bool(re.fullmatch(_ZH_STRONG, order.group("verb")))
    if not strong and not _ZH_SIGN.search(rest):
        return None
    subject = _ZH_FRAME_TAIL.sub("", _ZH_FRAME_HEAD.sub("", rest.strip())).strip(" 的")
    return _request(subject, clause, "zh")


def _en(clause: str) -> ForgetRequest | None:
    order = _EN_ORDER.search(clause)
    if order is None:
        return None
    verb, rest = order.group("verb"), order.group("rest")
    if _EN_DELETE.match(verb):
        if not _EN_DELETE_SIGN.search(rest):
            return None  # "delete the file"
    elif not re.fullmatch(_EN_STRONG, verb, re.I) and not _EN_SIGN.search(rest) and not verb.lower().endswith("about"):
        return None  # "forget the keys" tells nothing told; "forget my ex" / "forget about X" do
    subject = _EN_FRAME_TAIL.sub("", _EN_FRAME_HEAD.sub("", rest.strip())).strip(" .,'\"")
    return _request(subject, clause, "en")


def names_nothing(subject: str) -> bool:
    """Whether ``subject`` names no thing to forget: empty, or a pronoun or "everything" alone ("it", 这个,
    所有, 一切)."""
    return not subject.strip() or subject.strip().lower() in _PRONOUNS


def _request(subject: str, clause: str, lang: str) -> ForgetRequest | None:
    subject = "".join(c for c in subject if unicodedata.category(c) != "Cc").strip()  # no hidden control
    if names_nothing(subject) or len(subject) > MAX_SUBJECT_CHARS:
        return None
    return ForgetRequest(subject=subject, clause=clause, lang=lang)
