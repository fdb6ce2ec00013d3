"""The recall block the main model reads: a header line and one ``[memory:key:summary]`` slot per memory.

>>> block = recall_block([item], summary="找到 1 条", profile_top_k=5, event_top_k=5, token_budget=9)  # doctest: +SKIP
>>> print(block.text)  # doctest: +SKIP
[记忆召回] 找到 1 条相关记忆
[memory:db-config-001:MySQL 主从配置: host localhost, port 3306]

Memory text and a model's summary are data, never structure: neutralised (no chat-template token,
no hidden control, see ``agent_memory.text.neutralize``), brackets become parentheses and line
breaks spaces, so no memory can close a slot, open another one or start a second header line.

:func:`reachable` is the gate in front of the block: each memory is read once more and must pass
the check of every path to a friend (``agent_memory.domain.reach``: the scope sees it,
and a sensitive memory of another friend or of the shared profile needs the user's permission, seed
000 section 7.4). A withheld memory gets no slot, not even its key.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from data_layer import PROFILE_TYPES, AgentFusionDataLayer, MemoryRecallSettings, MemoryRecord, Scope

from ..recall import reachable, without_repeats
from ..text import neutralize
from ..tools import MemorySearchResultItem, RecallLedger

SLOT_HEADER = "[记忆召回]"
_FLATTEN = str.maketrans({"[": "(", "]": ")", "【": "(", "】": ")"})


#: Chinese, Japanese and Korean script, their punctuation and full-width forms: small models' tokenizers
#: give each such character a token or more.
_CJK_RUN = re.compile(
    "[\u1100-\u11ff\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003134f]+"
)


def estimate_tokens(text: str) -> int:
    """A cheap, conservative token estimate: each Chinese, Japanese or Korean character (punctuation and
    full-width forms too) counts one, other text one per four characters.

    >>> estimate_tokens("我喜欢 sci-fi")
    5
    """
    cjk = sum(map(len, _CJK_RUN.findall(text)))  # runs, not characters: counted in C
    return cjk + (len(text) - cjk + 3) // 4


def flatten(text: str) -> str:
    """Text made safe for one line of the block: :func:`~agent_memory.text.neutralize` (template
    tokens and hidden controls), then brackets to parentheses and all white space to one space."""
    return " ".join(neutralize(str(text)).translate(_FLATTEN).split())


def slot(key: str, summary: str) -> str:
    """One slot line, ``[memory:key:summary]`` (see the module docs for the escaping)."""
    clean = flatten(summary)
    if clean in ("full", "summary") or clean.startswith("meta:"):
        clean = f"“{clean}”"  # would read as a placeholder format
    return f"[memory:{flatten(key)}:{clean}]"


@dataclass(frozen=True, slots=True)
class RecallBlock:
    """The block's text ("" when nothing is given) and the keys it holds, in order."""

    text: str
    keys: tuple[str, ...]


def recall_block(
    items: Sequence[MemorySearchResultItem],
    *,
    summary: str,
    profile_top_k: int,
    event_top_k: int,
    token_budget: int,
) -> RecallBlock:
    """At most ``profile_top_k`` profiles and ``event_top_k`` other memories, in the given order,
    cut to ``token_budget`` tokens (header included)."""
    head = f"{SLOT_HEADER} {flatten(summary)[:200]}".rstrip()
    lines, keys = [head], []
    budget = token_budget - estimate_tokens(head)
    profiles = others = 0
    for item in items:
        is_profile = (item.memory_type or "") in PROFILE_TYPES
        if (profiles >= profile_top_k) if is_profile else (others >= event_top_k):
            continue
        line = slot(item.memory_key, item.summary or item.content_preview)
        cost = estimate_tokens(line)
        if cost > budget:
            break
        budget -= cost
        lines.append(line)
        keys.append(item.memory_key)
        profiles += is_profile
        others += not is_profile
    return RecallBlock("\n".join(lines) if keys else "", tuple(keys))


def ledger_block(
    pairs: Sequence[tuple[MemorySearchResultItem, MemoryRecord]],
    *,
    ledger: RecallLedger,
    settings: MemoryRecallSettings,
    token_budget: int,
) -> tuple[RecallBlock, list[MemoryRecord]]:
    """The block a recall gives the main model, and the memories of its slots as read: ``pairs`` are the
    ledger's relevant memories (score >= the user's threshold) that passed :func:`reachable`, each
    memory once (as ``recall_memory`` lists them), cut to the user's top-k and ``token_budget``. The
    header is the handoff's summary, or a count when the model's work gave none."""
    summary = ledger.handoff.search_summary if ledger.handoff else ""
    distinct = {id(r) for r in without_repeats([record for _, record in pairs])}
    pairs = [(item, record) for item, record in pairs if id(record) in distinct]
    if not summary or ledger.handoff_problem or ledger.from_fallback(settings.similarity_threshold):
        summary = f"找到 {len(pairs)} 条相关记忆。"
    block = recall_block(
        [item for item, _ in pairs],
        summary=summary,
        profile_top_k=settings.profile_top_k,
        event_top_k=settings.event_top_k,
        token_budget=token_budget,
    )
    shown = set(block.keys)
    return block, [record for item, record in pairs if item.memory_key in shown]


async def reachable_items(
    layer: AgentFusionDataLayer,
    scope: Scope,
    items: Sequence[MemorySearchResultItem],
    *,
    allow_sensitive: bool = False,
) -> list[MemorySearchResultItem]:
    """The ``items`` of :func:`reachable` without their memories."""
    return [item for item, _ in await reachable(layer, scope, items, allow_sensitive=allow_sensitive)]
