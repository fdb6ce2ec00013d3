"""Object-phrase helpers shared by the rule handlers in :mod:`._rules`.

Reading a regex match (named groups, negation), cleaning a Chinese or English object phrase down to its
subject, and splitting "科幻和悬疑" / "sci-fi and horror" into parts (a pronoun part points back to the
previous draft). Kept apart from the handlers so that each topic handler stays short and the phrase
rules live in one place.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from . import _topics as T
from ._topics import subject_key

if TYPE_CHECKING:
    from ._rules import Draft
    from ._statements import Polarity

_PRONOUN_OBJECTS = frozenset({"它", "这个", "那个", "it", "them", "that"})
_ZH_TAIL = re.compile(r"因为|所以|而且|然后|但是|的话|的时候|之后|以后|了|啦|呢|吗|吧|啊|呀|哦|哈|嘛|哟|耶|!")
_ZH_SPLIT = re.compile(r"和|跟|与|、|还有|以及|或者|或|及")
_EN_SPLIT = re.compile(r"\s(?:and|or)\s|&")
_EN_QUANTITY = re.compile(r"^(?:more|less|some|any|a lot of|lots of|much|too much) ", re.I)
_NEGATORS_EN = re.compile(r"\b(?:not|never|no longer|no)\b", re.I)


def _g(match: re.Match[str], name: str) -> str:
    return (match.groupdict().get(name) or "").strip()


def _negated(match: re.Match[str]) -> bool:
    if _g(match, "neg") or _g(match, "neg2"):
        return True
    return bool(_NEGATORS_EN.search(_g(match, "adv") + " " + _g(match, "num")))


def _pol(negative: bool) -> Polarity:
    return "negative" if negative else "positive"


def _clean_zh(obj: str) -> str:
    cut = _ZH_TAIL.search(obj)
    return (obj[: cut.start()] if cut else obj).strip(" 的")


def _clean_en(obj: str, limit: int = 5) -> str:
    words: list[str] = []
    for word in obj.strip(" '\"").split():
        bare = word.lower().strip("'\"")
        if bare in T.EN_STOP_WORDS and not (not words and bare in ("a", "an", "the")):
            break
        words.append(word.strip("'\""))
        if len(words) >= limit:
            break
    return " ".join(words)


_HEAD = re.compile(r"(?:类的|类|的)?(电影|影片|片子|小说|书|音乐|歌|游戏|运动|电视剧|剧|动漫|菜|食物|水果)$")


def _share_head(pieces: list[str]) -> list[str]:
    """ "科幻和悬疑类的电影": the last part's head noun belongs to every part (科幻电影, 悬疑电影)."""
    found = _HEAD.search(pieces[-1]) if len(pieces) > 1 and pieces[-1] else None
    if found is None:
        return pieces
    head = found.group(1)
    out = [p if not p or _HEAD.search(p) else p + head for p in pieces[:-1]]
    return [*out, pieces[-1][: found.start()] + head]


def _parts(obj: str, lang: str, previous: Draft | None) -> list[tuple[str, Draft | None]]:
    """Split "科幻和悬疑" / "sci-fi and horror" into parts; a pronoun part points back to ``previous``."""
    if lang == "zh":
        pieces = [_clean_zh(p) for p in _ZH_SPLIT.split(_clean_zh(obj))] if obj else [""]
        pieces = _share_head(pieces)
    else:
        pieces = [_clean_en(_EN_QUANTITY.sub("", p.strip())) for p in _EN_SPLIT.split(obj)]
    out: list[tuple[str, Draft | None]] = []
    for piece in pieces:
        key = subject_key(piece)
        if (key in _PRONOUN_OBJECTS or not key) and previous is not None and previous.topic in ("diet", "interest"):
            out.append((previous.subject, previous))
        elif (
            key and key not in T.NON_SUBJECTS and key.split()[0] not in T.NON_SUBJECTS and key[0] not in "你他她它这那"
        ):
            out.append((piece, None))
    return out
