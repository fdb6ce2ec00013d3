"""A user's explicit request to undo a forgetting just made, in Chinese or English.

Only a whole message that asks for nothing else counts, and nothing put as a question. Two kinds:

- one that names the forgetting it undoes ("撤销刚才的遗忘", "取消遗忘", "undo the forgetting", "unforget
  it"): it undoes the newest forgetting of the conversation, whenever it comes;
- one that only points at it ("别忘了刚才那个", "还是记着吧", "undo that", "actually, remember it"): it
  says nothing of what it undoes, so it counts only as the user's next message after the request to
  forget (the caller checks that).

"别忘了提醒我开会", "remember that I'm vegetarian" or "undo that commit" ask for something else and are
no undo.

>>> undo_request("撤销刚才的遗忘").names_forgetting, undo_request("actually, remember it").names_forgetting
(True, False)
>>> undo_request("别忘了提醒我明天开会") is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Words before the undo that say the user changed their mind (等等, 算了, "actually", "wait" ...).
_ZH_LEAD = (
    r"(?:(?:哦|噢|啊|呃|嗯|哎|诶|等等|等一下|等下|不对|不不|算了|其实|好吧|那|那个|我想了想|想了想)"
    r"[，,。！!\s~]*)*"
)
_ZH_POLITE = r"(?:请你?|麻烦你?|你|帮我|还是)*"
_ZH_NAMES = re.compile(
    rf"^{_ZH_LEAD}{_ZH_POLITE}(?:撤销|撤回|取消|恢复)(?:一下)?(?:刚才|刚刚|上一次|上次|那次|这次)?(?:的|那个|那次)?"
    r"(?:遗忘|忘记|忘掉的|删除|删掉的)(?:的)?(?:操作|记忆|内容|东西|那些)?(?:吧|了|啊|呀)*$"
)
_ZH_POINTS = (
    re.compile(
        rf"^{_ZH_LEAD}{_ZH_POLITE}(?:别|不要|不用|先别)(?:忘|忘了|忘掉|忘记|删|删了|删掉)(?:了)?(?:吧)?"
        r"(?:刚才|刚刚)?(?:的)?(?:那个|那件事|这个|这件事|它|那些)?(?:吧|了|啊|呀)*$"
    ),
    re.compile(rf"^{_ZH_LEAD}{_ZH_POLITE}(?:记着|记住|留着|保留)(?:它|那个|这个|吧|啊|呀)*$"),
    re.compile(rf"^{_ZH_LEAD}{_ZH_POLITE}(?:撤销|撤回|恢复)(?:一下)?(?:吧|了吧)?$"),
)
_EN_LEAD = (
    r"(?:(?:actually|wait|oh|no|hmm|hm|sorry|ok|okay|on second thought|never mind|nevermind|hold on|um|uh|"
    r"well|please|pls|just|and|so)[\s,.!-]*)*"
)
_EN_NAMES = re.compile(
    rf"^{_EN_LEAD}(?:(?:undo|reverse|revert|cancel)\s+(?:the\s+|that\s+|this\s+|my\s+|your\s+)?(?:last\s+)?"
    r"forget(?:ting)?(?:\s+request)?|unforget(?:\s+(?:it|that|this))?)$",
    re.I,
)
_EN_POINTS = re.compile(
    rf"^{_EN_LEAD}(?:(?:undo|reverse|revert|cancel)(?:\s+(?:that|it|this))?|(?:do not|don't|dont)\s+(?:forget|delete|"
    r"erase)\s+(?:it|that|this)|(?:remember|keep)\s+(?:it|that|this)|bring\s+it\s+back|restore\s+(?:it|that))"
    r"(?:\s+after all)?(?:\s+please)?$",
    re.I,
)
#: Taken off the end before matching (not "?" or "？": a question asks, it orders nothing).
_TAIL = " \t\n。.!！~～"


@dataclass(frozen=True, slots=True)
class UndoRequest:
    """An explicit request to undo a forgetting: ``names_forgetting`` when it says so ("撤销刚才的遗忘"),
    else it only points at what was just done ("undo that") and counts only right after it."""

    text: str
    names_forgetting: bool


def undo_request(text: str) -> UndoRequest | None:
    """The undo of a forgetting that ``text`` (a user's whole message) asks for, or ``None`` (see the
    module docs)."""
    if not isinstance(text, str) or len(text) > 200:
        return None
    said = text.replace("’", "'").strip().rstrip(_TAIL).strip()
    if not said:
        return None
    if _ZH_NAMES.match(said) or _EN_NAMES.match(said):
        return UndoRequest(text=said, names_forgetting=True)
    if any(p.match(said) for p in _ZH_POINTS) or _EN_POINTS.match(said):
        return UndoRequest(text=said, names_forgetting=False)
    return None
