"""Sensitive memories (seed 000 section 7.4: "敏感记忆内容需要额外权限验证").

The one rule of this project, kept here:

- A memory is **sensitive** when its metadata says so on write (``metadata["sensitive"]`` is a
  category such as ``"health"``, or ``True``), or, when the metadata says nothing, when its topic,
  summary or content mention one of the categories below (health, relationships, finances; Chinese
  and English words). ``metadata["sensitive"] = False`` marks a memory as not sensitive, which
  overrides the words (a "bank" server name, say).
- A sensitive memory **reaches** a friend or a slot only when it belongs to that friend (its
  ``friend_id`` is the scope's; a shared profile item belongs to the user's own view, friend
  ``None``), when the user allowed it on write (``metadata["share_with"]``: a friend id, a list of
  them, or ``"*"`` / ``True`` for every friend), or when the caller passes an explicit permission
  (``allow_sensitive=True``; on the command line ``--allow-sensitive``). A model never grants it: no
  tool a model calls has such a flag, and a model cannot set metadata it does not write.

Every path that hands memories to a friend checks :func:`reaches` (the scope's visibility, then this
rule): command slots (``CommandExecutor``), the memory tools ``search_memories`` / ``get_memory_detail``
(``MemoryToolbox``: the recall agent's, the main agent's, the MCP server's), the recall block of the
``MemoryContext`` and seed 001's ``recall_memory`` output. A withheld memory is left out as if it had
not been found (a detail read says a permission is needed), never shown in part.

>>> sensitivity(content="上周确诊了糖尿病，在吃药")
'health'
>>> sensitivity(content="db host 10.0.0.5", metadata={"sensitive": "finances"})
'finances'
>>> sensitivity(content="my salary is 9k", metadata={"sensitive": False}) is None
True
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from ._placeholders import PlaceholderError

Category = Literal["health", "relationships", "finances"]

#: The metadata field that marks a memory on write.
SENSITIVE_FIELD = "sensitive"
#: The metadata field with the user's permission for a sensitive memory to reach other friends.
SHARE_FIELD = "share_with"

#: Words that make an unmarked memory sensitive, per category (Chinese words match as substrings,
#: English ones as whole words, case-insensitively).
RULES: dict[Category, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "health": (
        ("生病", "疾病", "病情", "病历", "看病", "医院", "医生", "诊断", "确诊", "吃药", "药物", "处方", "手术",
         "抑郁", "焦虑症", "心理咨询", "癌症", "怀孕", "流产", "体检报告", "血压", "糖尿病", "住院"),
        ("diagnosis", "diagnosed", "doctor", "hospital", "medication", "prescription", "therapy", "therapist",
         "depression", "anxiety", "cancer", "pregnant", "pregnancy", "surgery", "illness", "disease",
         "symptoms?", "hiv", "mental health", "diabetes"),
    ),
    "relationships": (
        ("离婚", "分手", "出轨", "恋爱", "男朋友", "女朋友", "男友", "女友", "前任", "约会", "婚姻", "暗恋", "相亲",
         "感情问题", "外遇"),
        ("divorce", "divorced", "break ?up", "broke up", "affair", "boyfriend", "girlfriend", "dating", "marriage",
         "crush", "ex-wife", "ex-husband", "cheated", "cheating"),
    ),
    "finances": (
        ("工资", "薪水", "薪资", "月薪", "年薪", "存款", "负债", "欠款", "借钱", "贷款", "房贷", "银行卡", "信用卡",
         "收入", "理财", "股票", "破产", "银行账户", "账户余额"),
        ("salary", "salaries", "debts?", "loans?", "mortgage", "bank account", "credit card", "income", "savings",
         "bankrupt", "bankruptcy", "net worth", "paycheck", "iban"),
    ),
}  # fmt: skip

_PATTERNS: dict[Category, re.Pattern[str]] = {
    category: re.compile(
        "|".join([*(re.escape(w) for w in zh), *(rf"\b{w}\b" for w in en)]),
        re.IGNORECASE,
    )
    for category, (zh, en) in RULES.items()
}


class SensitiveMemoryError(PlaceholderError):
    """A sensitive memory was about to reach a friend or a slot it does not belong to."""


def sensitivity(*, content: str, summary: str = "", metadata: Mapping[str, Any] | None = None) -> str | None:
    """The category that makes a memory sensitive, or ``None`` (see the module docs for the rule)."""
    marked = (metadata or {}).get(SENSITIVE_FIELD)
    if marked is False or (isinstance(marked, str) and marked.strip().lower() in ("", "false", "no", "none")):
        return None
    if marked is True:
        return "marked"
    if isinstance(marked, str):
        return marked.strip().lower()
    text = " ".join(str(part) for part in (((metadata or {}).get("topic") or ""), summary, content))
    for category, pattern in _PATTERNS.items():
        if pattern.search(text):
            return category
    return None


def record_sensitivity(record: Any) -> str | None:
    """:func:`sensitivity` of anything with ``content``, ``summary`` and ``metadata`` (a memory record)."""
    return sensitivity(content=record.content, summary=record.summary or "", metadata=record.metadata)


def shared_with(metadata: Mapping[str, Any] | None, friend_id: str | None) -> bool:
    """Whether the user allowed the memory with this metadata to reach ``friend_id``
    (``metadata["share_with"]`` names it, or is ``"*"`` or ``True``). Anything else is no permission.

    >>> shared_with({"share_with": ["mentor"]}, "mentor"), shared_with({"share_with": "*"}, "x")
    (True, True)
    >>> shared_with({"share_with": "mentor"}, "xiaozhu"), shared_with({"share_with": 1}, "1")
    (False, False)
    """
    allowed = (metadata or {}).get(SHARE_FIELD)
    if allowed is True or allowed == "*":
        return True
    if isinstance(allowed, str):
        allowed = [allowed]
    if not isinstance(allowed, list | tuple) or friend_id is None:
        return False
    return any(isinstance(a, str) and (a == "*" or a == friend_id) for a in allowed)


def may_reach(record: Any, *, friend_id: str | None, allow_sensitive: bool = False) -> bool:
    """Whether a memory may reach the friend ``friend_id`` (or a slot run for it): not sensitive, its
    own friend's, shared with that friend by the user, or explicitly allowed."""
    return (
        allow_sensitive
        or record.friend_id == friend_id
        or shared_with(record.metadata, friend_id)
        or record_sensitivity(record) is None
    )


def reaches(scope: Any, record: Any, *, allow_sensitive: bool = False) -> bool:
    """The check of every path that hands a memory to a friend: the scope sees it (``Scope``'s rule)
    and :func:`may_reach` lets it through to the scope's friend."""
    return scope.sees_record(record) and may_reach(record, friend_id=scope.friend_id, allow_sensitive=allow_sensitive)


def check_reach(record: Any, *, friend_id: str | None, allow_sensitive: bool = False) -> None:
    """Raise :class:`SensitiveMemoryError` (naming the key and the category) when :func:`may_reach`
    says no."""
    if may_reach(record, friend_id=friend_id, allow_sensitive=allow_sensitive):
        return
    owner = f"friend {record.friend_id!r}" if record.friend_id else "the user's shared profile"
    to = f"friend {friend_id!r}" if friend_id else "the user's own view"
    raise SensitiveMemoryError(
        f"memory {record.memory_key!r} is sensitive ({record_sensitivity(record)}) and belongs to {owner}, not "
        f"{to}: it reaches a slot only with explicit permission (allow_sensitive=True, or --allow-sensitive), "
        f"or when the user shares it with that friend (metadata {SHARE_FIELD!r})"
    )
