"""Who may see a memory: the one gate (:func:`reach`) in front of everything handed to a friend or a slot.

Two rules make it, checked in this order:

1. **Scope** (``data_layer.Scope``): a scope sees only its user's memories; with a friend, that friend's
   and the user's shared ones (``friend_id`` null), never another friend's.
2. **Sensitivity**: a memory is **sensitive** when its metadata says so on write
   (``metadata["sensitive"]`` is a category such as ``"health"``, or ``True``), or, when the metadata says
   nothing, when its topic, summary or content mention one of the categories below (health,
   relationships, finances; Chinese and English words). ``metadata["sensitive"] = False`` marks a memory
   as not sensitive, which overrides the words (a "bank" server name, say). A sensitive memory **reaches**
   a friend or a slot only when it belongs to that friend (its ``friend_id`` is the scope's; a shared
   profile item belongs to the user's own view, friend ``None``), when the user allowed it on write
   (``metadata["share_with"]``: a friend id, a list of them, or ``"*"`` / ``True`` for every friend), or
   when the caller passes an explicit permission (``allow_sensitive=True``; on the command line
   ``--allow-sensitive``). A model never grants it: no tool a model calls has such a flag, and a model
   cannot set metadata it does not write.

Every path that hands memories on calls :func:`reach` and reads its verdict: command slots
(``CommandExecutor``: a withheld memory raises), the memory tools ``search_memories`` /
``get_memory_detail`` (``MemoryToolbox``: the recall agent's, the main agent's, the MCP server's: an
unseen memory is "not found", a withheld one "needs permission"), the MCP listings, the recall block of the
``MemoryContext`` and ``recall_memory``'s output (``reachable``, which reads the memories once more and
keeps those the gate lets through). A withheld memory is left out as if it had not been found, never shown
in part. The search engine and the SQL reads apply the scope alone (``Scope.sees_record``,
``Scope.memory_clause``): what they find still passes the gate before it is handed on.

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
from dataclasses import dataclass
from typing import Any, Literal

from data_layer import Scope

Category = Literal["health", "relationships", "finances"]

#: The metadata field that marks a memory on write.
SENSITIVE_FIELD = "sensitive"
#: The metadata field with the user's permission for a sensitive memory to reach other friends.
SHARE_FIELD = "share_with"

#: Words that make an unmarked memory sensitive, per category (Chinese words match as substrings,
#: English ones as whole words, case-insensitively).
# the word table keeps several entries to a line (fmt: skip); one to a line it would fill a screen
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


@dataclass(frozen=True, slots=True)
class Reach:
    """The gate's verdict on one memory for one scope. True when the memory may be handed on.

    ``seen``: the scope sees it (else it does not exist for the scope: "not found");
    :attr:`withheld`: the sensitivity category that keeps a seen memory from the scope's friend, or
    ``None``. The category is worked out only when asked for (and never for an unseen memory).
    """

    scope: Scope
    record: Any
    seen: bool
    allow_sensitive: bool = False

    @property
    def withheld(self) -> str | None:
        """The category that withholds the memory, ``None`` when it reaches (or is not seen at all)."""
        record, friend = self.record, self.scope.friend_id
        if not self.seen or self.allow_sensitive or record.friend_id == friend or shared_with(record.metadata, friend):
            return None
        return record_sensitivity(record)

    def __bool__(self) -> bool:
        return self.seen and self.withheld is None

    def refusal(self) -> str:
        """Why a withheld memory stays out, for an error a caller raises (names the key and the category)."""
        record, friend = self.record, self.scope.friend_id
        owner = f"friend {record.friend_id!r}" if record.friend_id else "the user's shared profile"
        to = f"friend {friend!r}" if friend else "the user's own view"
        return (
            f"memory {record.memory_key!r} is sensitive ({self.withheld}) and belongs to {owner}, not "
            f"{to}: it reaches a slot only with explicit permission (allow_sensitive=True, or --allow-sensitive), "
            f"or when the user shares it with that friend (metadata {SHARE_FIELD!r})"
        )


def reach(scope: Scope, record: Any, *, allow_sensitive: bool = False) -> Reach:
    """The one visibility gate: whether ``record`` (anything with ``user_id``, ``friend_id``, ``memory_key``,
    ``content``, ``summary`` and ``metadata``) may be handed to ``scope``'s friend (see the module docs).
    ``allow_sensitive`` is the runtime's explicit permission, never a model's.

    >>> from types import SimpleNamespace as Row
    >>> row = Row(user_id="u1", friend_id="a", memory_key="k", content="确诊了糖尿病", summary="", metadata={})
    >>> bool(reach(Scope.of("u1", "a"), row)), reach(Scope.of("u1", "b"), row).seen
    (True, False)
    >>> bool(reach(Scope.of("u1"), row)), reach(Scope.of("u1"), row).withheld
    (False, 'health')
    """
    return Reach(scope, record, scope.sees_record(record), allow_sensitive)
